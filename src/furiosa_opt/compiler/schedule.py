"""The scheduler and its outputs: schedule JSON (the Schedule Viewer's format) and the compile summary.

Each context is an in-order stream, but the compiler chooses the order: a list scheduler places, at
each step, the ready command that can start earliest (ties: the longest remaining path, then program
order). A command waits for every earlier command whose memory it reads after a write (RAW), writes
after a read (WAR) or writes after a write (WAW), on overlapping addresses in any context, and for the
resources it occupies (its context; the Vector Engine shared by main and sub; DMA when the 64-access
rule applies). TRF halves are different addresses, so a load into one half overlaps work on the other.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from furiosa_opt.compiler.lir import Command, Lir, LoopRegion, overlapping
from furiosa_opt.compiler.resource import (
    Costed,
    cost,
    inter_slice_reduce_cycles,
    switch_cycles,
    transpose_cycles,
)
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.memsys.findings import report
from furiosa_opt.programs import describe, evaluate
from furiosa_opt.switch import from_config

LANES = {"main": "Main", "sub": "Sub", "ve": "VE", "tdma": "TDMA", "pdma": "PDMA"}
BUFFER_TYPES = {"dram": "Dram", "sram": "Sram", "trf": "Trf", "vrf": "Vrf"}


@dataclass
class Slot:
    costed: Costed
    start: int
    end: int


@dataclass
class Schedule:
    lir: Lir
    slots: list[Slot]  # in LIR command order
    makespan: int
    lower_bound: int
    critical_path: int


def dependencies(lir: Lir, costed: list[Costed]) -> list[set[int]]:
    """For each command, the earlier commands it must follow (RAW, WAR, WAW on overlapping memory).

    Per memory footprint only the latest write and the reads since it are kept: an earlier access is
    ordered before those already, so the sets differ from "every earlier conflicting command" only by
    edges the others imply (the same schedule, the same longest paths), and the walk is linear."""
    buffers = {b.name: b for b in lir.buffers}
    near = overlapping({b.footprint for b in lir.buffers})
    last_write: dict[tuple, int] = {}
    reads: dict[tuple, list[int]] = {}  # footprint → commands reading it since its last write
    deps: list[set[int]] = []
    for i, item in enumerate(costed):
        command = item.command
        mine: set[int] = set()
        if command.kind in ("view", "sync"):
            deps.append(mine)
            continue
        ordered = item.cycles or command.kind in ("exec", "dma")
        for name in command.inputs:
            for spot in near[buffers[name].footprint]:
                if ordered and spot in last_write:
                    mine.add(last_write[spot])
        for name in command.outputs:
            for spot in near[buffers[name].footprint]:
                if ordered:
                    mine.update(reads.get(spot, ()))
                    if spot in last_write:
                        mine.add(last_write[spot])
        for name in command.inputs:
            reads.setdefault(buffers[name].footprint, []).append(i)
        for name in command.outputs:
            place = buffers[name].footprint
            last_write[place], reads[place] = i, []
        deps.append(mine)
    return deps


def _remaining(costed: list[Costed], deps: list[set[int]], placed: list[int]) -> dict[int, int]:
    """Longest path from each placed command to the end (its own cycles included), within `placed`."""
    inside = set(placed)
    followers: dict[int, list[int]] = {}
    for i in placed:
        for j in deps[i] & inside:
            followers.setdefault(j, []).append(i)
    longest: dict[int, int] = {}
    for i in reversed(placed):
        longest[i] = costed[i].cycles + max((longest[k] for k in followers.get(i, ())), default=0)
    return longest


def segments(lir: Lir) -> list[tuple[range, LoopRegion | None]]:
    """The command index ranges run once, and each kept loop's body, in order."""
    found, at = [], 0
    for loop in lir.loops:
        if at < loop.first:
            found.append((range(at, loop.first), None))
        found.append((range(loop.first, loop.last + 1), loop))
        at = loop.last + 1
    stop = lir.commands[-1].index + 1 if lir.commands else 0  # an EDF's commands skip the views
    if at < stop:
        found.append((range(at, stop), None))
    return found


