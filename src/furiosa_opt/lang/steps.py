"""What a launch plan replays (`lang/plan.py`): its steps, each a backend call with slots for its buffers,
and the `Plan` that runs them on a new launch's buffers, writing in place where the language would."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from furiosa_opt.backend import cpu
from furiosa_opt.lang.tensors import TensorView

# the comparisons a guard can record, by name
COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
            "ne": operator.ne}  # fmt: skip


def base_of(leaf: object) -> object:
    """The tensor an argument leaf holds: a view's base, or the tensor itself."""
    return leaf.base if isinstance(leaf, TensorView) else leaf


def window_of(leaf: object) -> int:
    """An argument leaf's window: a view's offset into its base, 0 for a tensor."""
    return leaf.window if isinstance(leaf, TensorView) else 0


@dataclasses.dataclass
class Step:
    """One backend call: `fn(*args)` with `slots` (argument position → slot) filled in and `offsets`
    (position → (leaf, delta)) resolved; its result goes to slot `out`; `release` slots are dropped after."""

    fn: Callable
    args: list
    slots: list[tuple[int, int]]
    offsets: list[tuple[int, int, int]]
    out: int | None
    release: tuple[int, ...] = ()
    release_base: bool = False  # a write step: its base buffer is read by no later step
    view: Reslice | None = None  # a relayout that was a view of its input: redone as that view
    padding: tuple | None = None  # an elementwise step on grids: (operands' padding values, result's)

    def arguments(self, slots: list, windows: list[int]) -> list:
        """The call's arguments on this launch: the slots' buffers and the windows' offsets filled in."""
        args = list(self.args)
        for position, slot in self.slots:
            args[position] = slots[slot]
        for position, leaf, delta in self.offsets:
            args[position] = windows[leaf] + delta
        return args

    def run(self, slots: list, windows: list[int]) -> object:
        if self.view is not None:  # a relayout: its buffer first, the layouts (no slot, no window) after
            made = self.view.apply(slots[self.slots[0][1]], self.args[1])
            if made is not None:
                return made
        args = self.arguments(slots, windows)
        if self.padding is not None:
            held = cpu.grids_of(args[1:])
            if held is not None and tuple(f for _, f in held[1]) == self.padding[0]:
                return cpu.on_grids(args[0], held, self.padding[1])  # the result's padding is known
        return self.fn(*args)


@dataclasses.dataclass(frozen=True)
class Reslice:
    """A relayout whose result was a strided view of its input's array: the same view of a new input
    array of the same shape and strides, without deriving the view again. `grid`: the input was read as
    its live grid (`Buf.grid`), else as its values."""

    grid: bool
    array: tuple  # (dtype, shape, strides) of the array read
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int  # bytes from the read array's first element
    layout: Any  # the result's layout

    @staticmethod
    def of(buf: object, src: Any, result: object) -> Reslice | None:
        reading = _read(buf, src)
        if reading is None or type(result) is not cpu.Buf or result.layout is None:
            return None
        grid, read = reading
        out = result.base
        if _root(out) is not _root(read):
            return None
        offset = _address(out) - _address(read)
        if offset < 0 or (out.size and offset + _reach(out) > _reach(read)):
            return None
        return Reslice(grid, (read.dtype, read.shape, read.strides), out.shape, out.strides, offset, result.layout)

    def apply(self, buf: object, src: Any) -> cpu.Buf | None:
        """The view of `buf`, or None when `buf` is not read the way the recorded input was."""
        reading = _read(buf, src)
        if reading is None or reading[0] != self.grid:
            return None
        read = reading[1]
        if (read.dtype, read.shape, read.strides) != self.array:
            return None
        if read.flags.c_contiguous:
            owner, start = read, 0
        else:  # a grid with broadcast axes: the same view of the array that owns the memory
            owner = _root(read)
            if not owner.flags.c_contiguous:
                return None
            start = _address(read) - _address(owner)
        view = np.ndarray(self.shape, read.dtype, buffer=owner, offset=start + self.offset, strides=self.strides)
        view.flags.writeable = False
        return cpu.Buf(view, layout=self.layout)


