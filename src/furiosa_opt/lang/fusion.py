"""A launch plan's steps made fewer before it is kept (`lang/plan.py`): a relayout or elementwise step
whose result nothing reads is dropped, and a chain of relayouts redone as views (`Reslice`), each read only
by the next, becomes one view of the first one's input. Strides and offsets are in bytes of the same
memory, so the chain's view is the last view at the sum of the offsets: what the chain gives, byte for
byte."""

from __future__ import annotations

import dataclasses
from collections import Counter

from furiosa_opt.backend import cpu
from furiosa_opt.lang.steps import Reslice, Step

PURE = (cpu.relayout, cpu.elementwise)


def fused(steps: list[Step], kept: set[int]) -> list[Step]:
    """`steps` without unread relayouts and elementwise steps, each chain of views read only along the
    chain made one step.
    `kept`: the slots the plan hands back or holds (never dropped, never folded into a chain).

    >>> fused([], set())
    []
    """
    return _chained(_needed(steps, kept), kept)


def _needed(steps: list[Step], kept: set[int]) -> list[Step]:
    """The steps but the relayouts and elementwise steps whose result no later step reads and the plan
    does not keep: both are pure (numpy on cells, errors ignored; a relayout's layouts were checked when
    it was recorded), so dropping one changes no byte and hides no fault."""
    needed = set(kept)
    out: list[Step] = []
    for step in reversed(steps):
        if step.fn in PURE and step.out not in needed:
            continue
        needed.discard(step.out)
        needed.update(s for _, s in step.slots)
        out.append(step)
    return out[::-1]


def _chained(steps: list[Step], kept: set[int]) -> list[Step]:
    """The steps with each view step that reads the result of an earlier one, its only reader, folded
    into it (`_joined`): only slots written once, so the folded step's result is the same value."""
    readers = Counter(s for step in steps for _, s in step.slots)
    writers = Counter(step.out for step in steps)
    out: list[Step] = []
    made_by: dict[int, int] = {}  # slot → position in `out` of the view step that made it
    for step in steps:
        slot = step.slots[0][1] if step.view is not None else None
        at = made_by.pop(slot, None) if slot is not None else None
        alone = at is not None and readers[slot] == 1 and writers[slot] == 1 and writers[step.out] == 1
        if alone and slot not in kept:
            joined = _joined(out[at], step)
            if joined is not None:
                out[at] = joined
                made_by[step.out] = at
                continue
        made_by.pop(step.out, None)  # the slot holds another value from here on
        if step.view is not None:
            made_by[step.out] = len(out)
        out.append(step)
    return out


def _joined(first: Step, then: Step) -> Step | None:
    """One step doing `first` then `then` (which reads `first`'s result as its grid), or None when the
    recorded arrays do not line up."""
    a, b = first.view, then.view
    if not b.grid or b.array != (a.array[0], a.shape, a.strides):
        return None
    view = Reslice(a.grid, a.array, b.shape, b.strides, a.offset + b.offset, b.layout)
    calls = first.fn.calls if isinstance(first.fn, Relayouts) else ((first.fn, tuple(first.args[1:])),)
    calls += ((then.fn, tuple(then.args[1:])),)
    return dataclasses.replace(first, fn=Relayouts(calls), out=then.out, view=view, release=())


@dataclasses.dataclass(frozen=True)
class Relayouts:
    """The calls of a fused chain, made one after the other: what its step does when its input is not
    read the way the recorded one was (the view then cannot be taken)."""

    calls: tuple

    def __call__(self, buf: object, *_: object) -> object:
        for fn, rest in self.calls:
            buf = fn(buf, *rest)
        return buf
