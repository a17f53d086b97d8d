"""The CPU backend: every kernel operation on host numpy buffers, with upstream's numeric semantics.

A value is a physical buffer in wire order with zeroed padding (docs/design.md, "Numeric semantics").
Every mapping the examples use is a mixed-radix split of axes, so a relayout is numpy views — reshape into
digits, transpose, broadcast, pad — and one copy (`mapping/views.py`); views into HBM and DM are slices;
the contraction reads its operands through views and folds in wire order (`fold.fold_views`). Only
layouts with composite atoms (`[A, B] # 12`) fall back to index maps: then a `Buf` is a base array plus
an index map (source position per position, -1 = padding reads zero), composed lazily along a chain.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from furiosa_opt.fold import ContractionPlan, contraction_plan, fold, fold_through_views, fold_views, reduce_fold
from furiosa_opt.mapping import views
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.factors import Comp, Factors, size
from furiosa_opt.mapping.relayout import check_relayout, relayout_index
from furiosa_opt.memo import ByteLru, bytes_cache

writes_in_place = True  # `window_write` may write into a buffer that `exclusive` finds alone (tracers do not)


@dataclass(eq=False)
class Buf:
    """A buffer in wire order: `base` itself; or, for a composite layout, `base` gathered through `index`;
    or, after a relayout, the live cells of `layout` as a grid (one array axis per factor, its live extent;
    broadcast axes are stride-0 views), every padding cell holding `fill`. Immutable: writes make a new one."""

    base: np.ndarray
    index: np.ndarray | None = None  # None: no pending gather
    layout: Factors | None = None  # set: `base` is the live grid of this layout
    fill: int | float = 0
    _values: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        if self.layout is not None:
            return size(self.layout)
        return len(self.base) if self.index is None else len(self.index)

    def values(self) -> np.ndarray:
        """The materialised buffer (read-only; copy before writing)."""
        if self._values is None:
            if self.layout is not None:
                live = views.live_cells(self.layout)
                placed = _full(live.shape, self.fill, self.base.dtype)
                placed[live.take] = self.base
                self._values = placed.reshape(-1)
            else:
                self._values = self.base if self.index is None else gather(self.base, self.index)
        return self._values

    def with_values(self, values: np.ndarray) -> Buf:
        """The buffer after a write of all its `values`: a new host buffer (copy on write). A device
        buffer (the NPU runtime's) writes in place instead."""
        return fresh(values)

    def grid(self, layout: Factors) -> tuple[np.ndarray, int | float] | None:
        """(live grid of `layout`, padding value) without a copy: when this buffer is that grid, or holds
        one value everywhere (a constant); else None."""
        if self.layout is layout or self.layout == layout:  # `is`: a replay passes the same object
            return self.base, self.fill
        if self.layout is None and self.index is None and len(self.base) and not any(self.base.strides):
            live = views.live_cells(layout)
            shape = tuple(t.stop for t in live.take)
            return np.broadcast_to(self.base[:1].reshape((1,) * len(shape)), shape), self.base[0]
        return None


def _full(shape: tuple[int, ...], value: int | float, dtype: np.dtype) -> np.ndarray:
    """`np.full(shape, value, dtype)`, filled by the bits of `value` as that dtype (numpy fills a dtype of
    its own, bfloat16, cell by cell through a cast: 20× slower), from zeroed memory when they are zeros.

    >>> _full((2,), 1.5, np.dtype(np.float32)).tolist()
    [1.5, 1.5]
    """
    one = np.empty((), dtype)
    np.copyto(one, value, casting="unsafe")  # the cast `np.full` makes
    bits = _bits(one)
    if bits.dtype.kind == "u" and not bits:  # all bits zero (not -0.0): memory the system zeroed
        return np.zeros(shape, dtype)
    out = np.empty(shape, dtype)
    _bits(out).fill(bits)
    return out


def _grid(buf: object, layout: Factors) -> tuple[np.ndarray, int | float] | None:
    return buf.grid(layout) if isinstance(buf, Buf) else None


def exclusive(buf: object) -> bool:
    """Whether a write may go into `buf`'s array in place: a plain host buffer (no gather, no grid) whose
    caller's one local is all that holds it (the caller has taken it out of its tensor), and which alone
    holds its array (writable, its own memory: no view of it or of a user's array exists). CPython's
    reference counts say so, as numpy's `resize(refcheck=True)` asks them, against the counts this same
    call path gives for a buffer known to be alone (`_ALONE`); nothing here may hold the array meanwhile."""
    if type(buf) is not Buf or buf.index is not None or buf.layout is not None or not _own(buf.base):
        return False
    return _holders(buf) == _ALONE


def _own(array: np.ndarray) -> bool:
    """Writable, C-contiguous memory of the array's own (not a view)."""
    flags = array.flags
    return flags.writeable and flags.owndata and flags.c_contiguous


def _holders(buf: Buf) -> tuple[int, int]:
    """References to `buf` and to its array, the ones this call path makes included."""
    array = buf.base
    return sys.getrefcount(buf), sys.getrefcount(array) - (buf._values is array)


def _alone() -> tuple[int, int]:
    """`_holders` of a buffer held by one local of `exclusive`'s caller and holding its own array."""

    def caller_of_holders(buf: Buf) -> tuple[int, int]:  # stands where `exclusive` stands
        return _holders(buf)

    lone = Buf(np.zeros(1))
    return caller_of_holders(lone)


_ALONE = _alone()


def gather(base: np.ndarray, index: np.ndarray) -> np.ndarray:
    out = base[np.maximum(index, 0)]
    out[index < 0] = 0
    return out


def fresh(values: np.ndarray) -> Buf:
    strided = isinstance(values, np.ndarray) and values.ndim and not values.flags.c_contiguous
    return Buf(copied(values) if strided else np.ascontiguousarray(values))


def copied(values: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `values`, moved as unsigned integers of the same size (numpy copies a
    strided array of a dtype of its own, bfloat16, cell by cell: a broadcast 128 K cells took 76 µs, not 3).

    >>> copied(np.broadcast_to(np.float32(2), (3,))).tolist()
    [2.0, 2.0, 2.0]
    """
    out = np.empty(values.shape, values.dtype)  # its own memory: a later write may go in place
    np.copyto(_bits(out), _bits(values))
    return out


def _bits(array: np.ndarray) -> np.ndarray:
    """`array` viewed as unsigned integers of its cells' size, which numpy moves in bulk (a dtype of its
    own, bfloat16, it moves cell by cell through a cast); the array itself for other sizes."""
    size = array.dtype.itemsize
    return array if size not in (1, 2, 4, 8) or array.dtype.hasobject else array.view(f"u{size}")


def constant(value: int | float, storage: np.dtype, count: int) -> Buf:
    """`count` cells of one value: a stride-0 view, so elementwise work on it is done once."""
    return Buf(np.broadcast_to(np.array(value, dtype=storage), (count,)))


def zeros(storage: np.dtype, count: int) -> Buf:
    return constant(0, storage, count)


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
    """`buf` laid out as `dst`: the live cells of `dst` as views of `buf`'s (no copy; padding is zero);
    an index map only where views cannot say it."""
    if src == dst and all(f.m == f.e and not isinstance(f.atom, Comp) for f in src):
        # the same layout without padding: the same values (immutable; a device buffer's are a snapshot).
        # With padding, the move still zeroes it, as upstream's relayout into a fresh tensor does.
        return buf if isinstance(buf, Buf) else Buf(buf.values())
    check_relayout(src, dst, broadcast, drop)
    view = views.plan(src, dst)
    if view is None:
        base, index = _indexed(buf)
        return Buf(base, compose(index, relayout_index(src, dst, broadcast, drop)))
    cells = _live(buf, src)
    live = view.source.view_live(cells) if cells is not None else view.source.view(buf.values())
    return Buf(view.target.grid(live), layout=dst)


def _live(buf: object, layout: Factors) -> np.ndarray | None:
    """The live cells of `layout` in `buf`, as a view: its grid, or a box of the grid of the layout the
    buffer was made in, when `layout` relabels the same positions (a reshape of a broadcast buffer then
    reads one copy, not all of them)."""
    held = _grid(buf, layout)
    if held is not None:
        return held[0]
    if type(buf) is not Buf or buf.layout is None:
        return None
    box = views.regrid(buf.layout, layout)
    return None if box is None else box.apply(buf.base)


def _indexed(buf: object) -> tuple[np.ndarray, np.ndarray | None]:
    """(base, pending index) of a buffer, a grid or device buffer materialised first."""
    if isinstance(buf, Buf) and buf.layout is None:
        return buf.base, buf.index
    return buf.values(), None


def interleave(lhs: Buf, rhs: Buf, outer: int, inner: int) -> Buf:
    """`[outer, 2, inner]`: each outer block of `lhs`, then the same block of `rhs` (a pair-mode begin)."""
    return fresh(np.stack([lhs.values().reshape(outer, inner), rhs.values().reshape(outer, inner)], axis=1).ravel())


def half(buf: Buf, outer: int, index: int) -> Buf:
    """Group `index` of a `[outer, 2, rest]` buffer (a pair-mode unzip)."""
    return fresh(np.ascontiguousarray(buf.values().reshape(outer, 2, -1)[:, index]).ravel())


def reduce(buf: Buf, src: Factors, dst: Factors, step, identity, broadcast: bool) -> Buf:
    """`buf` folded from `src` into `dst` with `step` (upstream's `reduce`, order and identity as in
    `fold.reduce_fold`)."""
    return fresh(reduce_fold(buf.values()[None], src, dst, step, identity, broadcast)[0])


def elementwise(fn, *bufs: Buf) -> Buf:
    """Apply `fn` to every physical cell (padding included, as upstream's `map`/`zip_with` do).

    Operands that are the live grid of one layout (or constants) are computed on the grid: once per
    distinct value along broadcast axes, replicated as a view, and once for the padding value."""
    held = grids_of(bufs)
    with np.errstate(all="ignore"):
        if held is None:
            return fresh(fn(*(b.values() for b in bufs)))
        return on_grids(fn, held, fn(*(np.full(1, f, dtype=g.dtype) for g, f in held[1]))[0])


def grids_of(bufs: tuple) -> tuple[Factors, list[tuple[np.ndarray, int | float]]] | None:
    """(layout, each operand's (live grid, padding value)) when every operand is the live grid of one
    layout or a constant; else None."""
    layout = next((b.layout for b in bufs if isinstance(b, Buf) and b.layout is not None), None)
    held = [_grid(b, layout) for b in bufs] if layout is not None else [None]
    return None if any(h is None for h in held) else (layout, held)


def on_grids(fn, held: tuple[Factors, list[tuple[np.ndarray, int | float]]], fill: int | float) -> Buf:
    """`fn` over the operands' grids (`grids_of`), its padding value `fill` (what `fn` gives for theirs)."""
    with np.errstate(all="ignore"):
        return Buf(_once(fn, [g for g, _ in held[1]]), layout=held[0], fill=fill)


def _once(fn, grids: list[np.ndarray]) -> np.ndarray:
    """`fn` over same-rank grids, computed once along axes that every operand broadcasts (stride 0)."""
    keep, shape = _computed_once(tuple((g.shape, g.strides) for g in grids))
    once = fn(*(g[keep] for g in grids))
    if once.shape == shape:  # nothing computed once: the result itself, read-only as a broadcast is
        once.flags.writeable = False
        return once
    if not once.flags.c_contiguous:
        return np.broadcast_to(once, shape)
    # what `np.broadcast_to` gives (stride 0 along the axes computed once), without its checks
    strides = tuple(0 if n != m else s for n, m, s in zip(once.shape, shape, once.strides, strict=True))
    spread = np.ndarray(shape, once.dtype, buffer=once, strides=strides)
    spread.flags.writeable = False
    return spread


@functools.lru_cache(maxsize=4096)
def _computed_once(grids: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]) -> tuple[tuple[slice, ...], tuple]:
    """For grids of these (shape, strides): the index keeping one cell along each axis that every grid
    broadcasts, and the shape they broadcast to (a replayed step meets the same grids on every launch:
    worked out once, not in ~4 µs of Python each time)."""
    shape = np.broadcast_shapes(*(s for s, _ in grids))
    keep = tuple(
        slice(0, 1) if all(s[i] == 1 or t[i] == 0 for s, t in grids) else slice(None) for i in range(len(shape))
    )
    return keep, shape


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
    grid = _live_grid(buf.values(), outer, element, window, live, writeable=False)
    if outer == 1:  # the live cells alone, as the view's grid (a row of a table-sized view is a row)
        return Buf(np.array(grid[0]), layout=view)
    out = np.zeros((outer, *live.shape), dtype=grid.dtype)  # padding reads zero (zeros cost no pages)
    out[(slice(None), *live.take)] = grid
    return Buf(out.reshape(-1))


def _live_grid(
    values: np.ndarray, outer: int, element: int, window: int, live: views.Live, writeable: bool
) -> np.ndarray:
    """The live cells of a view at `window` of each of a buffer's `outer` blocks of `element` positions,
    [outer, live…], as a strided view of `values` (cells past the last live one are never touched)."""
    region = values[window : (outer - 1) * element + window + live.extent]
    item = region.strides[0]  # one position: one element
    steps, step = [], item
    for n in reversed(live.shape):
        steps.append(step)
        step *= n
    counts, steps = (outer, *(t.stop for t in live.take)), (element * item, *reversed(steps))
    if not region.flags.c_contiguous:
        return as_strided(region, counts, steps, writeable=writeable)
    grid = np.ndarray(counts, region.dtype, buffer=region, strides=steps)  # as_strided's view, without its µs
    grid.flags.writeable = writeable and region.flags.writeable
    return grid


def window_write(
    base: Buf, outer: int, element: int, window: int, view: Factors, src: Buf, in_place: bool = False
) -> Buf:
    """The base buffer with the live cells of a view (`src`, laid out as [outer, view]) written in: a new
    buffer, or with `in_place` (which `exclusive` allows) the same array written into."""
    written = base.values() if in_place else copied(base.values())
    live = _window(element, window, view)
    if live is None:
        index = window_index(outer, element, window, view)
        written[index[index >= 0]] = src.values()[index >= 0]
        return base.with_values(written)
    # into the live cells alone (a row of a table-sized view writes a row)
    _live_grid(written, outer, element, window, live, writeable=True)[...] = _live_cells(src, outer, live, view)
    return base.with_values(written)


def _live_cells(src: Buf, outer: int, live: views.Live, view: Factors) -> np.ndarray:
    """`src`'s cells at the view's live positions, [outer, live…]: straight from its grid when it is that
    grid (a one-row write into a table-sized view then reads one row, not the table)."""
    grid = src.grid(view) if outer == 1 else None
    if grid is not None:
        return grid[0].reshape(1, *grid[0].shape)
    return src.values().reshape(outer, *live.shape)[(slice(None), *live.take)]


# ---- indirect DMA: gather and scatter -------------------------------------------------------------


def _rows(raw: np.ndarray, divisor: int, rows: int) -> np.ndarray:
    """The rows an index's cells select (offsets over `divisor`); IndexError names the first bad cell."""
    raw = raw.astype(np.int64)
    bad = np.flatnonzero((raw < 0) | (raw // divisor >= rows))
    if len(bad):
        cell, value = int(bad[0]), int(raw[bad[0]])
        reason = "a negative offset" if value < 0 else f"row {value // divisor}, past the {rows} rows"
        raise IndexError(f"index cell {cell} holds {value}: {reason}")
    return raw // divisor


def dma_gather(
    table: Buf, table_map: Factors, index: Buf, index_map: Factors, out_map: Factors, axes, divisor: int
) -> Buf:
    """`out[index cells, payload] = table[row(index cell), payload]` (`axes`: a `verify.indirect.Indirect`),
    each row a contiguous block of the table read densely as [gather axis, payload]."""
    selected = axes.selected
    rows = relayout(table, table_map, views.dense((selected, *axes.payload)), False).values().reshape(selected[1], -1)
    raw = relayout(index, index_map, views.dense(axes.index), False).values()
    picked = rows[_rows(raw, divisor, selected[1])]
    return relayout(Buf(picked.reshape(-1)), views.dense((*axes.index, *axes.payload)), out_map, False)


def dma_scatter(
    source: Buf, source_map: Factors, index: Buf, index_map: Factors, out: Buf, out_map: Factors, axes, divisor: int
) -> Buf:
    """`out` (laid out as `out_map`) with row `row(key cell)` of its scatter axis replaced by the source's
    block of that key cell; where two key cells name one row, the later one (in key order) wins."""
    key = views.dense((*axes.index, *axes.payload))
    blocks = relayout(source, source_map, key, False).values().reshape(math.prod(n for _, n in axes.index), -1)
    rows = _rows(relayout(index, index_map, views.dense(axes.index), False).values(), divisor, axes.selected[1])
    dense = views.dense((axes.selected, *axes.payload))
    target = np.array(relayout(out, out_map, dense, False).values()).reshape(axes.selected[1], -1)
    last = len(rows) - 1 - np.unique(rows[::-1], return_index=True)[1]  # each row's last writer
    target[rows[last]] = blocks[last]
    return relayout(Buf(target.reshape(-1)), dense, out_map, False)


# ---- contraction ----------------------------------------------------------------------------------


def contraction(
    lhs: Buf, lhs_map: Factors, rhs: Buf, rhs_map: Factors, pre_reduce: Factors, out: Factors, widen, acc: np.dtype
) -> Buf:
    """The fused contraction onto `out`: every output cell folds its `pre_reduce` terms in order."""
    check_relayout(lhs_map, pre_reduce, True, True)
    check_relayout(rhs_map, pre_reduce, True, True)
    through_views = fold_views(lhs_map, rhs_map, pre_reduce, out)
    if through_views is not None:
        grids = _grid(lhs, lhs_map), _grid(rhs, rhs_map)
        if None not in grids:  # widen the live cells only, once per distinct value
            return fresh(fold_through_views(through_views, grids[0][0], grids[1][0], widen, acc, live=True))
        return fresh(fold_through_views(through_views, lhs.values(), rhs.values(), widen, acc))
    plan = contraction_plan(lhs_map, rhs_map, pre_reduce, out)
    return contract(lhs, rhs, plan, size(out), widen, acc)


def contract(lhs: Buf, rhs: Buf, plan: ContractionPlan, out_size: int, widen, acc: np.dtype) -> Buf:
    """The fused fold of `plan` (no FMA, no pairwise sums: upstream's `contraction_prewidened`)."""
    (lhs_base, lhs_index), (rhs_base, rhs_index) = _indexed(lhs), _indexed(rhs)
    lhs_steps, rhs_steps = _steps(lhs_base, lhs_index, plan.lhs), _steps(rhs_base, rhs_index, plan.rhs)
    return fresh(fold(_widened(lhs_base, widen), lhs_steps, _widened(rhs_base, widen), rhs_steps, plan, out_size, acc))


def _widened(base: np.ndarray, widen) -> np.ndarray:
    """The widened base with a trailing zero: what a padding position (-1) reads."""
    wide = widen(base)
    return np.concatenate([wide, np.zeros(1, dtype=wide.dtype)])


def _steps(base: np.ndarray, index: np.ndarray | None, steps: np.ndarray) -> np.ndarray:
    if index is None:
        return steps
    return _padding_to_end(compose(index, steps), len(base))


def _padding_to_end(index: np.ndarray, length: int) -> np.ndarray:
    return _memo((index,), lambda: np.where(index >= 0, index, length))
