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
    """`values` [batch, source positions] moved into the destination layout [batch, `positions`]: by the
    walk (a strided view, one copy) or the table, zero where `live` says the destination is padding."""
    batch, visits = values.shape[0], len(table) if table else math.prod(walk[::2])
    if visits != positions or (live is not None and len(live) != positions):
        raise Fault(f"a walk visits {visits} positions, its destination has {positions}")
    if table:
        index = np.asarray(table, dtype=np.int64)
        if index.size and not -1 <= index.min() <= index.max() < values.shape[1]:
            raise Fault(f"a table reads position {index.max()} of a source of {values.shape[1]}")
        out = values[:, np.maximum(index, 0)]
        out[:, index < 0] = 0
    else:
        loops = pairs(walk)
        reach = extent(walk)  # an over-read at padding walks past the end: it reads zeros
        source = np.ascontiguousarray(values)
        if reach > source.shape[1]:
            source = np.concatenate([source, np.zeros((batch, reach - source.shape[1]), source.dtype)], axis=1)
        bits = source.view(f"u{source.itemsize}")  # as_strided keeps numpy's own dtypes only (not bf16, f8)
        item = bits.strides[1]
        view = as_strided(bits, (batch, *(n for n, _ in loops)), (bits.strides[0], *(s * item for _, s in loops)))
        out = np.array(view).reshape(batch, -1).view(values.dtype)  # the one copy
    if live is not None:
        out = np.where(live, out, np.zeros((), out.dtype))
    return out