def passes(commands: list[Command], loop: LoopRegion | None) -> list[tuple[frozenset[int], int]]:
    """(the commands a pass skips, how many passes skip exactly those) of a segment, the first pass's first:
    a guarded command runs on the passes whose index meets its guard."""
    if loop is None:
        return [(frozenset(), 1)]
    guarded = [c.index for c in commands if c.guard]
    if not guarded:
        return [(frozenset(), loop.count)]
    index = [np.arange(loop.count, dtype=np.int64)]  # loop level 0
    runs = np.stack([evaluate(c.guard, index) != 0 for c in commands if c.guard])
    patterns, first, counts = np.unique(runs, axis=1, return_index=True, return_counts=True)
    order = np.argsort(first)  # pass 0's first
    return [(frozenset(i for i, runs_it in zip(guarded, patterns[:, p], strict=True) if not runs_it), int(counts[p]))
            for p in order]  # fmt: skip


def schedule(lir: Lir, strategy: str = "list") -> Schedule:
    """`list`: the ready command that can start first goes next; `inorder`: program order, each command
    after the previous one ends (the naive baseline). A kept loop's body is scheduled once per set of
    commands its passes run, each pass after everything before it (its commands' slots are pass 0's)."""
    costed = cost(lir)
    plain = dependencies(lir, costed)  # the critical path and the priorities read these
    deps = list(plain)
    if strategy == "inorder":
        previous = None
        for i, item in enumerate(costed):
            if item.command.kind not in ("view", "sync"):
                if previous is not None:
                    deps[i] = deps[i] | {previous}
                previous = i
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    clock = critical = 0
    busy: dict[str, int] = {}
    for segment, loop in segments(lir):
        for n, (skipped, times) in enumerate(passes(lir.commands[segment.start : segment.stop], loop)):
            placed = [i for i in segment if costed[i].command.kind not in ("view", "sync") and i not in skipped]
            priority = _remaining(costed, plain, placed)
            begins, ends = _list_schedule(costed, deps, placed, priority)
            if n == 0:
                start.update({i: clock + t for i, t in begins.items()})
                end.update({i: clock + t for i, t in ends.items()})
            clock += times * max(ends.values(), default=0)
            critical += times * max(priority.values(), default=0)
            for i in placed:
                for resource in costed[i].resources:
                    busy[resource] = busy.get(resource, 0) + times * costed[i].cycles
    slots: list[Slot | None] = [None] * len(costed)
    following = clock  # views, syncs and skipped commands: zero length where their next command starts
    for i in reversed(range(len(costed))):
        if i in start:
            following = start[i]
        else:
            start[i], end[i] = following, following
        slots[i] = Slot(costed[i], start[i], end[i])
    return Schedule(lir, slots, clock, max([critical, *busy.values()], default=0), critical)


def _list_schedule(
    costed: list[Costed], deps: list[set[int]], placed: list[int], priority: dict[int, int]
) -> tuple[dict[int, int], dict[int, int]]:
    """(start, end) of each placed command, from cycle 0; dependencies outside `placed` have ended."""
    inside = set(placed)
    free: dict[str, int] = {}
    end: dict[int, int] = {}
    start: dict[int, int] = {}
    followers: dict[int, list[int]] = {}
    pending = {i: len(deps[i] & inside) for i in placed}
    for i in placed:
        for j in deps[i] & inside:
            followers.setdefault(j, []).append(i)
    # Ready commands in a heap by (earliest start, -remaining path, index). A start time only grows as
    # resources fill, so a popped entry whose start moved is pushed back with its new time.
    heap = [(0, -priority[i], i) for i in placed if not pending[i]]
    heapq.heapify(heap)
    while heap:
        at, rank, best = heapq.heappop(heap)
        earliest = _earliest(best, costed, deps, end, free)
        if earliest > at:
            heapq.heappush(heap, (earliest, rank, best))
            continue
        start[best], end[best] = earliest, earliest + costed[best].cycles
        for resource in costed[best].resources:
            free[resource] = end[best]
        for k in followers.get(best, ()):
            pending[k] -= 1
            if not pending[k]:
                heapq.heappush(heap, (_earliest(k, costed, deps, end, free), -priority[k], k))
    return start, end


