"""Which fresh DM tensors a kernel reads where nothing has written.

`DmTensor.new` is zero on the CPU backend (upstream's CPU backend zero-fills it too), but on the device a
new tensor takes whatever DM a dead one left: a read of a cell no command wrote would see stale bytes. A
kernel that writes every cell before reading it (a tile per step, a shuffle naming every cluster) needs
nothing more; for one that does not, stage 2 clears the tensor with a memset where it is made, so both
backends read zeros (docs/lowering.md, "Tensors read before they are written").

The walk follows the vISA in order with one flag per cell of each fresh tensor, set by the same window
writes the CPU backend moves data with. In a kept device loop, a read is checked against what was written
before the loop, and the loop's writes (each pass's view, if it moves) count after it, those under an `if`
when its condition holds on some pass. That errs towards clearing, never towards a stale read.
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.backend.cpu import Buf, window_read, window_write
from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lower.opcodes import DMA_OPS, SCATTER_OPS, VIEW_OPS
from furiosa_opt.lang.tensors import DmTensor, DmTensorView, TensorView
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.factors import size

CONTROL = {"loop", "carried", "end_loop", "if", "end_if"}


def _writes(op: visa.Op, position: int) -> bool:
    """Whether operand `position` of `op` is memory the op writes (else it reads it)."""
    if op.opcode in DMA_OPS:
        return position == 1 and not op.results
    if op.opcode in SCATTER_OPS:
        return position == 2
    return (op.opcode, position) in (("commit_view", 1), ("memset", 0))


def _window(obj: object) -> tuple[int, object]:
    """(window, the view's factors over all its levels) of a DM tensor or a view of one: the whole buffer as
    one block, so that padding in the outer levels is padding for reads and writes alike."""
    view = obj if isinstance(obj, TensorView) else DmTensorView(obj, obj.params[3], 0)
    return view.window, pair(*view.params).factors


class _Cells:
    """One flag per cell of a fresh tensor: written yet or not."""

    def __init__(self, tensor: DmTensor):
        self.size = tensor.storage.size
        self.written = Buf(np.zeros(self.size, dtype=bool))
        self.every = Buf(np.ones(self.size, dtype=bool))

    def write(self, obj: object) -> None:
        window, factors = _window(obj)
        ones = Buf(np.ones(size(factors), dtype=bool))
        self.written = window_write(self.written, 1, self.size, window, factors, ones)

    def unwritten(self, obj: object) -> bool:
        """Whether reading `obj` reads a live cell nothing wrote."""
        window, factors = _window(obj)
        seen = window_read(self.written, 1, self.size, window, factors).values()
        live = window_read(self.every, 1, self.size, window, factors).values()
        return bool((live & ~seen).any())


def read_unwritten(
    ops: tuple[visa.Op, ...],
    objects: dict[str, object],
    buffer_of: dict[str, str],
    per_pass: dict[str, list[TensorView]],
    fresh: dict[str, DmTensor],
) -> list[str]:
    """The buffers among `fresh` (buffer name → its `dm_new` tensor) that some op reads at a cell no
    earlier op wrote, in the order of their first such read."""
    cells = {name: _Cells(tensor) for name, tensor in fresh.items()}
    found: list[str] = []
    loops: list[tuple[str, int, list[tuple[str, object]]]] = []  # open kept loops: index, count, their writes
    guards: list[object] = []  # the conditions of the open `if`s
    for op in ops:
        if op.opcode == "loop":
            loops.append((op.results[0].name, op.attr("count"), []))
        elif op.opcode == "end_loop":
            _, _, writes = loops.pop()
            for name, obj in writes:
                (loops[-1][2].append((name, obj)) if loops else cells[name].write(obj))
        elif op.opcode == "if":
            guards.append(op.attr("cond"))
        elif op.opcode == "end_if":
            guards.pop()
        elif op.opcode not in VIEW_OPS and op.opcode not in CONTROL:
            for position, value in enumerate(op.operands):
                name = buffer_of.get(value)
                if name not in cells or name in found:
                    continue
                views = per_pass.get(value, [objects[value]])
                if not _writes(op, position):
                    if any(cells[name].unwritten(view) for view in views):
                        found.append(name)
                elif loops and _runs(guards, *loops[-1][:2]):
                    loops[-1][2].extend((name, view) for view in views)
                elif not loops:
                    for view in views:
                        cells[name].write(view)
    return found


def _runs(guards: list[object], index: str, count: int) -> bool:
    """Whether a command under `guards` runs on some pass of the loop (index, count)."""
    if not guards:
        return True
    try:
        return bool(np.logical_and.reduce([guard.on_passes(index, count) != 0 for guard in guards]).any())
    except ZeroDivisionError:
        return False
