"""Busy time and idle intervals per lane, between cycle 0 and the makespan.

A lane is busy while any instruction on it runs (overlapping instructions count once); an idle
interval is a maximal stretch where none does. The instruction that ends a gap is the one on that lane
starting when the gap closes; the gap before the makespan is ended by nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from furiosa_opt.analysis.schedule import LANES, Instruction, Schedule, ScheduleError, instruction_json


@dataclass(frozen=True, slots=True)
class Gap:
    lane: str
    begin: int
    end: int
    ended_by: Instruction | None

    @property
    def cycles(self) -> int:
        return self.end - self.begin


def busy_intervals(schedule: Schedule, lane: str) -> list[tuple[int, int]]:
    """The lane's running time as disjoint [begin, end) intervals in time order."""
    merged: list[list[int]] = []
    for begin, end in sorted((i.begin, i.end) for i in schedule.on_lane(lane) if i.cycles):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    return [(begin, end) for begin, end in merged]


def busy_cycles(schedule: Schedule, lane: str) -> int:
    return sum(end - begin for begin, end in busy_intervals(schedule, lane))


def resolve_lane(schedule: Schedule, name: str) -> str:
    """The lane spelled `name` in any case: a viewer lane (idle throughout if unused) or one this
    schedule uses; an error lists them."""
    known = tuple(dict.fromkeys((*LANES, *schedule.lanes)))
    for lane in known:
        if lane.lower() == name.lower():
            return lane
    raise ScheduleError(f"unknown lane `{name}`; lanes: {', '.join(known)}")


def gaps(schedule: Schedule, lane: str | None = None) -> list[Gap]:
    """Idle intervals of one lane (or every lane used), largest first."""
    lanes = schedule.lanes if lane is None else (resolve_lane(schedule, lane),)
    found = [gap for name in lanes for gap in _lane_gaps(schedule, name)]
    order = {name: n for n, name in enumerate(lanes)}
    return sorted(found, key=lambda g: (-g.cycles, order[g.lane], g.begin))


def _lane_gaps(schedule: Schedule, lane: str) -> list[Gap]:
    starters: dict[int, Instruction] = {}
    for instruction in sorted(schedule.on_lane(lane), key=lambda i: (i.begin, -i.cycles, i.position)):
        starters.setdefault(instruction.begin, instruction)
    found, idle_since = [], 0
    for begin, end in busy_intervals(schedule, lane):
        if begin > idle_since:
            found.append(Gap(lane, idle_since, begin, starters[begin]))
        idle_since = end
    if schedule.makespan > idle_since:
        found.append(Gap(lane, idle_since, schedule.makespan, None))
    return found


def gaps_json(schedule: Schedule, found: list[Gap]) -> dict[str, Any]:
    return {
        "kernel": schedule.kernel,
        "makespan": schedule.makespan,
        "gaps": [
            {
                "lane": gap.lane,
                "begin": gap.begin,
                "end": gap.end,
                "cycles": gap.cycles,
                "ended_by": instruction_json(gap.ended_by) if gap.ended_by else None,
            }
            for gap in found
        ],
    }
