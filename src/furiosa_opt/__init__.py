"""furiosa-opt: kernels for FuriosaAI's RNGD NPU, written in Python.

`from furiosa_opt import *` brings the kernel language: axes and mappings, scalar types, tensors,
contexts, `@device` and `launch`, and the Vector Engine's op vocabulary. `__all__` below is the public
contract (tests pin it).
"""

from furiosa_opt.diagnostics import FuriosaOptError, VerifyError
from furiosa_opt.dtypes import bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i8, i16, i32, u8
from furiosa_opt.lang.context import Context, DmaContext, TuContext
from furiosa_opt.lang.device import Device, DeviceFunction, device, launch
from furiosa_opt.lang.tensors import (
    DmTensor,
    DmTensorView,
    DmTensorViewMut,
    HbmTensor,
    HbmTensorView,
    HbmTensorViewMut,
    HostTensor,
    TensorType,
    TrfTensor,
    VrfTensor,
)
from furiosa_opt.mapping import Axis, Cell, Mapping, MappingError, MappingSyntaxError, PadKind, axes, m
from furiosa_opt.vector.ops import (
    BinaryArgMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    Cmp,
    FpBinaryOp,
    FpMulAlu,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    LaneMode,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TagMode,
)

__version__ = "0.1.0"

__all__ = [
    "Axis",
    "BinaryArgMode",
    "Cell",
    "ClipBinaryOpF32",
    "ClipBinaryOpI32",
    "Cmp",
    "Context",
    "Device",
    "DeviceFunction",
    "DmTensor",
    "DmTensorView",
    "DmTensorViewMut",
    "DmaContext",
    "FpBinaryOp",
    "FpMulAlu",
    "FpTernaryOp",
    "FpUnaryOp",
    "FuriosaOptError",
    "FxpBinaryOp",
    "HbmTensor",
    "HbmTensorView",
    "HbmTensorViewMut",
    "HostTensor",
    "LaneMode",
    "LogicBinaryOpF32",
    "LogicBinaryOpI32",
    "Mapping",
    "MappingError",
    "MappingSyntaxError",
    "PadKind",
    "TagMode",
    "TensorType",
    "TrfTensor",
    "TuContext",
    "VerifyError",
    "VrfTensor",
    "axes",
    "bf16",
    "device",
    "f4e2m1",
    "f8e4m3",
    "f8e5m2",
    "f32",
    "i4",
    "i8",
    "i16",
    "i32",
    "launch",
    "m",
    "u8",
]
