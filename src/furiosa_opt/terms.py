"""The arithmetic of the exact folds, shared by the CPU backend and the simulator: sums of products and
reduces, one term at a time in the order given, from zero (or the reducer's identity).

Upstream folds every output this way (`contraction_prewidened`, `reduce`): no FMA and no pairwise sums, so
f32 results depend on the order, and integers wrap. Which values are the terms, and in what order, each
caller derives on its own: the CPU backend from the mappings (`fold.py`), the simulator from the walks
stage 2 wrote (`sim/walk.py`).

    fold_products(zip(lhs_terms, rhs_terms), np.float32)   # Σ lhs·rhs, in order
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.dtypes import DType

# A fold's accumulator is read and written once per term: kept under this size (a quarter of a typical
# core's L2) it stays in cache across the terms.
ACCUMULATOR_BYTES = 256 << 10


def fold_products(terms: Iterable[tuple], acc: np.dtype) -> np.ndarray:
    """`Σ a·b` over the terms `(a, b)` in order, from zero, in the accumulator's type (operands already
    widened to it); a term `(a, b, keep)` adds only where `keep` holds. Each product rounds into one
    scratch array and adds into the accumulator in place (the same roundings as `total + a * b`, without
    two new arrays a term)."""
    total, product, shapes = np.zeros((), dtype=acc), None, None
    with np.errstate(all="ignore"):
        for a, b, *keep in terms:
            if (a.shape, b.shape, *(k.shape for k in keep)) != shapes:  # the first term, or a wider one
                shapes = (a.shape, b.shape, *(k.shape for k in keep))
                total = np.array(np.broadcast_to(total, np.broadcast_shapes(total.shape, *shapes)))
                product = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=acc)
            np.multiply(a, b, out=product)
            np.add(total, product, out=total, where=keep[0] if keep else True)
    return total


def fold_terms(lhs: np.ndarray, rhs: np.ndarray, live: np.ndarray, acc: np.dtype) -> np.ndarray:
    """[batch, outputs]: `fold_products` of `lhs` and `rhs` [batch, outputs · reduced] (each output's terms
    innermost, in order) over the terms `live` [outputs, reduced] marks."""
    outputs, reduced = live.shape
    columns = np.flatnonzero(live.any(axis=0))  # a term no output reads is skipped
    left, right = lhs.reshape(lhs.shape[0], outputs, reduced), rhs.reshape(rhs.shape[0], outputs, reduced)
    every = live[:, columns].all(axis=0)  # a term every output reads needs no mask
    terms = (
        (left[..., r], right[..., r]) if all_live else (left[..., r], right[..., r], live[:, r])
        for r, all_live in zip(columns.tolist(), every.tolist(), strict=True)
    )
    return np.broadcast_to(fold_products(terms, acc), (max(lhs.shape[0], rhs.shape[0]), outputs))


def fold_walked(
    lhs: np.ndarray, rhs: np.ndarray, widen: tuple[Callable, Callable], live: np.ndarray, terms: int, acc: np.dtype
) -> np.ndarray:
    """[batch, outputs]: `fold_terms` of two strided views [batch, output digits…, term digits…] of the
    operands as stored, whose last `terms` axes enumerate each output's terms. Each operand is widened by
    its `widen` into one contiguous array, term-major and without the axes it broadcasts (nothing is the
    size of the terms, outputs × terms per output): the widening is the copy, reading the narrow bytes
    in the view's order and writing term-major.

    A batch whose accumulator outgrows `ACCUMULATOR_BYTES` is folded a block of rows at a time (the rows
    are independent): each term then adds into an accumulator the cache still holds, and each block's
    operands widen from memory that sits together, instead of every term streaming the whole batch."""
    outputs, batch = live.shape[0], max(lhs.shape[0], rhs.shape[0])
    rows = max(1, ACCUMULATOR_BYTES // (outputs * np.dtype(acc).itemsize))
    if batch > rows:
        blocks = [slice(start, start + rows) for start in range(0, batch, rows)]
        return np.concatenate(
            [fold_walked(_rows(lhs, block), _rows(rhs, block), widen, live, terms, acc) for block in blocks]
        )
    outer, inner = lhs.shape[1 : lhs.ndim - terms], lhs.shape[lhs.ndim - terms :]
    every = live.all(axis=0)
    kept = lhs.ndim - terms  # batch and output axes, ordered for long inner loops (`inner_order`)
    order = inner_order(cells(lhs)[:kept], cells(rhs)[:kept])
    left, right = (
        np.ascontiguousarray(w(_term_major(v, terms, order))) for w, v in zip(widen, (lhs, rhs), strict=True)
    )
    masks = live.reshape(*outer, -1)[..., None].transpose(-2, -1, *range(len(outer)))  # [term, 1, outer…]
    steps = []
    for r in np.flatnonzero(live.any(axis=0)).tolist():  # a term no output reads is skipped
        at = np.unravel_index(r, inner)
        keep = None if every[r] else masks[r].transpose(order)
        steps.append((left[at], right[at]) if keep is None else (left[at], right[at], keep))
    total = fold_products(steps, acc).transpose(np.argsort(order))
    return np.broadcast_to(total, (max(lhs.shape[0], rhs.shape[0]), *outer)).reshape(-1, outputs)


def _rows(view: np.ndarray, block: slice) -> np.ndarray:
    """The block's rows of a [batch, …] view (all of a view that broadcasts one row)."""
    return view if view.shape[0] == 1 else view[block]


