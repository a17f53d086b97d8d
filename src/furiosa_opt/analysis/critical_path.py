"""The chain of instructions that determines the makespan, and what bound each one's start.

Walk back from the instruction that ends last. An instruction that starts exactly when its data
producer ends was bound by that `data`; else, exactly when its lane predecessor ends, by that `lane`;
at cycle 0 it is the `start`. Otherwise it waited a `gap` for something the JSON does not show (a
write-after-read hazard, the Vector Engine shared by main and sub, the 64-access rule), and the walk
goes on from whichever of the two predecessors ended later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from furiosa_opt.analysis.dependencies import Dependencies
from furiosa_opt.analysis.schedule import Instruction, Schedule, instruction_json


@dataclass(frozen=True, slots=True)
class Link:
    instruction: Instruction
    bound: str  # "data", "lane", "gap" or "start"
    after: Instruction | None  # the predecessor the walk continues from
    wait: int  # cycles between `after` ending (or cycle 0) and this instruction beginning


def critical_path(schedule: Schedule) -> list[Link]:
    """The chain in time order; empty for a schedule without instructions."""
    # Of the instructions that end last, one doing work rather than a view or sync at the end.
    current = max(schedule.instructions, key=lambda i: (i.end, bool(i.lanes), i.cycles, i.position), default=None)
    dependencies = Dependencies(schedule)
    chain: list[Link] = []
    while current is not None:
        link = _link(current, dependencies)
        chain.append(link)
        current = link.after
    return chain[::-1]


def _link(instruction: Instruction, dependencies: Dependencies) -> Link:
    data = dependencies.producer(instruction)
    lane = dependencies.lane_predecessor(instruction)
    begin = instruction.begin
    if data is not None and data.end == begin:
        return Link(instruction, "data", data, 0)
    if lane is not None and lane.end == begin:
        return Link(instruction, "lane", lane, 0)
    if begin == 0:
        return Link(instruction, "start", None, 0)
    after = max((p for p in (data, lane) if p is not None), key=lambda i: (i.end, i.position), default=None)
    return Link(instruction, "gap", after, begin - (after.end if after else 0))


def critical_path_json(schedule: Schedule, chain: list[Link]) -> dict[str, Any]:
    return {
        "kernel": schedule.kernel,
        "makespan": schedule.makespan,
        "path": [
            {
                **instruction_json(link.instruction),
                "bound": link.bound,
                "after": link.after.name if link.after else None,
                "wait": link.wait,
            }
            for link in chain
        ],
    }
