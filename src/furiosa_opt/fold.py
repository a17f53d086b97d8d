"""The exact folds shared by the CPU backend and the simulator: the Contraction Engine's (which terms each
output cell sums and in what order, `contraction_plan`, and the sequential `fold`) and the Vector
Engine's reducers (`reduce_fold`).

Upstream folds every output from zero, one term at a time, in the wire order of the contracted positions
(`contraction_prewidened`): no FMA and no pairwise sums, so f32 results depend on that order, and
integers wrap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from furiosa_opt.mapping.algebra import divide_relaxed, pair, remove_padding
from furiosa_opt.mapping.expr import Mapping
from furiosa_opt.mapping.factors import BC, Factors, size
from furiosa_opt.mapping.relayout import live_mask, relaid, relayout_index
from furiosa_opt.mapping.views import Source, Target, joint, layout_source, layout_target
from furiosa_opt.memo import bytes_cache
from furiosa_opt.terms import cells, fold_products, inner_order, reduce_terms, unbroadcast


@dataclass(frozen=True)
class ContractionPlan:
    out_live: np.ndarray  # output positions that receive a sum
    steps: int  # terms per output
    lhs: np.ndarray  # flat (steps × outputs): operand positions, step-major, in fold order
    rhs: np.ndarray


@bytes_cache(256 << 20)
def contraction_plan(lhs_map: Factors, rhs_map: Factors, pre_reduce: Factors, out: Factors) -> ContractionPlan:
    """For each output cell, the operand positions of its contributions in `pre_reduce` wire order.

    Each operand (and the output) is read at every `pre_reduce` position by a broadcasting relayout:
    the stream lacks the Lane axes, the TRF lacks the stream-only axes, the output lacks the contracted
    ones."""
    out_pos = relayout_index(out, pre_reduce, True, True)
    live = np.flatnonzero(out_pos >= 0)
    out_live = out_pos[live]
    order = np.argsort(out_live, kind="stable")  # stable: keeps pre_reduce order within each output
    grouped = out_live[order]
    steps = int(np.count_nonzero(grouped == grouped[0])) if len(grouped) else 0
    table = grouped.reshape(-1, steps) if steps else grouped.reshape(0, 0)
    if steps and not (table == table[:, :1]).all():
        raise ValueError("a contraction whose outputs sum different numbers of terms")
    picked = live[order]

    def step_major(operand: Factors) -> np.ndarray:
        positions = relayout_index(operand, pre_reduce, True, True)[picked]
        flat = positions.reshape(-1, steps).T.ravel() if steps else positions
        flat.flags.writeable = False
        return flat

    return ContractionPlan(table[:, 0].copy() if steps else grouped, steps, step_major(lhs_map), step_major(rhs_map))


def fold(
    lhs: np.ndarray,
    lhs_steps: np.ndarray,
    rhs: np.ndarray,
    rhs_steps: np.ndarray,
    plan: ContractionPlan,
    out_size: int,
    acc: np.dtype,
) -> np.ndarray:
    """`out[..., o] = Σ lhs[..., i]·rhs[..., j]` over the plan's terms, folded in order from zero.

    The operands are widened already, with leading batch axes (the simulator's slices) allowed; the step
    indices are the plan's positions composed with any pending index, padding pointing at a zero."""
    outputs = len(plan.out_live)
    lhs_by_step, rhs_by_step = lhs_steps.reshape(plan.steps, outputs), rhs_steps.reshape(plan.steps, outputs)
    steps = zip(lhs_by_step, rhs_by_step, strict=True)
    total = fold_products(((lhs[..., a], rhs[..., b]) for a, b in steps), acc)
    total = np.broadcast_to(total, (*lhs.shape[:-1], outputs))
    result = np.zeros((*lhs.shape[:-1], out_size), dtype=acc)
    result[..., plan.out_live] = total
    return result


@dataclass(frozen=True)
class FoldViews:
    """A contraction read through views: both operands as `[reduced…, kept…]` sub-digit views of the
    joint layout, folded over the reduced ones in wire order, then placed into the output layout."""

    lhs: Source
    rhs: Source
    reduced: tuple[int, ...]  # the contracted sub-digits' counts, in `pre_reduce` wire order
    out: Target  # the kept sub-digits (in `pre_reduce` order) placed into the output layout
    kept_order: tuple[int, ...]  # kept sub-digits from `pre_reduce` order to the output's order


@lru_cache(maxsize=256)
def fold_views(lhs_map: Factors, rhs_map: Factors, pre_reduce: Factors, out: Factors) -> FoldViews | None:
    """The contraction as views, or None where views cannot express it (composites, ragged cuts, a
    broadcast factor inside `pre_reduce`, an output axis the contraction does not produce)."""
    if any(f.atom == BC and f.m > 1 for f in pre_reduce):
        return None
    subs = joint(pre_reduce, lhs_map, rhs_map, out)
    if subs is None:
        return None
    pre_subs, _, _, out_subs = subs
    kept_keys = {(d.key, d.cut) for d in out_subs}
    reduced = [d for d in pre_subs if (d.key, d.cut) not in kept_keys]
    kept = [d for d in pre_subs if (d.key, d.cut) in kept_keys]
    if {(d.key, d.cut) for d in kept} != kept_keys or any(
        next(o for o in out_subs if (o.key, o.cut) == (d.key, d.cut)).count != d.count for d in kept
    ):
        return None
    order = [(d.key, d.cut, d.count) for d in reduced + kept]
    lhs, rhs = layout_source(lhs_map, subs[1], order), layout_source(rhs_map, subs[2], order)
    target = layout_target(out, out_subs)
    if lhs is None or rhs is None or target is None:
        return None
    position = {(d.key, d.cut): i for i, d in enumerate(kept)}
    kept_order = tuple(position[(d.key, d.cut)] for d in out_subs)
    return FoldViews(lhs, rhs, tuple(d.count for d in reduced), target, kept_order)


def fold_through_views(
    plan: FoldViews, lhs: np.ndarray, rhs: np.ndarray, widen: Callable, acc: np.dtype, live: bool = False
) -> np.ndarray:
    """`out[..., o] = Σ lhs·rhs` over the contracted positions of each output, folded from zero in wire
    order (no FMA, no pairwise sums); operands are `[..., positions]` buffers as stored, or with `live` their
    layouts' live grids. Each operand is widened by `widen` straight into one step-major array, so every
    step reads a contiguous block: the widening is the copy, and an axis the operand broadcasts (stride 0)
    stays one cell wide, broadcast again when the steps combine."""
    if live:
        left, right = plan.lhs.view_live(lhs), plan.rhs.view_live(rhs)
    else:
        left, right = plan.lhs.view(lhs), plan.rhs.view(rhs)
    first = left.ndim - len(plan.reduced) - len(plan.kept_order)  # leading batch axes (simulator slices)
    order = inner_order(cells(left)[first + len(plan.reduced) :], cells(right)[first + len(plan.reduced) :])
    outer = tuple(range(first + len(plan.reduced)))
    moved = outer + tuple(len(outer) + i for i in order)
    full = np.broadcast_shapes(left.shape, right.shape)
    left, right = (np.ascontiguousarray(widen(unbroadcast(view.transpose(moved)))) for view in (left, right))
    lead = (slice(None),) * first
    total = fold_products(((left[lead + s], right[lead + s]) for s in np.ndindex(*plan.reduced)), acc)
    total = np.broadcast_to(total, full[:first] + tuple(full[len(outer) + i] for i in order))
    back = np.argsort(order)  # the kept axes in `pre_reduce` order again
    kept = total.transpose(tuple(range(first)) + tuple(first + int(back[i]) for i in plan.kept_order))
    return plan.out.place(kept)


# ---- reduces (the Vector Engine's intra- and inter-slice reducers) --------------------------------------


@dataclass(frozen=True)
class ReducePlan:
    """How `src` folds into `dst`: read in the layout `[dst, reduced]` (`reduced` = the axes `dst` lacks,
    in `src` wire order), `live` marking the reads that hit a live source cell."""

    pre: Factors
    live: np.ndarray  # [|dst|, |reduced|]
    dst_live: np.ndarray  # [|dst|]


@lru_cache(maxsize=256)
def reduced_digits(source: Mapping, target: Mapping) -> Mapping:
    """The digits of `source` that `target` lacks, in their wire order, outer first: a fold reads its terms
    in the layout `[target, reduced]`. A pure padding digit (`1 # 256`, the slices a source pads) holds no
    term and is dropped, so the reduced positions are only those that can hold one (32 instead of 8192 for
    the transformer's sums)."""
    residue = remove_padding(divide_relaxed(source, target).dividend_residue)
    return Mapping(tuple(f for f in residue.factors if not f.pure_pad))


def reduce_plan(src: Factors, dst: Factors, broadcast: bool) -> ReducePlan:
    pre = pair(Mapping(dst), reduced_digits(Mapping(src), Mapping(dst))).factors
    live = relaid(live_mask(src)[None].astype(np.uint8), src, pre, broadcast)[0].astype(bool)
    return ReducePlan(pre, live.reshape(size(dst), -1), live_mask(dst))


def reduce_fold(
    values: np.ndarray, src: Factors, dst: Factors, step: Callable, identity, broadcast: bool
) -> np.ndarray:
    """[batch, |dst|]: each live `dst` cell folds `acc = step(acc, x)` from `identity` over the live source
    cells of the axes it lacks, one at a time in their wire order (outer first) — upstream's `reduce`, so
    f32 sums keep its rounding; axes new in `dst` broadcast (`broadcast`). Padding of `dst` holds
    `identity`, as upstream leaves it (a Max-reduce's padding is -inf)."""
    plan = reduce_plan(src, dst, broadcast)
    x = relaid(values, src, plan.pre, broadcast).reshape(values.shape[0], *plan.live.shape)
    return reduce_terms(x, plan.live, plan.dst_live, step, identity)
