"""The study file: one JSON object a line, a header then one line per evaluated trial.

    {"kernel": "pkg.kernel.gemm_kernel.gemm_kernel", "objective": "static", "sampler": "grid", "space": {...}}
    {"number": 0, "choices": {"tile_i": 32, ...}, "state": "ok", "makespan": 72359, "lower_bound": 71815, ...}
    {"number": 3, "choices": {"tile_i": 64, ...}, "state": "refused", "rule": "slice-size", "message": "..."}

Each finished trial rewrites the file atomically (`files.write_atomic`), so a reader or a crash never sees
half a line, and `--resume` reads back every trial that finished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from furiosa_opt.files import printable, write_atomic
from furiosa_opt.tune.choices import Value

STATES = ("ok", "refused", "wrong", "error")
SAMPLERS = ("grid", "tpe")  # Optuna's GridSampler and TPESampler
OBJECTIVES = ("static", "simulated")  # the cost model's makespan, or the simulator's (checked against the CPU)


class StudyError(ValueError):
    """A study file that cannot be resumed: unreadable, malformed, or made for another kernel or space."""


@dataclass
class Study:
    """The header (kernel, objective, sampler, space) and the trials evaluated so far, in finishing order."""

    kernel: str
    objective: str
    sampler: str
    space: dict[str, list[Value]]
    trials: list[dict] = field(default_factory=list)

    def header(self) -> dict:
        return {"kernel": self.kernel, "objective": self.objective, "sampler": self.sampler, "space": self.space}

    def lines(self) -> bytes:
        rows = [self.header(), *self.trials]
        return "".join(json.dumps(row) + "\n" for row in rows).encode()  # keys as made: the space in declared order

    def value(self, trial: dict) -> int | None:
        """What the search minimises for a trial: the simulator's makespan or the static one; None unless ok."""
        if trial.get("state") != "ok":
            return None
        return trial.get("simulated") if self.objective == "simulated" else trial.get("makespan")

    def ranked(self) -> list[dict]:
        """The ok trials, best first; ties go to the point nearer the defaults in the space's order (each
        choice's value index, in declaration order), so every executor and trial order ranks alike."""
        ok = [t for t in self.trials if self.value(t) is not None]
        return sorted(ok, key=lambda t: (self.value(t), self.position(t["choices"])))

    def position(self, choices: dict[str, Value]) -> tuple[int, ...]:
        """The point's value indices in the space, in the space's order (the defaults are all zeros)."""
        return tuple(values.index(choices[name]) if choices.get(name) in values else len(values)
                     for name, values in self.space.items())  # fmt: skip

    def find(self, choices: dict[str, Value]) -> dict | None:
        return next((t for t in self.trials if t["choices"] == choices), None)


def save(study: Study, path: Path) -> None:
    write_atomic(path, study.lines())


def load(path: Path) -> Study:
    """The study in `path`; a StudyError naming the file and line when it is not one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise StudyError(f"{path}: cannot read the study: {getattr(error, 'strerror', None) or error}") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            raise StudyError(f"{path}:{number}: not a JSON object: {printable(line[:60])}") from None
        if not isinstance(row, dict):
            raise StudyError(f"{path}:{number}: not a JSON object: {printable(line[:60])}")
        rows.append((number, row))
    if not rows or not all(k in rows[0][1] for k in ("kernel", "objective", "sampler", "space")):
        raise StudyError(f"{path}:1: the first line is not a study header (kernel, objective, sampler, space)")
    header = rows[0][1]
    study = Study(header["kernel"], header["objective"], header["sampler"], header["space"])
    for number, row in rows[1:]:
        if not isinstance(row.get("number"), int) or not isinstance(row.get("choices"), dict):
            raise StudyError(f"{path}:{number}: a trial needs an integer `number` and a `choices` object")
        if row.get("state") not in STATES:
            raise StudyError(f"{path}:{number}: state {row.get('state')!r} is not one of {', '.join(STATES)}")
        study.trials.append(row)
    return study


def resumable(found: Study, wanted: Study, path: Path) -> None:
    """Refuse to resume a study made for another kernel, objective or space (its trials would mislead)."""
    for name in ("kernel", "objective", "space"):
        if getattr(found, name) != getattr(wanted, name):
            raise StudyError(
                f"{path}: the study's {name} is {getattr(found, name)!r}, this run's is {getattr(wanted, name)!r}: "
                "tune without --resume to start a new study"
            )
