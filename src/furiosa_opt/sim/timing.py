"""When each command of an EDF runs on the simulated chip, event by event.

Timing depends on the binary alone, not on data. Each context issues its stream in the EDF's order and
starts a command when the context is free and, for a sync, when every command it waits for has ended;
a Vector Engine command also needs the Vector Engine (shared by main and sub), and a fetch under the
64-access rule holds the DMA engine. Nothing is reordered and no hazard is honoured that the binary does
not encode in a sync.

What a command costs alone comes from its own address streams as the EDF holds them (`compiler.resource`:
each DMA's engines, HBM channels and DM slices, each fetch and commit's DM banks); what it costs here also
depends on what runs beside it. Commands that run at once share the units they both use, main before sub
before the DMA at a DM bank (`_speeds`), so a fetch that keeps a bank busy slows the DMA writing that
slice, and a main and a sub fetch on the same banks take the sum of their times instead of the longer.
The difference between this makespan and the static schedule's is what the binary fails to say, what
the scheduler's order costs, or what the commands' sharing costs.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from furiosa_opt.compiler.edf import CONTEXTS, Edf
from furiosa_opt.compiler.lir import Lir
from furiosa_opt.compiler.resource import Costed, cost
from furiosa_opt.compiler.schedule import Schedule, Slot, passes, schedule_json, segments


@dataclass(frozen=True)
class Timing:
    lir: Lir  # the EDF's commands as the cost model reads them
    costed: dict[int, Costed]  # command index → its cost and resources
    start: dict[int, int]
    end: dict[int, int]
    makespan: int


def lir_of(edf: Edf) -> Lir:
    """The EDF's commands and buffers as the LIR the cost model reads, in index order."""
    outputs = [t.buffer for t in edf.outputs]
    lir = Lir(edf.identity, edf.chip, edf.pe, list(edf.buffers), edf.commands(), [t.buffer for t in edf.arguments],
              outputs)  # fmt: skip
    lir.loops = list(edf.loops)
    return lir


def simulate(edf: Edf) -> Timing:
    """Each run-once stretch of the streams, then each kept loop pass after everything before it: a loop's
    passes that run the same commands take the same time, so each such set is timed once (the commands'
    times are those of pass 0)."""
    lir = lir_of(edf)
    costed = {item.command.index: item for item in cost(lir)}
    order = {c.index: k for context in CONTEXTS for k, c in enumerate(edf.streams[context])}
    waits = {c.index: c.waits for context in CONTEXTS for c in edf.streams[context]}
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    clock = 0
    indices = [c.index for c in lir.commands]  # in order
    for segment, loop in segments(lir):
        span = lir.commands[bisect_left(indices, segment.start) : bisect_left(indices, segment.stop)]
        inside = [c for c in span if c.index in order]
        for n, (skipped, times) in enumerate(passes(inside, loop)):
            queues: dict[str, list[int]] = {context: [] for context in CONTEXTS}
            for c in sorted(inside, key=lambda c: order[c.index]):
                if c.index not in skipped:
                    queues[c.context].append(c.index)
            begins, ends = _run(edf.identity, queues, waits, costed)
            if n == 0:
                start.update({i: clock + t for i, t in begins.items()})
                end.update({i: clock + t for i, t in ends.items()})
            clock += times * max(ends.values(), default=0)
    for c in lir.commands:  # skipped by every pass 0 guard: zero length at the loop's start
        start.setdefault(c.index, clock)
        end.setdefault(c.index, start[c.index])
    return Timing(lir, costed, start, end, clock)


SERVED_FIRST = ("main", "sub", "tdma", "pdma")  # a DM bank's order: main, sub, then the DMA (scheduling/schedule.md)


