"""The numbers a Tensor Unit engine reads to move a stream, applied with numpy views: live boxes and walks.

Stage 2 (`compiler/lower/walks.py`) is the one place where mappings become these numbers; the simulator
reads only them, so a wrong translation from a layout to numbers shows up as a difference between the
backends instead of being made twice.

* A **box** is a layout's digits, outermost first, as `[extent, live, extent, live, …]`: the layout has
  `Π extent` positions, and a position holds a value when every digit is below its live count (the
  `live`, `target`, `terms`, `source` fields).
* A **walk** moves a buffer into a new layout: one loop per entry, `[size, stride, …]` outermost first
  over the source's positions, `Π size` destination positions in all (a stride of 0 broadcasts). Where a
  layout is not a mixed-radix split (composite atoms), stage 2 writes a **table** instead: the source
  position of each destination position, -1 at padding.

    gather(values, walk=[8, 1, 4, 8], table=[], positions=32, live=None)   # a 4×8 matrix transposed
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
from numpy.lib.stride_tricks import as_strided

from furiosa_opt.sim.memory import Fault


def pairs(flat: list[int]) -> list[tuple[int, int]]:
    """`[a, b, c, d]` as `[(a, b), (c, d)]`: a box's or a walk's entries."""
    return list(zip(flat[::2], flat[1::2], strict=True))


def box_mask(box: list[int]) -> np.ndarray | None:
    """Which positions of the layout hold a value (None: all do), one outer AND per digit."""
    if all(extent == live for extent, live in pairs(box)):
        return None
    mask = np.ones(1, dtype=bool)
    for extent, live in pairs(box):
        mask = (mask[:, None] & (np.arange(extent) < live)).ravel()
    return mask


def extent(walk: list[int]) -> int:
    """Source positions a walk's loops reach: one past its furthest read (over-reads at padding included)."""
    return 1 + sum((n - 1) * s for n, s in pairs(walk) if n > 0)


def gather(
    values: np.ndarray, walk: list[int], table: list[int], positions: int, live: np.ndarray | None
) -> np.ndarray:
    """`values` [batch, source positions] (or a stream's digits, `walked`) moved into the destination
    layout [batch, `positions`]: by the walk (a strided view, one copy; none when the walk reads every
    position in place) or the table, zero where `live` says the destination is padding."""
    batch, visits = values.shape[0], len(table) if table else math.prod(walk[::2])
    if visits != positions or (live is not None and len(live) != positions):
        raise Fault(f"a walk visits {visits} positions, its destination has {positions}")
    in_place = not table and _in_order(pairs(walk)) and math.prod(values.shape[1:]) == positions
    if values.ndim > 2 and (table or (in_place and live is not None)):
        values = values.reshape(batch, -1)  # a stream's digits (`walked`), as its positions
    if table:
        index = np.asarray(table, dtype=np.int64)
        if index.size and not -1 <= index.min() <= index.max() < values.shape[1]:
            raise Fault(f"a table reads position {index.max()} of a source of {values.shape[1]}")
        out = values[:, np.maximum(index, 0)]
        out[:, index < 0] = 0
    elif in_place:
        out = values  # every position read where it is: nothing moves (a stream's digits stay)
    else:
        out = np.array(walked(values, pairs(walk))).reshape(batch, -1).view(values.dtype)  # the one copy
    if live is not None:
        out = np.where(live, out, np.zeros((), out.dtype))
    return out


def _in_order(loops: list[tuple[int, int]]) -> bool:
    """Whether the loops read the source's positions in their own order, each once."""
    place = 1
    for n, stride in reversed(loops):
        if n != 1 and stride != place:
            return False
        place *= n
    return True


def walked(values: np.ndarray, loops: list[tuple[int, int]]) -> np.ndarray:
    """`values` [batch, source positions] (or [batch, digits…] whose row-major order is the positions, a
    fetch that rereads: `stream.Stream`) seen through the loops: a strided view [batch, loop sizes…] of
    its bits (as_strided keeps numpy's own dtypes only, not bf16 or f8; `.view(dtype)` of a copy gives
    them back). An over-read at padding walks past the end and reads zeros."""
    batch, reach = values.shape[0], extent([x for loop in loops for x in loop])
    if values.ndim > 2:
        steps = _on_digits(values.shape[1:], loops) if reach <= math.prod(values.shape[1:]) else None
        if steps is not None:
            bits = values.view(f"u{values.itemsize}")
            strides = [sum(c * b for c, b in zip(digits, bits.strides[1:], strict=True)) for digits in steps]
            return as_strided(bits, (batch, *(n for n, _ in loops)), (bits.strides[0], *strides))
        values = values.reshape(batch, -1)  # the loops carry between digits: the positions, copied
    source = np.ascontiguousarray(values)
    if reach > source.shape[1]:
        source = np.concatenate([source, np.zeros((batch, reach - source.shape[1]), source.dtype)], axis=1)
    bits = source.view(f"u{source.itemsize}")
    item = bits.strides[1]
    return as_strided(bits, (batch, *(n for n, _ in loops)), (bits.strides[0], *(s * item for _, s in loops)))


def _on_digits(shape: tuple[int, ...], loops: list[tuple[int, int]]) -> list[list[int]] | None:
    """Each loop's step as steps of the row-major digits of `shape` (its stride in mixed radix), or None
    when the loops together can carry from one digit into the next. Without a carry, a position the loops
    reach has exactly the digits the steps add up to, so each loop moves by the digits' strides."""
    places = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    steps, reach = [], [0] * len(shape)
    for n, stride in loops:
        if stride < 0:
            return None
        digits = []
        for place in places:
            digit, stride = divmod(stride, place)
            digits.append(digit)
        reach = [r + (n - 1) * d for r, d in zip(reach, digits, strict=True)]
        steps.append(digits)
    return steps if all(r < size for r, size in zip(reach, shape, strict=True)) else None


def refined(walks: list[list[int]], inner: int) -> list[list[tuple[int, int]]] | None:
    """The walks' loops cut at every boundary either walk has and at `inner` (the positions below it are
    one output's terms), so that all have the same loop sizes, outermost first; None where a boundary
    falls inside a loop that it does not divide (the fold then takes a copy instead)."""
    if any(n < 1 for walk in walks for n in walk[::2]):
        return None
    bounds = {1, inner}
    for walk in walks:
        span = 1
        for n, _ in reversed(pairs(walk)):
            span *= n
            bounds.add(span)
    chain = sorted(bounds)
    if chain[-1] != math.prod(walks[0][::2]) or any(b % a for a, b in pairwise(chain)):
        return None
    out = []
    for walk in walks:
        loops, span = [], 1
        for n, stride in reversed([(n, s) for n, s in pairs(walk) if n != 1]):  # a loop of one step moves nothing
            cuts = [b for b in chain if span < b <= span * n]
            if not cuts or cuts[-1] != span * n:
                return None
            low = span
            for b in cuts:
                loops.append((b // low, stride * (low // span)))
                low = b
            span *= n
        out.append(loops[::-1])
    return out


def inner_axes(loops: list[tuple[int, int]], inner: int) -> int:
    """How many of the (refined) loops, innermost first, span exactly `inner` positions."""
    axes, span = 0, 1
    while span < inner:
        axes, span = axes + 1, span * loops[-1 - axes][0]
    return axes
