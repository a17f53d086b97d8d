"""When each command of an EDF runs on the simulated chip, event by event.

Timing depends on the binary alone, not on data. Each context issues its stream in the EDF's order and
starts a command when the context is free and, for a sync, when every command it waits for has ended;
a Vector Engine command also needs the Vector Engine (shared by main and sub), and a fetch under the
64-access rule holds the DMA engine. Durations are the cost model's (`compiler.resource`). Unlike the
static schedule, nothing is reordered and no hazard is honoured that the binary does not encode in a
sync: the difference between the two makespans is what the binary fails to say, or what the
scheduler's order costs.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

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
            begins, ends = _issue(edf.identity, queues, waits, costed)
            if n == 0:
                start.update({i: clock + t for i, t in begins.items()})
                end.update({i: clock + t for i, t in ends.items()})
            clock += times * max(ends.values(), default=0)
    for c in lir.commands:  # skipped by every pass 0 guard: zero length at the loop's start
        start.setdefault(c.index, clock)
        end.setdefault(c.index, start[c.index])
    return Timing(lir, costed, start, end, clock)


def _issue(
    identity: str, queues: dict[str, list[int]], waits: dict[int, list[int]], costed: dict[int, Costed]
) -> tuple[dict[int, int], dict[int, int]]:
    """(start, end) of each queued command from cycle 0, each context issuing its queue in order; a wait on
    a command not queued here is one that has ended."""
    queued = {i for queue in queues.values() for i in queue}
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    free: dict[str, int] = {}
    while any(queues.values()):
        ready = []
        for context, queue in queues.items():
            if queue and all(w in end or w not in queued for w in waits[queue[0]]):
                index = queue[0]
                after = max([free.get(context, 0), *(end.get(w, 0) for w in waits[index])])
                ready.append((max([after, *(free.get(r, 0) for r in costed[index].resources)]), index, context))
        if not ready:
            raise ValueError(f"kernel {identity}: the command streams deadlock (a sync waits on a later command)")
        begin, index, context = min(ready)
        queues[context].pop(0)
        start[index], end[index] = begin, begin + costed[index].cycles
        for resource in {context, *costed[index].resources}:
            free[resource] = end[index]
    return start, end


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
