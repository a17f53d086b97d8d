"""furiosa-opt: kernels for FuriosaAI's RNGD NPU, written in Python.

`from furiosa_opt import *` brings the kernel language: axes and mappings, scalar types, tensors,
contexts, `@device` and `launch`, and the Vector Engine's op vocabulary. `__all__` below is the public
contract (tests pin it); the names are imported on first use.
"""

import importlib
from typing import Any

_MODULES = {  # the module that defines each public name; imported on first use
    "furiosa_opt.diagnostics": "FuriosaOptError VerifyError",
    "furiosa_opt.dtypes": "Opt bf16 f32 f4e2m1 f8e4m3 f8e5m2 i16 i32 i4 i5 i8 i9 u8",
    "furiosa_opt.lang.context": "DmaContext",
    "furiosa_opt.lang.device": "Context Device DeviceFunction device launch",
    "furiosa_opt.lang.loops": "Scalar device_range select when",
    "furiosa_opt.lang.pair": "VectorPair",
    "furiosa_opt.lang.stream": "TuContext",
    "furiosa_opt.lang.tensors.base": "TensorType",
    "furiosa_opt.lang.tensors.host": "HostTensor",
    "furiosa_opt.lang.tensors.memory": "DmTensor HbmTensor",
    "furiosa_opt.lang.tensors.registers": "TrfTensor VrfTensor",
    "furiosa_opt.lang.tensors.views": "DmTensorView DmTensorViewMut HbmTensorView HbmTensorViewMut",
    "furiosa_opt.mapping": "Axis Cell Mapping MappingError MappingSyntaxError PadKind axes m",
    "furiosa_opt.switch": "SwitchConfig",
    "furiosa_opt.vector.ops": "BinaryArgMode BitReq Branched ClipBinaryOpF32 ClipBinaryOpI32 Cmp FpBinaryOp "
    "FpDivBinaryOp FpMulAlu FpTernaryOp FpUnaryOp FxpBinaryOp InterSliceReduceOpF32 InterSliceReduceOpI32 "
    "IntraSliceReduceOpF32 IntraSliceReduceOpI32 LaneMode LogicBinaryOpF32 LogicBinaryOpI32 Stash TagGuard TagMode "
    "TernaryArgMode",
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    """Import the kernel language lazily, so tools that only read artifacts (the simulator, the cache,
    schedule analysis) do not load it."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'furiosa_opt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    if _device_backend():  # its runtime registers with the language (which never imports it)
        importlib.import_module("furiosa_opt.runtime")
    return value


def _device_backend() -> bool:
    from furiosa_opt import env

    try:
        return env.backend() != "cpu"
    except env.EnvError:  # launch reports it, with the kernel's name
        return False


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__version__ = "0.1.0"

__all__ = sorted(_EXPORTS, key=lambda n: (n[0].islower(), n))  # every exported name, classes first
