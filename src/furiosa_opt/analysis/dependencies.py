"""What each instruction waited for: the data it read and the previous instruction on its lanes.

B depends on A if B reads a tensor A writes and A ends no later than B begins (the latest such A
counts). A view (a zero-length `Noop` linking aliasing tensors) is looked through: B reading a view's
output depends on whoever wrote the view's input. Every predecessor comes strictly before in
(begin, file order), so walking predecessors always terminates, even over zero-length instructions.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from furiosa_opt.analysis.schedule import Instruction, Schedule


def _before(a: Instruction, b: Instruction) -> bool:
    return a.end <= b.begin and (a.begin, a.position) < (b.begin, b.position)


def _latest(candidates: list[Instruction]) -> Instruction | None:
    return max(candidates, key=lambda i: (i.end, i.begin, i.position), default=None)


def is_view(instruction: Instruction) -> bool:
    """A zero-length instruction on no lane: a view (tile, reshape) or an explicit sync."""
    return not instruction.lanes and instruction.cycles == 0


@dataclass
class Dependencies:
    """Predecessor queries over one schedule, indexed once."""

    schedule: Schedule
    _writers: dict[int, list[Instruction]] = field(init=False)
    _lanes: dict[str, list[Instruction]] = field(init=False)
    _lane_ends: dict[str, list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self._writers = {}
        for instruction in self.schedule.instructions:
            for tensor in instruction.outputs:
                self._writers.setdefault(tensor, []).append(instruction)
        self._lanes = {
            lane: sorted(self.schedule.on_lane(lane), key=lambda i: (i.end, i.begin, i.position))
            for lane in self.schedule.lanes
        }
        self._lane_ends = {lane: [i.end for i in ordered] for lane, ordered in self._lanes.items()}

    def producers(self, instruction: Instruction) -> list[Instruction]:
        """Per tensor read, its latest writer (or, for a view, what the view read), in file order."""
        found: dict[int, Instruction] = {}
        for tensor in instruction.inputs:
            writer = _latest([w for w in self._writers.get(tensor, []) if _before(w, instruction)])
            if writer is not None and is_view(writer):
                writer = self.producer(writer)
            if writer is not None:
                found[writer.position] = writer
        return [found[position] for position in sorted(found)]

    def producer(self, instruction: Instruction) -> Instruction | None:
        """The latest of `producers`: the data the instruction waited for last."""
        return _latest(self.producers(instruction))

    def lane_predecessor(self, instruction: Instruction) -> Instruction | None:
        """The instruction on one of its lanes that ended last before it began."""
        found = []
        for lane in instruction.lanes:
            ordered = self._lanes[lane]
            for k in reversed(range(bisect_right(self._lane_ends[lane], instruction.begin))):
                if _before(ordered[k], instruction):
                    found.append(ordered[k])
                    break
        return _latest(found)