def inner_order(left: tuple[int, ...], right: tuple[int, ...]) -> list[int]:
    """An order of the kept axes that makes numpy's inner loop long: axes neither operand holds outside,
    then three groups from the fewest cells to the most, so the largest is innermost (numpy loops fastest
    over the last axes, and merges those that are contiguous in every array): the axes both operands hold
    (the product reads both contiguously there), those only the left holds, those only the right holds."""
    both = [i for i in range(len(left)) if left[i] > 1 and right[i] > 1]
    only_left = [i for i in range(len(left)) if left[i] > 1 and right[i] == 1]
    only_right = [i for i in range(len(left)) if right[i] > 1 and left[i] == 1]
    rest = [i for i in range(len(left)) if left[i] == 1 and right[i] == 1]
    groups = sorted((both, only_left, only_right), key=lambda g: math.prod(max(left[i], right[i]) for i in g))
    return rest + [i for group in groups for i in group]


def _term_major(view: np.ndarray, terms: int, order: list[int]) -> np.ndarray:
    """`view` with its last `terms` axes first and the others in `order` (a view: its widening copies it
    contiguous, so that each term reads one block); an axis the view broadcasts (stride 0) stays one cell
    wide, broadcast again when the terms combine."""
    first = view.ndim - terms
    return unbroadcast(view).transpose(*range(first, view.ndim), *order)


def unbroadcast(view: np.ndarray) -> np.ndarray:
    """`view` with each axis it broadcasts (stride 0) cut to one cell: what an operand holds, which numpy
    broadcasts again where the terms combine."""
    return view[tuple(slice(0, 1) if step == 0 else slice(None) for step in view.strides)]


def cells(view: np.ndarray) -> tuple[int, ...]:
    """The view's shape with each broadcast axis (stride 0) counted as one cell."""
    return tuple(1 if step == 0 else n for n, step in zip(view.shape, view.strides, strict=True))


def reduce_terms(
    terms: np.ndarray, live: np.ndarray, out_live: np.ndarray | None, step: Callable, identity
) -> np.ndarray:
    """[batch, outputs]: each output folds `acc = step(acc, x)` from `identity` over its `terms` [batch,
    outputs, reduced] where `live` [outputs, reduced] says the term is a value, one term at a time in
    order; outputs `out_live` marks as padding hold `identity`."""
    acc = np.full(terms.shape[:2], identity, dtype=terms.dtype)
    with np.errstate(all="ignore"):
        for r in np.flatnonzero(live.any(axis=0)):  # a term no output reads is skipped
            acc = np.where(live[:, r], step(acc, terms[:, :, r]), acc).astype(terms.dtype, copy=False)
    return acc if out_live is None else np.where(out_live, acc, np.asarray(identity, dtype=terms.dtype))


def widener(acc: DType, operand: DType) -> Callable[[np.ndarray], np.ndarray]:
    """How both operands widen to the accumulator: integers to i32, floats (bf16, f8) to f32 with the
    hardware rules."""
    if acc == dtypes.i32:
        return dtypes.widen_int
    return lambda values: dtypes.to_f32(values, operand)
