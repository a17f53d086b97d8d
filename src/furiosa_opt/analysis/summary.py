"""`schedule summary`: where the cycles of one schedule go.

Makespan; per lane the busy cycles, their share of the makespan and the idle rest; how many
instructions of each type; the longest instructions; and the cycles each source line accounts for
(the sum of its instructions' lengths, so lines running in parallel can add up past the makespan).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from furiosa_opt.analysis.gaps import busy_cycles
from furiosa_opt.analysis.schedule import Instruction, Schedule, instruction_json

UNKNOWN_SOURCE = "(unknown)"


@dataclass(frozen=True, slots=True)
class LaneUse:
    lane: str
    busy: int
    idle: int
    share: float  # busy / makespan


@dataclass(frozen=True, slots=True)
class LineCycles:
    source: str
    cycles: int
    instructions: int


@dataclass(frozen=True)
class Summary:
    kernel: str | None
    makespan: int
    instructions: int
    lanes: tuple[LaneUse, ...]
    counts: dict[str, int]  # by `tpe`, most frequent first
    longest: tuple[Instruction, ...]
    lines: tuple[LineCycles, ...]  # most cycles first
    dma: tuple[Instruction, ...] = ()  # the DMAs whose memory report names a pathology, longest first


def lane_use(schedule: Schedule) -> tuple[LaneUse, ...]:
    uses = []
    for lane in schedule.lanes:
        busy = busy_cycles(schedule, lane)
        uses.append(LaneUse(lane, busy, schedule.makespan - busy, busy / schedule.makespan if schedule.makespan else 0))
    return tuple(uses)


def line_cycles(schedule: Schedule) -> tuple[LineCycles, ...]:
    cycles: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for instruction in schedule.instructions:
        if instruction.cycles:
            source = instruction.source or UNKNOWN_SOURCE
            cycles[source] += instruction.cycles
            counts[source] += 1
    ordered = sorted(cycles, key=lambda source: (-cycles[source], source))
    return tuple(LineCycles(source, cycles[source], counts[source]) for source in ordered)


def summarize(schedule: Schedule, top: int = 10) -> Summary:
    counts = Counter(i.tpe for i in schedule.instructions)
    longest = sorted(schedule.instructions, key=lambda i: (-i.cycles, i.begin, i.position))
    return Summary(
        schedule.kernel,
        schedule.makespan,
        len(schedule.instructions),
        lane_use(schedule),
        dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        tuple(i for i in longest[:top] if i.cycles),
        line_cycles(schedule),
        tuple(i for i in longest if findings_of(i.memory)),
    )


def findings_of(memory: dict[str, Any] | None) -> list[dict[str, str]]:
    """A DMA's memory pathologies (`rule`, `shown`, `fix`, each a string) from its report. The loader checks
    only that a report is an object, so a hand-edited one may hold anything else: that is passed over, as
    the Schedule Viewer passes it over (`findingsOf` in viewer/static/model.js)."""
    listed = memory.get("findings") if memory is not None else None
    if not isinstance(listed, list):
        return []
    return [
        f for f in listed if isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("rule", "shown", "fix"))
    ]


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "kernel": summary.kernel,
        "makespan": summary.makespan,
        "instructions": summary.instructions,
        "lanes": [
            {"lane": u.lane, "busy": u.busy, "idle": u.idle, "busy_share": round(u.share, 4)} for u in summary.lanes
        ],
        "counts": summary.counts,
        "longest": [instruction_json(i) for i in summary.longest],
        "lines": [
            {"source": line.source, "cycles": line.cycles, "instructions": line.instructions} for line in summary.lines
        ],
        "dma_findings": [{**instruction_json(i), **i.memory, "findings": findings_of(i.memory)} for i in summary.dma],
    }