def _earliest(i: int, costed: list[Costed], deps: list[set[int]], end: dict[int, int], free: dict[str, int]) -> int:
    after = max((end.get(j, 0) for j in deps[i]), default=0)
    return max([after, *(free.get(r, 0) for r in costed[i].resources)])


# ---- outputs ----------------------------------------------------------------------------------------


def _description(slot: Slot, loop: LoopRegion | None) -> str:
    command = slot.costed.command
    stages = " → ".join(map(_stage_label, command.engines)) if command.kind == "exec" else command.opcode
    where = f" --> {command.loc}" if command.loc else ""
    notes = [*slot.costed.notes]
    if loop is not None:  # the slot is pass 0's
        notes.append(
            f"device loop {loop.index}: pass 0 of {loop.count}"
            + (f", when {describe(command.guard, [loop.index])}" if command.guard else "")
        )
    note = f" ({'; '.join(notes)})" if notes else ""
    return f"{stages} [{command.context}]{note}{where}"


def _stage_label(config: EngineConfig) -> str:
    """A stage as the schedule names it; the engines with their own latency say how they are configured."""
    if config.stage == "switch":
        return f"switch[{from_config(config)}, ring {config.ring}: {switch_cycles(config)} cycles]"
    if config.stage == "transpose":
        shape = f"{config.in_rows}×{config.in_cols} → {config.out_rows} rows, ×{config.iterations}"
        return f"transpose[{shape}: {transpose_cycles(config)} cycles]"
    if config.stage == "vector_inter_slice_reduce":
        return f"vector_inter_slice_reduce[{config.ratio} slices: {inter_slice_reduce_cycles(config)} cycles]"
    return config.stage


def _slices(lir: Lir) -> int:
    return lir.chip * 2 * 256


def schedule_json(plan: Schedule) -> dict:
    """Upstream's Schedule Viewer format plus format/version/kernel/makespan (docs/design.md, "Schedule JSON")."""
    lir = plan.lir
    index_of = {b.name: i for i, b in enumerate(lir.buffers)}
    instructions = []
    lifetimes: dict[str, list[int]] = {}
    loop_of = {i: loop for loop in lir.loops for i in range(loop.first, loop.last + 1)}
    for slot in plan.slots:
        command = slot.costed.command
        sync = command.kind == "sync"
        total = 1.0 if slot.costed.cycles else 0.0
        instructions.append(
            {
                "index": f"ExplicitSync{command.index}" if sync else command.index,
                "name": f"O{command.index}",
                "tpe": "Noop" if sync else slot.costed.tpe,
                "contexts": list(slot.costed.contexts),
                "lifetime": {"begin": slot.start, "end": slot.end},
                "util": {"total_util": total},
                "description": _description(slot, loop_of.get(command.index)),
                "input_tensors": [index_of[b] for b in command.inputs],
                "output_tensors": [index_of[b] for b in command.outputs],
                "source": command.loc,
                **({"memory": report(slot.costed.price)} if slot.costed.price else {}),
            }
        )
        for name in [*command.inputs, *command.outputs]:
            span = lifetimes.setdefault(name, [slot.start, slot.end])
            span[0], span[1] = min(span[0], slot.start), max(span[1], slot.end)
    tensors = []
    for i, b in enumerate(lir.buffers):
        begin, finish = lifetimes.get(b.name, [0, plan.makespan])
        if b.first < 0:
            begin = 0
        if b.name in lir.results:
            finish = plan.makespan
        spread = _slices(lir) if b.memory != "dram" else 1
        tensors.append(
            {
                "index": i,
                "name": b.name,
                "visa_name": b.value,
                "buffer_type": BUFFER_TYPES[b.memory],
                "address": b.address,
                "size": b.bytes * spread,
                "dtype": b.dtype,
                "mapping": ", ".join(b.levels),
                "lifetime": {"begin": begin, "end": finish, "block_begin": b.first, "block_end": b.last},
            }
        )
    return {
        "format": "furiosa-opt-schedule",
        "version": 1,
        "kernel": lir.kernel,
        "makespan": plan.makespan,
        "instructions": instructions,
        "tensors": tensors,
    }


