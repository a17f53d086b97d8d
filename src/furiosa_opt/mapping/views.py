"""Relayout as numpy views: split the source into digits, transpose them, pad and broadcast the destination.

A composite-free mapping is a mixed-radix split of its axes: factor `(A, s, m, e)` is an array axis of `e`
positions whose first `m` hold `A`'s coordinate digit at stride `s`. Moving a buffer between two such
layouts is therefore a chain of views — reshape the source into its factors, keep the live part of each,
split every digit at the boundaries both sides share (`refine`), transpose into the destination's digit
order (`Source`), then merge, broadcast what the source lacks and pad (`Target`) — and one copy into the
destination buffer. Its cost is the data's, not one index per position. The contraction fold reads its
operands through the same `Source` views (fold.py).

Layouts with composite atoms (`[A, B] # 12`), and digits that a shared boundary does not divide evenly
(a digit of 6 values cut at 4), are not mixed-radix splits of one axis per digit; `plan` returns None for
them and callers fall back to index maps (`relayout_index`).

    plan(m["K, N"].factors, m["N, K"].factors).apply(values)   # a transpose of the last axis
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np

from furiosa_opt.mapping.expr import MappingError
from furiosa_opt.mapping.factors import BC, Factor, Factors, SymAtom, has_composite, size
from furiosa_opt.mapping.refine import Key, SubDigit, digits, pairing, refine

SubKey = tuple[Key, int]  # (axis, lower coordinate boundary): a sub-digit, matched across mappings


@dataclass(frozen=True)
class Source:
    """A buffer seen as its live sub-digits in a chosen order: a view, no copy."""

    shape: tuple[int, ...]  # the buffer as one array axis per factor
    take: tuple[slice | int, ...]  # per factor: its live digit values, or the single value 0
    split: tuple[int, ...]  # the live digits cut into sub-digits, buffer order
    sub_take: tuple[slice | int, ...]  # per sub-digit: the prefix the target reads, or 0 when it reads none
    order: tuple[int, ...]  # the read sub-digits in target order
    expand: tuple[bool, ...]  # per target sub-digit: True where it reads none of this buffer (a size-1 axis)

    def view(self, values: np.ndarray) -> np.ndarray:
        """`values[..., positions]` as `[..., target sub-digits]`, size 1 where the target reads none."""
        lead = values.shape[:-1]
        return self._subs(values.reshape(lead + self.shape)[(slice(None),) * len(lead) + self.take], lead)

    def view_live(self, grid: np.ndarray) -> np.ndarray:
        """The same from the buffer's live cells as a grid (`[..., live extent per factor]`)."""
        lead = grid.shape[: grid.ndim - len(self.shape)]
        take = tuple(slice(None) if isinstance(t, slice) else 0 for t in self.take)
        return self._subs(grid[(slice(None),) * len(lead) + take], lead)

    def _subs(self, a: np.ndarray, lead: tuple[int, ...]) -> np.ndarray:
        every = (slice(None),) * len(lead)
        a = a.reshape(lead + self.split)[every + self.sub_take]
        a = a.transpose(tuple(range(len(lead))) + tuple(len(lead) + i for i in self.order))
        return a[every + tuple(np.newaxis if lacks else slice(None) for lacks in self.expand)]


