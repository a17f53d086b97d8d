"""Relayout as numpy views: split the source into digits, transpose them, pad and broadcast the destination.

A composite-free mapping is a mixed-radix split of its axes: factor `(A, s, m, e)` is an array axis of `e`
positions whose first `m` hold `A`'s coordinate digit at stride `s`. Moving a buffer between two such
layouts is therefore a chain of views — reshape the source into its factors, keep the live part of each,
split every digit at the boundaries both sides share (`refine`), transpose into the destination's digit
order, merge, broadcast what the source lacks, pad — and one copy into the destination buffer. Its cost
is the data's, not one index per position.

Layouts with composite atoms (`[A, B] # 12`), and digits that a shared boundary does not divide evenly
(a digit of 6 values cut at 4), are not mixed-radix splits of a single axis each; `plan` returns None
for them and callers fall back to index maps (`relayout_index`).

    plan(m["K, N"].factors, m["N, K"].factors).apply(values)   # a transpose of the last axis
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from furiosa_opt.mapping.factors import BC, Factors, has_composite, size
from furiosa_opt.mapping.refine import digits, refine


@dataclass(frozen=True)
class ViewPlan:
    """The view steps of one relayout (see the module docstring); `apply` runs them on the last axis."""

    src_shape: tuple[int, ...]  # the source buffer as one array axis per factor
    src_take: tuple[slice | int, ...]  # per factor: its live digit values, or the single value 0
    split_shape: tuple[int, ...]  # the live digits cut into sub-digits, source order
    sub_take: tuple[slice | int, ...]  # per source sub-digit: what the destination reads of it
    order: tuple[int, ...]  # the kept source sub-digits in destination order
    expand: tuple[int | None, ...]  # destination sub-digit sizes; None marks one taken from the source
    dst_live: tuple[int, ...]  # per destination factor: live (broadcast) extent
    dst_digits: tuple[int, ...]  # per destination factor: its digit size, or 1 for a factor read at 0
    dst_shape: tuple[int, ...]  # per destination factor: physical extent
    size: int

    def apply(self, values: np.ndarray, fill: int | float = 0) -> np.ndarray:
        """`values[..., source positions]` relaid out to `[..., destination positions]`; padding is `fill`."""
        lead = values.shape[:-1]
        every = (slice(None),) * len(lead)
        a = values.reshape(lead + self.src_shape)[every + self.src_take]
        a = a.reshape(lead + self.split_shape)[every + self.sub_take]
        a = a.transpose(tuple(range(len(lead))) + tuple(len(lead) + i for i in self.order))
        slots = iter(range(len(lead), a.ndim))
        index = every + tuple(slice(None) if n is None else np.newaxis for n in self.expand)
        shape = lead + tuple(a.shape[next(slots)] if n is None else n for n in self.expand)
        a = np.broadcast_to(a[index], shape)
        a = np.broadcast_to(a.reshape(lead + self.dst_digits), lead + self.dst_live)
        out = np.full(lead + self.dst_shape, fill, dtype=values.dtype)
        out[every + tuple(slice(0, n) for n in self.dst_live)] = a
        return out.reshape(lead + (self.size,))


@lru_cache(maxsize=4096)
def plan(src: Factors, dst: Factors) -> ViewPlan | None:
    """The view plan moving `src` to `dst` by logical index, or None where views cannot express it.
    The caller has checked the move (`check_relayout`); destination axes the source lacks broadcast and
    source values the destination does not read are skipped."""
    if has_composite(src) or has_composite(dst):
        return None
    src_digits, dst_digits = digits(src), digits(dst)
    src_subs, dst_subs = refine(src, dst)
    split_shape = _cut(src_digits, src_subs)
    dst_cut = _cut(dst_digits, dst_subs)
    if split_shape is None or dst_cut is None:
        return None
    held = {(d.key, d.cut): i for i, d in enumerate(src_subs)}
    reads = {(d.key, d.cut): d.count for d in dst_subs}
    sub_take = tuple(
        slice(0, reads[(d.key, d.cut)]) if (d.key, d.cut) in reads else 0 for d in src_subs
    )  # a sub-digit the destination lacks is read at 0 (a trim)
    kept = [i for i, d in enumerate(src_subs) if (d.key, d.cut) in reads]
    position = {key: j for j, key in enumerate((d.key, d.cut) for d in dst_subs)}
    order = tuple(sorted(range(len(kept)), key=lambda k: position[(src_subs[kept[k]].key, src_subs[kept[k]].cut)]))
    expand = tuple(None if (d.key, d.cut) in held else d.count for d in dst_subs)
    live_digit = {d.factor for d in dst_digits}
    return ViewPlan(
        src_shape=tuple(f.e for f in src),
        src_take=tuple(slice(0, f.m) if i in {d.factor for d in src_digits} else 0 for i, f in enumerate(src)),
        split_shape=split_shape,
        sub_take=sub_take,
        order=order,
        expand=expand,
        dst_live=tuple(f.m if i in live_digit or (f.atom == BC and f.m > 1) else 1 for i, f in enumerate(dst)),
        dst_digits=tuple(f.m if i in live_digit else 1 for i, f in enumerate(dst)),
        dst_shape=tuple(f.e for f in dst),
        size=size(dst),
    )


def _cut(side_digits: list, subs: list) -> tuple[int, ...] | None:
    """Sub-digit sizes of one side, or None if some digit is not exactly the product of its sub-digits."""
    counts: dict[int, list[int]] = {}
    for sub in subs:
        counts.setdefault(sub.factor, []).append(sub.count)
    for d in side_digits:
        if not isinstance(d.key, str) or math.prod(counts.get(d.factor, [1])) != d.m:
            return None
    return tuple(sub.count for sub in subs)