def _read(buf: object, src: Any) -> tuple[bool, np.ndarray] | None:
    """The array a relayout from `src` reads of `buf`: (True, its live grid) when `buf` is the grid of
    `src`, (False, its values) when it is a plain buffer; None for a pending gather or a grid of another
    layout (the relayout then derives its cells anew)."""
    if type(buf) is not cpu.Buf or buf.index is not None:
        return None
    if buf.layout is None:
        return False, buf.base
    return (True, buf.base) if buf.layout is src or buf.layout == src else None


def padding_of(fn: Callable, args: tuple, result: object) -> tuple | None:
    """An elementwise call on grids: its operands' padding values and its result's, which the same
    function gives again for the same padding values (the replay skips computing it)."""
    held = cpu.grids_of(args[1:]) if fn is cpu.elementwise else None
    return None if held is None else (tuple(f for _, f in held[1]), result.fill)


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _reach(array: np.ndarray) -> int:
    """Bytes from a view's first element to just past its last (its footprint, broadcast axes once)."""
    return sum((n - 1) * s for n, s in zip(array.shape, array.strides, strict=True) if s > 0) + array.itemsize


@dataclasses.dataclass
class Plan:
    """What a launch did, to be done again on new buffers."""

    slots: int
    inputs: list[tuple[int, int]]  # (leaf whose base's buffer fills the slot, slot)
    steps: list[Step]
    finals: list[tuple[int, int]]  # (leaf whose base ends holding the slot, slot)
    results: list[tuple[Any, ...]]  # ("leaf", i) or ("new", cls, dtype, params, slot)
    single: bool  # the kernel returned one tensor (not a tuple)
    guards: list[tuple]  # (leaf, delta, comparison, other, outcome)
    constants: list[tuple[int, object]]  # (slot, buffer) of what no argument reaches: computed once
    keep: tuple  # the objects the key names by identity, kept alive

    def holds(self, windows: list[int]) -> bool:
        return all(
            COMPARISONS[name](windows[leaf] + delta, other) == outcome
            for leaf, delta, name, other, outcome in self.guards
        )

    def replay(self, leaves: list, windows: list[int]) -> Any:
        slots: list[object] = [None] * self.slots
        for leaf, slot in self.inputs:
            slots[slot] = base_of(leaves[leaf]).data
        for slot, value in self.constants:
            slots[slot] = value
        for step in self.steps:
            if step.fn is cpu.window_write:
                slots[step.out] = _write(step, slots, leaves, windows)
            elif step.out is not None:
                slots[step.out] = step.run(slots, windows)
            for slot in step.release:
                slots[slot] = None
        for leaf, slot in self.finals:
            base_of(leaves[leaf]).data = slots[slot]
        made = [_result(spec, leaves, slots) for spec in self.results]
        if not made:
            return None
        return made[0] if self.single else tuple(made)


def _write(step: Step, slots: list, leaves: list, windows: list[int]) -> object:
    """A `window_write` step: into its base buffer in place when nothing else holds it (the language's
    rule, `cpu.exclusive`, on the same references: the slot and any argument tensor holding it let go)."""
    base_slot = step.slots[0][1]
    data = slots[base_slot]
    slots[base_slot] = None
    holders = [b for b in (base_of(leaf) for leaf in leaves) if b.data is data]
    for b in holders:
        b.data = None
    args = step.arguments(slots, windows)  # its base slot reads None now: only `data` holds the buffer
    try:
        in_place = step.release_base and cpu.exclusive(data)
        return cpu.window_write(data, *args[1:6], in_place)  # in place or not as decided here, not as recorded
    finally:
        for b in holders:
            b.data = data
        if not step.release_base:
            slots[base_slot] = data


def _result(spec: tuple, leaves: list, slots: list) -> object:
    if spec[0] == "leaf":
        return base_of(leaves[spec[1]])
    _, cls, dtype, params, slot = spec
    tensor = cls.__new__(cls)
    tensor.dtype, tensor.params, tensor.data = dtype, params, slots[slot]
    return tensor
