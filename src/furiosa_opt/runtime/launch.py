"""A launch on the simulated device: bind every DRAM buffer of the EDF to device memory, run, hand back.

Arguments are bound in place — an `HbmTensor` leaf is its whole allocation, a view leaf the window of
its base's allocation that the view sees — so what the kernel writes lands in the caller's tensors. The
kernel's other DRAM buffers get fresh allocations; those it returns become the result tensors, the rest
go back to the device when the launch ends.
"""

from __future__ import annotations

import sys

from furiosa_opt import sim
from furiosa_opt.compiler.edf import Edf, Leaf
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import u8
from furiosa_opt.lang.tensors import HbmTensor, TensorType, TensorView
from furiosa_opt.runtime import profile
from furiosa_opt.runtime.memory import DEVICE, DeviceBuf, upload

_ANNOUNCED: list[bool] = []
KINDS = {"hbm": "HbmTensor", "view": "HbmTensorView", "view_mut": "HbmTensorViewMut"}


def execute(identity: str, edf: Edf, leaves: list, returns: tuple[TensorType, ...]) -> list[HbmTensor]:
    """Run `edf` on the simulator with `leaves` (the flattened arguments) bound in place; the results."""
    if not _ANNOUNCED:
        print("furiosa-opt: kernels run from their EDF on the TCP simulator (FURIOSA_OPT_DEVICE=sim)", file=sys.stderr)
        _ANNOUNCED.append(True)
    if len(leaves) != len(edf.arguments):
        raise VerifyError(
            "npu-arguments", f"`{identity}`: its EDF takes {len(edf.arguments)} tensors, got {len(leaves)}"
        )
    bound = {leaf.buffer: _bind(identity, leaf, value) for leaf, value in zip(edf.arguments, leaves, strict=True)}
    dram = {name: buf.device_bytes() for name, buf in bound.items()}
    fresh: dict[str, DeviceBuf] = {}
    for buffer in edf.buffers:
        if buffer.memory == "dram" and buffer.name not in dram:
            fresh[buffer.name] = DeviceBuf(DEVICE.allocate(buffer.bytes), u8)
            dram[buffer.name] = fresh[buffer.name].device_bytes()
    sim.execute(edf, dram)
    profile.record(edf)
    results = []
    for t, out in zip(returns, edf.outputs, strict=True):
        home = bound.get(out.buffer) or fresh[out.buffer]
        count = out.bytes * 8 // t.dtype.bits
        results.append(t.cls(t.dtype, t.params, DeviceBuf(home.allocation, t.dtype, home.offset, count)))
    return results


def _bind(identity: str, leaf: Leaf, value: object) -> DeviceBuf:
    """The device bytes an argument leaf occupies, after checking it against the EDF's argument table."""
    view = value if isinstance(value, TensorView) else None
    tensor: HbmTensor = view.base if view else value
    kind = ("view_mut" if view.writable else "view") if view else "hbm"
    levels = tuple(str(level) for level in (view.params if view else tensor.params))
    if kind != leaf.kind or tensor.dtype.name != leaf.dtype or levels != leaf.levels:
        raise VerifyError(
            "npu-arguments",
            f"`{identity}`: argument `{leaf.path}` is a {KINDS[kind]}[{tensor.dtype}, {', '.join(levels)}], its EDF "
            f"expects {KINDS.get(leaf.kind, leaf.kind)}[{leaf.dtype}, {', '.join(leaf.levels)}]; recompile the kernel",
        )
    if not isinstance(tensor.data, DeviceBuf):  # made before the NPU backend was chosen: upload it now
        tensor.data = upload(tensor.data.values(), tensor.dtype)
    home: DeviceBuf = tensor.data
    offset = home.offset + (view.window * tensor.dtype.bits // 8 if view else 0)  # stage 2 refuses a split byte
    if offset + leaf.bytes > home.offset + home.nbytes:
        raise VerifyError(
            "npu-arguments",
            f"`{identity}`: argument `{leaf.path}` spans {leaf.bytes} bytes from byte {offset - home.offset} of a "
            f"{home.nbytes}-byte tensor",
        )
    return DeviceBuf(home.allocation, u8, offset, leaf.bytes)
