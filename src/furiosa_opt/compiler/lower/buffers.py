"""The buffer table: which LIR buffer holds each vISA value.

A value that makes memory (an argument, `hbm_new`, `dm_new`, a DMA's or a pipeline's result) gets a fresh
buffer `T<n>`; a view, and a value a kept device loop carries, take the buffer of the value they stand
for. Stage 2 names buffers while it lowers the ops, and reads the table again once placement has given
them addresses (`fill.py`), so the table also finds the value an object was replayed as.
"""

from __future__ import annotations

import math

import numpy as np

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Buffer
from furiosa_opt.compiler.lower.sites import location
from furiosa_opt.diagnostics import Location
from furiosa_opt.lang.tensors import DmTensor, HbmTensor, Tensor, TensorView, TrfTensor, VrfTensor
from furiosa_opt.mapping import views
from furiosa_opt.mapping.evaluate import evaluate

MEMORY = {HbmTensor: "dram", DmTensor: "sram", TrfTensor: "trf", VrfTensor: "vrf"}


class BufferTable:
    """The buffers of one kernel, and the buffer of each of its values (`objects`: the replayed object of
    each value, which a view argument's base joins as `<value>.base`)."""

    def __init__(self, objects: dict[str, object]):
        self.objects = objects
        self.buffers: dict[str, Buffer] = {}
        self.of_value: dict[str, str] = {}  # vISA value → buffer name
        self.where: dict[str, Location | None] = {}  # buffer name → the line that made it, for refusals
        self._names: dict[int, str] | None = None  # id(object) → value name, for `value_of`

    def fresh(self, value: visa.Value, op: visa.Op | None, at: int) -> str:
        """A new buffer for `value`, made by `op` (None: a kernel argument) as command `at`; its name."""
        tensor = self.objects[value.name]
        name = f"T{len(self.buffers)}"
        if isinstance(tensor, TensorView):  # a view argument: the window the runtime binds at launch
            self.objects[f"{value.name}.base"] = tensor.base
            self.of_value[f"{value.name}.base"] = name
            count = window_extent(tensor)
            tensor = tensor.base
        else:
            per_slice = tensor.params[-1].size * (tensor.params[3].size if isinstance(tensor, TrfTensor) else 1)
            count = tensor.storage.size if isinstance(tensor, HbmTensor) else per_slice
        memory = MEMORY[type(tensor)]
        self.buffers[name] = Buffer(
            name,
            value.name,
            memory,
            tensor.dtype.name,
            [str(p) for p in tensor.params],
            0,
            tensor.dtype.nbytes(count),  # whole bytes: the language refuses a 4-bit tensor that is not
            -1 if op is None else at,
            -1,
            chips=tensor.params[0].size if memory == "dram" else 1,
        )
        self.of_value[value.name] = name
        self.where[name] = location(op) if op else None
        return name

    def alias(self, value: str, of: str) -> str:
        """`value` takes the buffer of the value `of` (a view of it, or the next pass's place of a carried
        value); that buffer's name."""
        name = self.of_value[value] = self.of_value[of]
        return name

    def carry(self, value: str, first: str) -> str:
        """`value`, carried by a kept loop from the value `first`, takes its buffer, which then holds two
        slots used in turn (docs/lir.md, "Loops"); that buffer's name."""
        name = self.alias(value, first)
        self.buffers[name].slots = 2
        return name

    def base_of(self, value: str) -> str:
        """The buffer holding `value`."""
        return self.of_value[value]

    def operand_buffers(self, op: visa.Op) -> list[str]:
        """The buffers a pipeline stage reads beside its stream (a register file, a stash): those of its
        operands after the first that are memory."""
        return [self.of_value[name] for name in op.operands[1:] if name in self.of_value]

    def value_of(self, obj: object) -> str:
        """The first value name bound to `obj` (asked once buffers are made, so the map is built once)."""
        if self._names is None:
            self._names = {}
            for name, candidate in self.objects.items():
                self._names.setdefault(id(candidate), name)
        return self._names[id(obj)]

    def buffer_of(self, tensor: Tensor) -> Buffer:
        """The buffer holding `tensor` (a replayed object, not a view)."""
        return self.buffers[self.of_value[self.value_of(tensor)]]


def window_extent(view: TensorView) -> int:
    """Positions a view argument spans: every outer block of the base, up to the view's last live cell."""
    outer = math.prod(level.size for level in view.outer)
    cells = views.live_cells(view.element.factors)
    if cells is not None:
        extent = cells.extent
    else:  # composite atoms: find the last live cell one by one
        live = np.flatnonzero(evaluate(view.element.factors, np.arange(view.element.size, dtype=np.int64)).live)
        extent = int(live[-1]) + 1 if len(live) else 0
    return (outer - 1) * view.base.params[-1].size + extent