def _run(
    identity: str, queues: dict[str, list[int]], waits: dict[int, list[int]], costed: dict[int, Costed]
) -> tuple[dict[int, int], dict[int, int]]:
    """(start, end) of each queued command from cycle 0, event by event.

    A context starts the head of its queue when it is free, every command the head waits for has ended (a
    wait on a command not queued here is one that has ended), and the units it holds alone are free (the
    Vector Engine; the DMA for a fetch under the 64-access rule). A started command spends its latency, then
    its work at a speed that `_speeds` sets from what the other running commands take of the units they
    share; between two events (a start or an end) every speed is constant."""
    queued = {i for queue in queues.values() for i in queue}
    start: dict[int, float] = {}
    end: dict[int, float] = {}
    held: dict[str, int] = {}  # context or exclusive unit → the command holding it
    left: dict[int, list[float]] = {}  # running command → [latency left, share of its work left]
    clock = 0.0
    while any(queues.values()) or left:
        for context, queue in queues.items():
            if not queue or context in held:
                continue
            index = queue[0]
            units = costed[index].resources
            if all(w in end or w not in queued for w in waits[index]) and not any(u in held for u in units):
                queue.pop(0)
                start[index] = clock
                left[index] = [float(costed[index].latency), 1.0]
                held.update({unit: index for unit in {context, *units}})
        if not left:
            raise ValueError(f"kernel {identity}: the command streams deadlock (a sync waits on a later command)")
        running = sorted(left, key=lambda i: SERVED_FIRST.index(costed[i].command.context))
        working = [i for i in running if left[i][0] == 0]
        speed = dict(zip(working, _speeds([costed[i] for i in working]), strict=True))
        step = min(left[i][0] if left[i][0] else _time_left(costed[i], left[i][1], speed[i]) for i in running)
        clock += step
        for i in running:
            latency, work = left[i]
            if latency:
                left[i][0] = max(0.0, latency - step)
            elif work:
                left[i][1] = max(0.0, work - step * speed[i] / max(costed[i].work, 1))
            if left[i][0] == 0 and (left[i][1] == 0 or _time_left(costed[i], left[i][1], speed.get(i, 1.0)) < 1e-9):
                end[i] = clock
                del left[i]
                for unit in [u for u, holder in held.items() if holder == i]:
                    del held[unit]
    return {i: round(t) for i, t in start.items()}, {i: round(t) for i, t in end.items()}


def _time_left(item: Costed, work: float, speed: float) -> float:
    """Cycles until a command with `work` of its work left ends at `speed` (infinite when it is stalled)."""
    return work * item.work / speed if speed > 0 else float("inf")


def _speeds(running: list[Costed]) -> list[float]:
    """Each working command's speed, as a share of its speed alone.

    A command alone keeps each shared unit busy for a share of its work (its cycles there over its work).
    In `SERVED_FIRST` order each command takes that share of what the ones before it left, of every unit it
    uses, and goes as fast as its scarcest unit allows: a DMA runs at full speed beside a fetch whose banks
    it does not need; beside a fetch that holds one bank half the time, at half. (DMA engines and HBM
    channels are shared the same way, though one in-order DMA context never runs two DMAs at once.)"""
    free: dict[str, np.ndarray] = {}
    speeds = []
    for item in running:
        work = max(item.work, 1)
        speed = 1.0
        for kind, load in item.shared.items():
            room = free.setdefault(kind, np.ones(0))
            if len(room) < len(load):
                room = free[kind] = np.r_[room, np.ones(len(load) - len(room))]
            need = load / work
            used = need > 0
            if used.any():
                speed = min(speed, float((room[: len(load)][used] / need[used]).min()))
        speed = max(speed, 0.0)
        for kind, load in item.shared.items():
            free[kind][: len(load)] -= speed * load / work
        speeds.append(speed)
    return speeds


def trace_json(timing: Timing) -> dict:
    """The simulated run in the schedule JSON format (the viewers and `furiosa-opt schedule` read it),
    marked `"simulated": true`."""
    slots = [Slot(timing.costed[c.index], timing.start[c.index], timing.end[c.index]) for c in timing.lir.commands]
    return {**schedule_json(Schedule(timing.lir, slots, timing.makespan, 0, 0)), "simulated": True}


def compare(edf: Edf, timing: Timing) -> str:
    """Why the simulated makespan differs from the compiler's static one (the EDF's schedule), if it does."""
    static = {index: (start, end) for index, start, end in edf.schedule}
    makespan = max((end for _, end in static.values()), default=0)
    if timing.makespan == makespan:
        return "equal: the binary's streams and syncs reproduce the compiler's schedule"
    first = min((i for i in timing.start if i in static and static[i][0] != timing.start[i]),
                key=lambda i: min(static[i][0], timing.start[i]), default=None)  # fmt: skip
    if first is None:
        return f"the simulation takes {timing.makespan} cycles, the static schedule {makespan}"
    command = timing.costed[first].command
    return (
        f"command {first} ({command.opcode} on {command.context}) starts at cycle {timing.start[first]} in the "
        f"simulation and {static[first][0]} in the static schedule: the simulator follows only the binary's issue "
        "order and syncs"
    )
