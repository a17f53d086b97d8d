"""`schedule export --format perfetto`: the schedule as Chrome trace-event JSON, which Perfetto opens.

One process (the kernel) with a thread per lane; each instruction is an `X` slice on every lane it
occupies, with its source line and tensors in `args`; a data dependency is a flow (`s` → `f`) from
the producer's slice to the consumer's; memory in use per buffer type is a counter (`C`). Trace
timestamps are microseconds, so one cycle is drawn as 1 µs: the numbers Perfetto shows are cycles.

Slices on one thread must not overlap (Perfetto would nest them), so an instruction overlapping an
earlier one on its lane goes to an extra thread `<lane> #2`. Flow ends sit at the middle of their
slices, where Perfetto binds them to the enclosing slice without ambiguity at shared boundaries.
Views alias tensors they link, so the tensors they write are not counted twice in memory use. The trace
is strict JSON: a utilisation that is not a finite number is written as null, never as a bare `NaN`.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from furiosa_opt.analysis.dependencies import Dependencies, is_view
from furiosa_opt.analysis.schedule import Instruction, Schedule, ScheduleTensor

PID = 1
TIME_UNIT = "1 µs = 1 cycle"


def perfetto_trace(schedule: Schedule) -> dict[str, Any]:
    tracks, tid_of = _tracks(schedule)
    events = [_metadata("process_name", 0, {"name": f"{schedule.kernel or 'schedule'} ({TIME_UNIT})"})]
    for tid, name in tracks:
        events += [
            _metadata("thread_name", tid, {"name": name}),
            _metadata("thread_sort_index", tid, {"sort_index": tid}),
        ]
    events += [_slice(i, lane, tid_of[i.position, lane], schedule) for i in schedule.instructions for lane in i.lanes]
    events += _flows(schedule, tid_of)
    events += _counters(schedule)
    return {
        "traceEvents": events,
        "otherData": {"kernel": schedule.kernel, "makespan": schedule.makespan, "time_unit": TIME_UNIT},
    }


def _metadata(name: str, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": PID, "tid": tid, "ts": 0, "args": args}


def _tracks(schedule: Schedule) -> tuple[list[tuple[int, str]], dict[tuple[int, str], int]]:
    """Threads (tid, name) — one per lane, plus overflow rows — and each (instruction, lane)'s thread."""
    tracks = [(n + 1, lane) for n, lane in enumerate(schedule.lanes)]
    tid_of: dict[tuple[int, str], int] = {}
    for n, lane in enumerate(schedule.lanes):
        ends: list[int] = []  # per row of this lane, where its last slice ends
        tids = [n + 1]
        for instruction in sorted(schedule.on_lane(lane), key=lambda i: (i.begin, i.position)):
            row = next((r for r, end in enumerate(ends) if end <= instruction.begin), len(ends))
            if row == len(ends):
                ends.append(0)
                if row:
                    tracks.append((len(tracks) + 1, f"{lane} #{row + 1}"))
                    tids.append(len(tracks))
            ends[row] = instruction.end
            tid_of[instruction.position, lane] = tids[row]
    return tracks, tid_of


def _slice(instruction: Instruction, lane: str, tid: int, schedule: Schedule) -> dict[str, Any]:
    return {
        "ph": "X",
        "name": f"{instruction.name} {instruction.tpe}",
        "cat": instruction.tpe,
        "pid": PID,
        "tid": tid,
        "ts": instruction.begin,
        "dur": instruction.cycles,
        "args": {
            "index": instruction.index,
            "lane": lane,
            "source": instruction.source or "",
            "description": instruction.description,
            "util": instruction.util if instruction.util is None or math.isfinite(instruction.util) else None,
            "tensors": {
                "inputs": [_tensor_text(schedule.tensors[t]) for t in instruction.inputs],
                "outputs": [_tensor_text(schedule.tensors[t]) for t in instruction.outputs],
            },
        },
    }


def _tensor_text(tensor: ScheduleTensor) -> str:
    where = f" @{tensor.address}" if tensor.address is not None else ""
    parts = [f"{tensor.name} {tensor.buffer_type}{where}", f"{tensor.size} B", tensor.dtype, tensor.visa_name]
    mapping = f" [{tensor.mapping}]" if tensor.mapping else ""
    return ", ".join(p for p in parts if p) + mapping


def _middle(instruction: Instruction) -> int:
    return instruction.begin + instruction.cycles // 2


def _flows(schedule: Schedule, tid_of: dict[tuple[int, str], int]) -> list[dict[str, Any]]:
    dependencies = Dependencies(schedule)
    events: list[dict[str, Any]] = []
    flow_id = 0
    for consumer in schedule.instructions:
        if not consumer.lanes:
            continue
        for producer in dependencies.producers(consumer):
            if not producer.lanes:
                continue
            flow_id += 1
            flow = {"cat": "data", "name": "data", "pid": PID, "id": flow_id}
            events.append(
                {**flow, "ph": "s", "tid": tid_of[producer.position, producer.lanes[0]], "ts": _middle(producer)}
            )
            events.append(
                {
                    **flow,
                    "ph": "f",
                    "bp": "e",
                    "tid": tid_of[consumer.position, consumer.lanes[0]],
                    "ts": _middle(consumer),
                }
            )
    return events


def _counters(schedule: Schedule) -> list[dict[str, Any]]:
    """Bytes in use per buffer type at each time that changes it: a tensor counts over [begin, end)."""
    aliases = {t for i in schedule.instructions if is_view(i) for t in i.outputs}
    live = [t for t in schedule.tensors.values() if t.index not in aliases and t.end > t.begin]
    events = []
    for buffer_type in sorted({t.buffer_type for t in live}):
        change: Counter[int] = Counter({0: 0})
        for tensor in (t for t in live if t.buffer_type == buffer_type):
            change[tensor.begin] += tensor.size
            change[tensor.end] -= tensor.size
        used = 0
        for ts in sorted(change):
            used += change[ts]
            events.append(
                {"ph": "C", "name": f"{buffer_type} memory", "pid": PID, "tid": 0, "ts": ts, "args": {"bytes": used}}
            )
    return events