@dataclass(frozen=True)
class Target:
    """A layout filled from its sub-digits: merge them into digits, broadcast, pad."""

    subs: tuple[int, ...]  # sub-digit counts, layout order
    digits: tuple[int, ...]  # per factor: its digit's live count, or 1 for a factor read at 0
    live: tuple[int, ...]  # per factor: live extent (a broadcast factor repeats its one value)
    shape: tuple[int, ...]  # per factor: physical extent
    size: int

    def grid(self, a: np.ndarray) -> np.ndarray:
        """`a[..., sub-digits]` as the layout's live cells `[..., live extent per factor]`: a view where the
        digits allow it, broadcast axes of stride 0."""
        lead = a.shape[: a.ndim - len(self.subs)]
        a = np.broadcast_to(a, lead + self.subs)
        return np.broadcast_to(a.reshape(lead + self.digits), lead + self.live)

    def place(self, a: np.ndarray, fill: int | float = 0) -> np.ndarray:
        """`a[..., sub-digits]` (size-1 axes broadcast) as the layout's buffer `[..., positions]`."""
        lead = a.shape[: a.ndim - len(self.subs)]
        a = self.grid(a)
        if self.live == self.shape:  # no padding: the one copy is the contiguous result
            return np.ascontiguousarray(a).reshape((*lead, self.size))
        out = np.full(lead + self.shape, fill, dtype=a.dtype)
        out[(slice(None),) * len(lead) + tuple(slice(0, n) for n in self.live)] = a
        return out.reshape((*lead, self.size))


@dataclass(frozen=True)
class ViewPlan:
    source: Source
    target: Target

    def apply(self, values: np.ndarray, fill: int | float = 0) -> np.ndarray:
        """`values[..., source positions]` relaid out to `[..., destination positions]`; padding is `fill`."""
        return self.target.place(self.source.view(values), fill)


@lru_cache(maxsize=4096)
def plan(src: Factors, dst: Factors) -> ViewPlan | None:
    """The view plan moving `src` to `dst` by logical index, or None where views cannot express it.
    The caller has checked the move (`check_relayout`); destination axes the source lacks broadcast and
    source values the destination does not read are skipped."""
    subs = joint(src, dst)
    if subs is None:
        return None
    src_subs, dst_subs = subs
    target = layout_target(dst, dst_subs)
    order = [(d.key, d.cut, d.count) for d in dst_subs]
    source = layout_source(src, src_subs, order)
    return None if target is None or source is None else ViewPlan(source, target)


@dataclass(frozen=True)
class Regrid:
    """Where the live cells of one layout lie in the live grid of another that lays out the same positions
    (a reshape relabels them, as `t.reshape(...)` does): the grid split into the digits both share, cut to
    the wanted layout's live counts, merged into its factors."""

    split: tuple[int, ...]  # the have grid as common digits
    take: tuple[slice, ...]  # the wanted live box
    shape: tuple[int, ...]  # the wanted grid: its live count per factor

    def apply(self, grid: np.ndarray) -> np.ndarray | None:
        """The wanted layout's live cells as a view of `grid`, or None when merging digits would copy."""
        merged = grid.reshape(self.split)[self.take].view()
        try:
            merged.shape = self.shape  # in place: refused (AttributeError) where only a copy could do it
        except AttributeError:
            return None
        return merged


@lru_cache(maxsize=4096)
def regrid(have: Factors, want: Factors) -> Regrid | None:
    """How `want`'s live cells sit in `have`'s live grid when both lay out the same positions; None when
    their sizes differ, a layout has composite atoms, their digits do not nest, or `want`'s live cells are
    not a box inside `have`'s."""
    if size(have) != size(want) or has_composite(have) or has_composite(want):
        return None
    spans = {1}
    for fs in (have, want):
        span = 1
        for f in reversed(fs):
            span *= f.e
            spans.add(span)
    chain = sorted(spans)
    if any(b % a for a, b in pairwise(chain)):
        return None
    boxes = [_live_box(fs, chain) for fs in (have, want)]
    if None in boxes or any(w > h for w, h in zip(boxes[1][1], boxes[0][1], strict=True)):
        return None
    return Regrid(boxes[0][1], tuple(slice(0, w) for w in boxes[1][1]), tuple(f.m for f in want))


