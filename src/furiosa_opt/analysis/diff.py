"""`schedule diff A B`: what changed between two schedules of a kernel.

Instructions that occupy a lane are matched by (source line, type): within one such key the k-th
instruction of A, in time order, pairs with the k-th of B. Unpaired ones were removed (only in A) or
added (only in B); a pair whose begin or end differs moved. Views and syncs do no work and are left
out. Source lines compare by the cycles their instructions account for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from furiosa_opt.analysis.gaps import busy_cycles
from furiosa_opt.analysis.schedule import LANES, Instruction, Schedule, instruction_json
from furiosa_opt.analysis.summary import line_cycles


@dataclass(frozen=True, slots=True)
class Change:
    """A quantity before and after (makespan, a lane's busy cycles, a source line's cycles)."""

    name: str
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Moved:
    before: Instruction
    after: Instruction


@dataclass(frozen=True)
class ScheduleDiff:
    makespan: Change
    lanes: tuple[Change, ...]
    lines: tuple[Change, ...]  # only the lines whose cycles changed, largest change first
    added: tuple[Instruction, ...]
    removed: tuple[Instruction, ...]
    moved: tuple[Moved, ...]


def diff(a: Schedule, b: Schedule) -> ScheduleDiff:
    lanes = [lane for lane in LANES if lane in a.lanes or lane in b.lanes]
    lanes += sorted((set(a.lanes) | set(b.lanes)) - set(LANES))
    return ScheduleDiff(
        Change("makespan", a.makespan, b.makespan),
        tuple(Change(lane, busy_cycles(a, lane), busy_cycles(b, lane)) for lane in lanes),
        _line_changes(a, b),
        *_match(a, b),
    )


def _line_changes(a: Schedule, b: Schedule) -> tuple[Change, ...]:
    before = {line.source: line.cycles for line in line_cycles(a)}
    after = {line.source: line.cycles for line in line_cycles(b)}
    changes = [Change(s, before.get(s, 0), after.get(s, 0)) for s in sorted(before.keys() | after.keys())]
    return tuple(sorted((c for c in changes if c.delta), key=lambda c: (-abs(c.delta), c.name)))


def _by_key(schedule: Schedule) -> dict[tuple[str, str], list[Instruction]]:
    groups: dict[tuple[str, str], list[Instruction]] = {}
    for instruction in sorted(schedule.instructions, key=_when):
        if instruction.lanes:
            groups.setdefault((instruction.source or "", instruction.tpe), []).append(instruction)
    return groups


def _match(a: Schedule, b: Schedule) -> tuple[tuple[Instruction, ...], tuple[Instruction, ...], tuple[Moved, ...]]:
    before, after = _by_key(a), _by_key(b)
    added: list[Instruction] = []
    removed: list[Instruction] = []
    moved: list[Moved] = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key, []), after.get(key, [])
        moved += [Moved(x, y) for x, y in zip(old, new, strict=False) if (x.begin, x.end) != (y.begin, y.end)]
        removed += old[len(new) :]
        added += new[len(old) :]
    in_time = sorted(added, key=_when), sorted(removed, key=_when)
    return tuple(in_time[0]), tuple(in_time[1]), tuple(sorted(moved, key=lambda m: _when(m.after)))


def _when(instruction: Instruction) -> tuple[int, int]:
    return instruction.begin, instruction.position


def _change_json(change: Change, key: str) -> dict[str, Any]:
    return {key: change.name, "before": change.before, "after": change.after, "delta": change.delta}


def diff_json(result: ScheduleDiff) -> dict[str, Any]:
    return {
        "makespan": {"before": result.makespan.before, "after": result.makespan.after, "delta": result.makespan.delta},
        "lanes": [_change_json(c, "lane") for c in result.lanes],
        "lines": [_change_json(c, "source") for c in result.lines],
        "added": [instruction_json(i) for i in result.added],
        "removed": [instruction_json(i) for i in result.removed],
        "moved": [
            {
                "before": instruction_json(m.before),
                "after": instruction_json(m.after),
                "begin_delta": m.after.begin - m.before.begin,
                "cycles_delta": m.after.cycles - m.before.cycles,
            }
            for m in result.moved
        ],
    }
