"""Kernels as PyTorch operators: `op(kernel)` makes a `@device` kernel a `torch.library` custom operator.

A model written in PyTorch calls the kernel on torch tensors, as it would a Triton kernel: the operator's
CPU implementation uploads its inputs (`HostTensor.from_dlpack`, no copy where the layout allows it),
launches the kernel on the active backend (the CPU backend, or the simulator under
`FURIOSA_OPT_BACKEND=npu` and `furiosa-opt run`) and hands the results back as torch tensors. Its fake
implementation needs no data: the kernel's signature gives every result's shape and dtype, so
`torch.compile(fullgraph=True)` and `torch.export` trace through the operator.

Needs PyTorch (the `torch` extra: `pip install 'furiosa-opt[torch]'`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import furiosa_opt.runtime  # noqa: F401 (registers the simulator backend `launch` runs on under npu)
from furiosa_opt import dtypes
from furiosa_opt.diagnostics import VerifyError, pass_through, user_facing
from furiosa_opt.lang import params
from furiosa_opt.lang.device import Context, DeviceFunction, launch
from furiosa_opt.lang.tensors import HbmTensor, HbmTensorView, HbmTensorViewMut, HostTensor, TensorType
from furiosa_opt.lang.tensors.host import logical_axes

NAMESPACE = "furiosa_opt"  # the operators are torch.ops.furiosa_opt.<name>

# torch's dtype of each furiosa-opt dtype a torch tensor can carry (4-bit types have none)
TORCH_DTYPES = {
    dtypes.bf16: torch.bfloat16,
    dtypes.f32: torch.float32,
    dtypes.i8: torch.int8,
    dtypes.u8: torch.uint8,
    dtypes.i16: torch.int16,
    dtypes.i32: torch.int32,
    dtypes.f8e4m3: torch.float8_e4m3fn,
    dtypes.f8e5m2: torch.float8_e5m2,
}

_LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")
pass_through(Path(torch.__file__).parent)  # an operator's error points at the model's call, not the dispatcher
_MADE: dict[str, tuple[Callable, list]] = {}  # kernel identity → its operator and arguments (made once per process)


@dataclass(frozen=True)
class _Leaf:
    """One tensor argument of the operator: a leaf of the kernel's parameters."""

    path: str  # `x`, `inputs.x`, `pair.1`: as launch names it
    type: TensorType
    mutated: bool

    @property
    def arg(self) -> str:
        """The schema's name of the argument (`inputs.x` → `inputs_x`)."""
        return re.sub(r"\W", "_", self.path)

    def check(self, operator: str, value: Any) -> None:
        """A one-line refusal naming the argument when `value` is not a CPU tensor of its dtype and shape."""
        want = TORCH_DTYPES[self.type.dtype]
        element = self.type.params[-1]
        if value.dtype != want:  # torch's dispatcher has refused what is no tensor
            reason = f"expected {want} ({self.type.dtype}), got {value.dtype}"
        elif tuple(value.shape) != _shape(self.type):
            axes = ", ".join(f"{a}={n}" for a, n in logical_axes(element))
            reason = f"expected shape {_shape(self.type)} ({axes}) for `{element}`, got {tuple(value.shape)}"
        elif value.device.type not in ("cpu", "meta"):
            reason = f"expected a CPU tensor, got one on {value.device}"
        else:
            return
        raise VerifyError("torch-argument", f"{operator}: argument `{self.path}`: {reason}")

    def upload(self, ctx: Context, value: torch.Tensor) -> HbmTensor:
        chip, element = self.type.params
        return HostTensor.from_dlpack(value.detach(), self.type.dtype, element).to_hbm(ctx.pdma, chip, element)

    def argument(self, hbm: HbmTensor) -> object:
        """What the kernel's annotation takes: the tensor itself, or a view of it."""
        if self.type.cls is HbmTensorViewMut:
            return hbm.view_mut()
        return hbm.view() if self.type.cls is HbmTensorView else hbm