def _live_box(fs: Factors, chain: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(the common digits' extents, each digit's live count) of a layout whose every factor is cut at the
    `chain` of spans; None when a factor's live cells are not a box of its digits (its live count is not
    a whole number of its inner digits)."""
    extents, live, span = [], [], 1
    for f in reversed(fs):
        if f.e == 1:  # one position: no digit (its grid axis has the one cell)
            continue
        cuts = [b // span for b in chain if span < b <= span * f.e]
        digits = [b // a for a, b in pairwise([1, *cuts])]  # inner first
        inner = math.prod(digits[:-1])
        if f.m % inner:
            return None
        extents += digits
        live += [*digits[:-1], f.m // inner]
        span *= f.e
    return tuple(reversed(extents)), tuple(reversed(live))


def joint(*mappings: Factors) -> list[list[SubDigit]] | None:
    """The mappings' sub-digits at their common boundaries, or None if views cannot express them."""
    if any(has_composite(fs) for fs in mappings):
        return None
    try:
        return refine(*mappings)
    except MappingError:
        return None


def layout_source(fs: Factors, subs: list[SubDigit], order: list[tuple[Key, int, int]]) -> Source | None:
    """`fs` viewed as the sub-digits `order` ((key, cut, count), outermost first); None if ragged."""
    own = digits(fs)
    split = _cut(own, subs)
    if split is None:
        return None
    partner = pairing([(d.key, d.cut) for d in subs], [(key, cut) for key, cut, _ in order])
    where = {i: j for j, i in enumerate(partner) if i is not None}  # read sub-digit → its target position
    read = sorted(where)
    live_factors = {d.factor for d in own}
    return Source(
        shape=tuple(f.e for f in fs),
        take=tuple(slice(0, f.m) if i in live_factors else 0 for i, f in enumerate(fs)),
        split=split,
        sub_take=tuple(slice(0, order[where[i]][2]) if i in where else 0 for i in range(len(subs))),
        order=tuple(sorted(range(len(read)), key=lambda k: where[read[k]])),
        expand=tuple(i is None for i in partner),
    )


def layout_target(fs: Factors, subs: list[SubDigit]) -> Target | None:
    """How to fill `fs` from its sub-digits (in its own order); None if ragged."""
    own = digits(fs)
    split = _cut(own, subs)
    if split is None:
        return None
    live_factors = {d.factor for d in own}
    return Target(
        subs=split,
        digits=tuple(f.m if i in live_factors else 1 for i, f in enumerate(fs)),
        live=tuple(f.m if i in live_factors or (f.atom == BC and f.m > 1) else 1 for i, f in enumerate(fs)),
        shape=tuple(f.e for f in fs),
        size=size(fs),
    )


@dataclass(frozen=True)
class Live:
    """The live cells of a composite-free layout: every factor's digit below its live count."""

    shape: tuple[int, ...]  # per factor: physical extent
    take: tuple[slice, ...]  # per factor: the live prefix
    extent: int  # one past the last live position (0 when none is)

    @property
    def count(self) -> int:
        return math.prod(s.stop for s in self.take)


@lru_cache(maxsize=4096)
def live_cells(fs: Factors) -> Live | None:
    """Where `fs` holds values, as per-factor prefixes; None for layouts with composite atoms."""
    if has_composite(fs):
        return None
    stops = tuple(f.m if f.m >= 1 else 0 for f in fs)
    stride, last = size(fs), 0
    for f, stop in zip(fs, stops, strict=True):
        stride //= f.e
        last += (stop - 1) * stride
    extent = last + 1 if all(stops) else 0
    return Live(tuple(f.e for f in fs), tuple(slice(0, n) for n in stops), extent)


def dense(order: list[tuple[str, int]] | tuple[tuple[str, int], ...]) -> Factors:
    """The layout of a logical array with one full dimension per axis, in `order` (host arrays)."""
    return tuple(Factor(SymAtom(name, n), 1, n, n) for name, n in order)


def _cut(own: list, subs: list[SubDigit]) -> tuple[int, ...] | None:
    """Sub-digit counts of one side, or None if some digit is not exactly the product of its sub-digits."""
    counts: dict[int, list[int]] = {}
    for sub in subs:
        counts.setdefault(sub.factor, []).append(sub.count)
    for d in own:
        if not isinstance(d.key, str) or math.prod(counts.get(d.factor, [1])) != d.m:
            return None
    return tuple(sub.count for sub in subs)
