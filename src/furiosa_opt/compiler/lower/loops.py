"""Which device loops stage 2 keeps as loops, and why it unrolls the others.

A kept loop's body is lowered once and runs `count` times (docs/lir.md, "Loops"), so every address in it
must be the same on every pass but for the values the loop carries: a carried value lives in two places of
one buffer used in turn (the pass reads one, writes the other), which a runtime offset of the index
selects. What that cannot express is unrolled, and the LIR records the reason:

* a loop inside the body (the outer loop is unrolled; the inner one may be kept in each copy);
* a view whose address does not move by the same bytes every pass (`i * 16` does; `select(i == 0, 0, 16)`
  over three passes does not: stage 2 finds it when it places the view, and lowers the kernel again), or
  any other attribute but an `if` condition that depends on the index;
* a gather or scatter (their index cells are read where the command is lowered);
* a carried value that is not a fresh DM tensor on both ends (made before the loop and read only by
  the loop; made again in the body), or a value made in the body and read after the loop that the loop
  does not carry.
"""

from __future__ import annotations

from itertools import takewhile

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lower.opcodes import GATHER_OPS, SCATTER_OPS, VIEW_OPS
from furiosa_opt.compiler.replay import region_end
from furiosa_opt.scalar import Scalar

SLOTTED = {"dm"}  # the memories a carried value may take two places in (a VRF operand has no runtime offset)


def plan_loops(ops: tuple[visa.Op, ...], forced: dict[int, str]) -> tuple[frozenset[int], list[list]]:
    """(`id` of every `loop` op kept, [vISA op index, trip count, why] of every loop unrolled); `forced`: the
    loops (by op index) to unroll whatever their body, and why (what lowering found it could not keep)."""
    keep: set[int] = set()
    unrolled: list[list] = []
    producer = {value.name: (i, op) for i, op in enumerate(ops) for value in op.results}
    uses: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        for name in op.operands:
            uses.setdefault(name, []).append(i)
    for at, op in enumerate(ops):
        if op.opcode != "loop":
            continue
        end = region_end(ops, at)
        why = forced.get(at) or _unkeepable(ops, at, end, producer, uses)
        if why is None:
            keep.add(id(op))
        else:
            unrolled.append([at, op.attr("count"), why])
    return frozenset(keep), unrolled


def _unkeepable(ops: tuple[visa.Op, ...], at: int, end: int, producer: dict, uses: dict) -> str | None:
    body = ops[at + 1 : end]
    for op in body:
        if op.opcode == "loop":
            return "its body holds a device loop"
        if op.opcode in GATHER_OPS | SCATTER_OPS:
            return f"its body holds a `{op.opcode}`"
        if op.opcode not in {"if", *VIEW_OPS} and any(isinstance(value, Scalar) for _, value in op.attrs):
            return f"`{op.opcode}` takes a value that depends on the loop index"
    heads = list(takewhile(lambda head: head[1].opcode == "carried", enumerate(body, at + 1)))  # at its start
    for (place, head), back in zip(heads, ops[end].operands, strict=True):
        (before,) = head.operands
        made = producer.get(before)
        if made is None or made[0] > at or made[1].opcode in VIEW_OPS or made[1].results[0].type.kind not in SLOTTED:
            return f"the carried value {before} is not a DM tensor made before the loop"
        if uses.get(before) != [place]:
            return f"the carried value {before} is read elsewhere too"
        made = producer.get(back)
        if made is None or not at < made[0] < end or made[1].opcode in {*VIEW_OPS, "carried"}:
            return f"the carried value {back} is not a tensor the body makes"
    carried = set(ops[end].operands)
    for op in body:
        for value in op.results:
            if value.name not in carried and any(i > end for i in uses.get(value.name, ())):
                return f"{value.name}, made in the body, is read after the loop"
    return None
