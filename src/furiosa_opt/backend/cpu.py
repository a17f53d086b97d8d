"""The CPU backend: every kernel operation on host numpy buffers, with upstream's numeric semantics.

A value is a physical buffer in wire order with zeroed padding (docs/design.md, "Numeric semantics").
Every mapping the examples use is a mixed-radix split of axes, so a relayout is numpy views — reshape into
digits, transpose, broadcast, pad — and one copy (`mapping/views.py`); views into HBM and DM are slices;
the contraction reads its operands through views and folds in wire order (`fold.fold_views`). Only
layouts with composite atoms (`[A, B] # 12`) fall back to index maps: then a `Buf` is a base array plus
an index map (source position per position, -1 = padding reads zero), composed lazily along a chain.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from furiosa_opt.fold import ContractionPlan, contraction_plan, fold, fold_through_views, fold_views
from furiosa_opt.mapping import views
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.factors import Factors, size
from furiosa_opt.mapping.relayout import check_relayout, relayout_index
from furiosa_opt.memo import ByteLru, bytes_cache


@dataclass(eq=False)
class Buf:
    base: np.ndarray
    index: np.ndarray | None = None  # None: the base itself
    _values: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.base) if self.index is None else len(self.index)

    def values(self) -> np.ndarray:
        """The materialised buffer (read-only; copy before writing)."""
        if self._values is None:
            self._values = self.base if self.index is None else gather(self.base, self.index)
        return self._values

    def with_values(self, values: np.ndarray) -> Buf:
        """The buffer after a write of all its `values`: a new host buffer (copy on write). A device
        buffer (the NPU runtime's) writes in place instead."""
        return fresh(values)


def gather(base: np.ndarray, index: np.ndarray) -> np.ndarray:
    out = base[np.maximum(index, 0)]
    out[index < 0] = 0
    return out


def fresh(values: np.ndarray) -> Buf:
    return Buf(np.ascontiguousarray(values))


def zeros(storage: np.dtype, count: int) -> Buf:
    return Buf(np.zeros(count, dtype=storage))


def constant(value: int | float, storage: np.dtype, count: int) -> Buf:
    return Buf(np.full(count, value, dtype=storage))


def record(name: str, operands: tuple, results: tuple, **attrs) -> None:
    """The CPU backend executes as it goes; there is nothing to record."""


_MEMO = ByteLru(512 << 20)


def _memo(inputs: tuple[np.ndarray, ...], compute) -> np.ndarray:
    """Results derived from (cached, immutable) index arrays, keyed by their identity."""
    key = tuple(id(a) for a in inputs)
    hit = _MEMO.get(key)
    if hit is not None and all(x is y for x, y in zip(hit[0], inputs, strict=True)):
        return hit[1]
    result = compute()
    result.flags.writeable = False
    _MEMO.put(key, (inputs, result))  # the inputs are kept so that their ids stay theirs
    return result


def compose(inner: np.ndarray | None, outer: np.ndarray) -> np.ndarray:
    """Index of `base[inner][outer]` into `base` (-1 stays -1)."""
    if inner is None:
        return outer
    return _memo((inner, outer), lambda: np.where(outer >= 0, inner[np.maximum(outer, 0)], -1))


def relayout(buf: Buf, src: Factors, dst: Factors, broadcast: bool, drop: bool = False) -> Buf:
    """`buf` laid out as `dst`: numpy views and one copy; an index map only where views cannot say it."""
    if src == dst:  # the same layout: the same values (a device buffer's are a snapshot)
        return Buf(buf.values())
    check_relayout(src, dst, broadcast, drop)
    view = views.plan(src, dst)
    if view is None:
        return Buf(buf.base, compose(buf.index, relayout_index(src, dst, broadcast, drop)))
    return Buf(view.apply(buf.values()))


def elementwise(fn, *bufs: Buf) -> Buf:
    """Apply `fn` to every physical cell (padding included, as upstream's `map`/`zip_with` do)."""
    with np.errstate(all="ignore"):
        return fresh(fn(*(b.values() for b in bufs)))


# ---- views ------------------------------------------------------------------------------------------


@bytes_cache(256 << 20)
def window_index(outer: int, element: int, window: int, view: Factors) -> np.ndarray:
    """Base positions of a view [outer, view] whose cell p of each outer block sits at window + p (for
    views with composite atoms; the others move as slices, `_window`)."""
    layout = evaluate(view, np.arange(size(view), dtype=np.int64))
    local = np.where(layout.live, window + np.arange(size(view)), -1)
    if local.max(initial=-1) >= element:
        raise IndexError(f"the view reaches position {int(local.max())} of an element of {element} positions")
    blocks = (np.arange(outer, dtype=np.int64) * element)[:, None]
    index = np.where(local >= 0, blocks + local, -1).ravel()
    index.flags.writeable = False
    return index


def _window(element: int, window: int, view: Factors) -> views.Live | None:
    """The view's live cells, checked to stay inside the element; None for views with composite atoms."""
    live = views.live_cells(view)
    if live is not None and window + live.extent > element:
        raise IndexError(f"the view reaches position {window + live.extent - 1} of an element of {element} positions")
    return live


def window_read(buf: Buf, outer: int, element: int, window: int, view: Factors) -> Buf:
    live = _window(element, window, view)
    if live is None:
        return Buf(buf.base, compose(buf.index, window_index(outer, element, window, view)))
    span = min(size(view), element - window)
    seen = np.zeros((outer, size(view)), dtype=buf.values().dtype)
    seen[:, :span] = buf.values().reshape(outer, element)[:, window : window + span]
    out = np.zeros((outer, *live.shape), dtype=seen.dtype)
    cells = (slice(None), *live.take)
    out[cells] = seen.reshape(outer, *live.shape)[cells]
    return Buf(out.reshape(-1))


def window_write(base: Buf, outer: int, element: int, window: int, view: Factors, src: Buf) -> Buf:
    """The base buffer with the live cells of a view (`src`, laid out as [outer, view]) written in."""
    written = base.values().copy()
    live = _window(element, window, view)
    if live is None:
        index = window_index(outer, element, window, view)
        written[index[index >= 0]] = src.values()[index >= 0]
        return base.with_values(written)
    span = min(size(view), element - window)
    region = np.zeros((outer, size(view)), dtype=written.dtype)
    blocks = written.reshape(outer, element)
    region[:, :span] = blocks[:, window : window + span]
    cells = (slice(None), *live.take)
    region.reshape(outer, *live.shape)[cells] = src.values().reshape(outer, *live.shape)[cells]
    blocks[:, window : window + span] = region[:, :span]
    return base.with_values(written)


# ---- contraction ----------------------------------------------------------------------------------


def contraction(
    lhs: Buf, lhs_map: Factors, rhs: Buf, rhs_map: Factors, pre_reduce: Factors, out: Factors, widen, acc: np.dtype
) -> Buf:
    """The fused contraction onto `out`: every output cell folds its `pre_reduce` terms in order."""
    check_relayout(lhs_map, pre_reduce, True, True)
    check_relayout(rhs_map, pre_reduce, True, True)
    through_views = fold_views(lhs_map, rhs_map, pre_reduce, out)
    if through_views is not None:
        return fresh(fold_through_views(through_views, widen(lhs.values()), widen(rhs.values()), acc))
    plan = contraction_plan(lhs_map, rhs_map, pre_reduce, out)
    return contract(lhs, rhs, plan, size(out), widen, acc)


def contract(lhs: Buf, rhs: Buf, plan: ContractionPlan, out_size: int, widen, acc: np.dtype) -> Buf:
    """The fused fold of `plan` (no FMA, no pairwise sums: upstream's `contraction_prewidened`)."""
    lhs_base, rhs_base = _widened(lhs, widen), _widened(rhs, widen)
    return fresh(fold(lhs_base, _steps(lhs, plan.lhs), rhs_base, _steps(rhs, plan.rhs), plan, out_size, acc))


def _widened(buf: Buf, widen) -> np.ndarray:
    """The widened base with a trailing zero: what a padding position (-1) reads."""
    wide = widen(buf.base)
    return np.concatenate([wide, np.zeros(1, dtype=wide.dtype)])


def _steps(buf: Buf, steps: np.ndarray) -> np.ndarray:
    if buf.index is None:
        return steps
    composed = compose(buf.index, steps)
    return _padding_to_end(composed, len(buf.base))


def _padding_to_end(index: np.ndarray, length: int) -> np.ndarray:
    return _memo((index,), lambda: np.where(index >= 0, index, length))