def summary(plan: Schedule) -> dict:
    """Makespan against its lower bound, lane utilisation, memory high-water, DMA routes and each DMA's
    memory report, hot lines."""
    lir = plan.lir
    busy = {lane: 0 for lane in LANES.values()}
    routes: dict[str, int] = {}
    lines: dict[str, int] = {}
    for slot in plan.slots:
        item = slot.costed
        for resource in item.resources:
            busy[LANES[resource]] += item.cycles
        if item.route:
            routes[item.route] = routes.get(item.route, 0) + item.moved
        if item.cycles and item.command.loc:
            lines[item.command.loc] = lines.get(item.command.loc, 0) + item.cycles
    high = {}
    for memory in ("dram", "sram", "trf", "vrf"):
        placed = [b for b in lir.buffers if b.memory == memory]
        events = sorted({b.first for b in placed})
        high[memory] = max((sum(b.bytes for b in placed if b.first <= t <= b.last) for t in events), default=0)
    span = max(plan.makespan, 1)
    return {
        "kernel": lir.kernel,
        "makespan": plan.makespan,
        "lower_bound": plan.lower_bound,
        "ratio": round(plan.makespan / max(plan.lower_bound, 1), 4),
        "critical_path": plan.critical_path,
        "utilisation": {lane: round(cycles / span, 4) for lane, cycles in busy.items()},
        "memory_high_water_bytes": {
            "hbm": high["dram"],
            "dm_per_slice": high["sram"],
            "trf_per_slice": high["trf"],
            "vrf_per_slice": high["vrf"],
        },
        "dma_bytes_by_route": dict(sorted(routes.items())),
        "dma": [
            {
                "command": s.costed.command.index,
                "source": s.costed.command.loc,
                "route": s.costed.route,
                **report(s.costed.price),
            }
            for s in plan.slots
            if s.costed.price
        ],
        "cycles_by_line": dict(sorted(lines.items(), key=lambda kv: -kv[1])),
    }


def side_text(side: dict) -> str:
    """One side of a DMA's memory report in a few words: `HBM 32/32 ch, row conflicts 3%, partial 0` or
    `DM 2 DMN(s), balance 100%`."""
    if side["memory"] == "hbm":
        stack = "" if side["stack_toggles"] else ", one stack"
        conflicts = f"row conflicts {side['row_conflict_share']:.0%}"
        return f"HBM {side['channels']}/32 ch{stack}, {conflicts}, partial {side['partial']}"
    return f"DM {side['dmns']} DMN(s), balance {side['dmn_balance']:.0%}"


def summary_markdown(data: dict) -> str:
    rows = [
        f"# {data['kernel']}",
        "",
        f"* makespan: {data['makespan']} cycles",
        f"* lower bound: {data['lower_bound']} cycles (critical path {data['critical_path']}); "
        f"ratio {data['ratio']:.3f}",
        "",
        "| lane | utilisation |",
        "|---|---|",
    ]
    if "simulated" in data:
        rows.insert(4, f"* simulated: {data['simulated']['makespan']} cycles ({data['simulated']['versus_static']})")
    rows += [f"| {lane} | {value:.1%} |" for lane, value in data["utilisation"].items()]
    rows += ["", "| memory | high-water bytes |", "|---|---|"]
    rows += [f"| {name} | {value} |" for name, value in data["memory_high_water_bytes"].items()]
    rows += ["", "| DMA route | bytes |", "|---|---|"]
    rows += [f"| {route} | {moved} |" for route, moved in data["dma_bytes_by_route"].items()]
    rows += [
        "",
        "| DMA | route | cycles | bottleneck | read | write |",
        "|---|---|---|---|---|---|",
    ]
    rows += [
        f"| O{d['command']} {d['source']} | {d['route']} | {d['cycles']} | {d['bottleneck']} | "
        f"{side_text(d['read'])} | {side_text(d['write'])} |"
        for d in data["dma"]
    ]
    rows += [
        f"* O{d['command']} {f['rule']}: {f['shown']}. Fix: {f['fix']}." for d in data["dma"] for f in d["findings"]
    ]
    rows += ["", "| source line | cycles |", "|---|---|"]
    rows += [f"| {line} | {cycles} |" for line, cycles in data["cycles_by_line"].items()]
    return "\n".join(rows) + "\n"