def op(kernel: DeviceFunction, *, mutates: Iterable[str] = (), name: str | None = None) -> Callable:
    """The kernel as a torch custom operator, `torch.ops.furiosa_opt.<name>` (one per kernel, made once).

    Each tensor the kernel takes is one argument (a tuple or dataclass parameter's leaves in order, named
    `pair_0`, `inputs_x`), a torch tensor of the annotation's dtype and logical shape (the element
    mapping's axes in order of first appearance); the results are the kernel's returns, new tensors.
    Out-parameters are mutated arguments (`Tensor(a!)` in the schema): the `HbmTensorViewMut` parameters,
    and those named in `mutates` (an `HbmTensor` the kernel writes through `view_mut()`). A wrong dtype,
    shape or device is refused in one line naming the argument.

        from base_template.kernel.gemm_kernel import gemm_kernel
        gemm = op(gemm_kernel)
        c = gemm(a, b)   # a: [512, 64] bf16, b: [512, 64] bf16 → c: [512, 512] bf16
        torch.compile(lambda a, b: gemm(a, b) * 2, fullgraph=True)(a, b)
    """
    if not isinstance(kernel, DeviceFunction):
        raise VerifyError("torch-op", f"op() takes a @device kernel, got {kernel!r}")
    leaves = _leaves(kernel, set(mutates))
    if kernel.identity in _MADE:
        made, made_leaves = _MADE[kernel.identity]
        if made_leaves != leaves:
            raise VerifyError("torch-op", f"op({kernel.__name__}) exists already as {made._schema}; mutates differs")
        return made
    name = name or re.sub(r"\W", "_", kernel.__name__)
    operator = f"{NAMESPACE}::{name}"
    if hasattr(getattr(torch.ops, NAMESPACE), name):
        raise VerifyError("torch-op", f"op({kernel.__name__}): {operator} exists already; pass name=... to op()")
    returns = kernel.returns or ()
    for index, typ in enumerate(returns):
        _torch_dtype(kernel, f"result {index}", typ)
    _LIBRARY.define(f"{name}{_schema(leaves, returns)}")

    @user_facing
    def run(*tensors: torch.Tensor) -> Any:
        for leaf, value in zip(leaves, tensors, strict=True):
            leaf.check(operator, value)
        with Context.held() as ctx:  # the caller may be inside `with Context.acquire()`
            uploaded = [leaf.upload(ctx, value) for leaf, value in zip(leaves, tensors, strict=True)]
            arguments = _structured(kernel, (leaf.argument(hbm) for leaf, hbm in zip(leaves, uploaded, strict=True)))
            results = launch(kernel, ctx, *arguments)
            for leaf, value, hbm in zip(leaves, tensors, uploaded, strict=True):
                if leaf.mutated:
                    value.copy_(_to_torch(ctx, hbm))
            results = results if isinstance(results, tuple) else () if results is None else (results,)
            return _returned([_to_torch(ctx, result) for result in results])

    @user_facing
    def fake(*tensors: torch.Tensor) -> Any:
        for leaf, value in zip(leaves, tensors, strict=True):
            leaf.check(operator, value)
        return _returned([tensors[0].new_empty(_shape(t), dtype=TORCH_DTYPES[t.dtype]) for t in returns])

    _LIBRARY.impl(name, run, "CPU")
    torch.library.register_fake(operator, fake, lib=_LIBRARY)
    made = getattr(getattr(torch.ops, NAMESPACE), name).default
    _MADE[kernel.identity] = made, leaves
    return made


def _leaves(kernel: DeviceFunction, mutates: set[str]) -> list[_Leaf]:
    """The operator's arguments, with the kernel's out-parameters marked; `mutates` names must exist."""
    leaves = []
    for path, typ in kernel.leaf_types:
        _torch_dtype(kernel, f"argument `{path}`", typ)
        leaves.append(_Leaf(path, typ, typ.cls is HbmTensorViewMut or path in mutates))
    unknown = mutates - {leaf.path for leaf in leaves}
    if unknown:
        raise VerifyError(
            "torch-op",
            f"op({kernel.__name__}, mutates=...): no argument {sorted(unknown)[0]!r}; "
            f"it takes {', '.join(leaf.path for leaf in leaves)}",
        )
    if not leaves:
        raise VerifyError("torch-op", f"op({kernel.__name__}): the kernel takes no tensor, so torch has none to pass")
    return leaves


def _shape(typ: TensorType) -> tuple[int, ...]:
    """The torch shape of a kernel's tensor: its element mapping's logical array (`HostTensor.to_numpy`'s)."""
    return tuple(n for _, n in logical_axes(typ.params[-1]))


def _torch_dtype(kernel: DeviceFunction, what: str, typ: TensorType) -> torch.dtype:
    if typ.dtype not in TORCH_DTYPES:
        raise VerifyError("torch-op", f"op({kernel.__name__}): {what} is {typ.dtype}, which torch has no dtype for")
    return TORCH_DTYPES[typ.dtype]


def _schema(leaves: list[_Leaf], returns: tuple[TensorType, ...]) -> str:
    """`(Tensor x, Tensor(a0!) out) -> Tensor`: one alias set per mutated argument."""
    arguments = ", ".join(
        f"Tensor(a{i}!) {leaf.arg}" if leaf.mutated else f"Tensor {leaf.arg}" for i, leaf in enumerate(leaves)
    )
    results = "()" if not returns else "Tensor" if len(returns) == 1 else f"({', '.join(['Tensor'] * len(returns))})"
    return f"({arguments}) -> {results}"


def _structured(kernel: DeviceFunction, leaves: Iterator[object]) -> list[object]:
    """`launch`'s arguments: the leaves put back into the kernel's tuples and dataclasses."""
    leaves = iter(leaves)
    return [params.build(p.type, lambda _: next(leaves)) for p in kernel.parameters if p.type is not None]


def _to_torch(ctx: Context, tensor: HbmTensor) -> torch.Tensor:
    """A new torch tensor holding the HBM tensor's logical array (never memory a caller's tensor shares)."""
    return torch.from_dlpack(tensor.to_host(ctx.pdma)).clone()


def _returned(results: list[torch.Tensor]) -> Any:
    return None if not results else results[0] if len(results) == 1 else tuple(results)
