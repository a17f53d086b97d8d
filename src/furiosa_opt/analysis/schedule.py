"""Schedule JSON (docs/design.md, "Schedule JSON") read into typed, checked records.

Both shapes load: ours (`format`, `version`, `kernel`, `makespan`, `source` on each instruction) and
upstream's, which may lack all of those; then the makespan is the last instruction's end and the
source is the `--> file:line` at the end of the description. A malformed file is a `ScheduleError`
naming the field (`instructions[3].lifetime.end`), never a traceback.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from furiosa_opt.diagnostics import FuriosaOptError

LANES = ("Main", "Sub", "VE", "TDMA", "PDMA", "Core")
"""The lanes the Schedule Viewer draws, in its order."""

CONTEXT_LANES: dict[str, str | None] = {
    "MainContext": "Main",
    "SubContext": "Sub",
    "VectorEngine": "VE",
    "DmaEngine": "TDMA",
    "PcieDma": "PDMA",
    "Core": "Core",
    "CoreContext": "Core",
    "Noop": None,
}
"""Context name → lane; a context not listed here is drawn on a lane of its own name."""

_SOURCE = re.compile(r"-->\s*(\S+?:\d+)(?::\d+)?\s*$")
_REQUIRED = object()


class ScheduleError(FuriosaOptError):
    """A schedule file that cannot be read: not JSON, or a field missing or of the wrong kind."""


@dataclass(frozen=True, slots=True)
class Instruction:
    position: int  # order in the file: the identity, since upstream indices need not be unique ints
    index: int | str
    name: str
    tpe: str
    contexts: tuple[str, ...]
    lanes: tuple[str, ...]
    begin: int
    end: int
    util: float | None
    description: str
    source: str | None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    memory: dict[str, Any] | None = None  # a DMA's memory report (memsys.findings.report), when the file has it

    @property
    def cycles(self) -> int:
        return self.end - self.begin


@dataclass(frozen=True, slots=True)
class ScheduleTensor:
    """One entry of a schedule's `tensors`: a buffer as the schedule JSON describes it (no data), named apart
    from the language's `Tensor`."""

    index: int
    name: str
    visa_name: str | None
    buffer_type: str
    address: int | None
    size: int
    dtype: str | None
    mapping: str | None
    begin: int
    end: int


@dataclass(frozen=True)
class Schedule:
    kernel: str | None
    makespan: int
    instructions: tuple[Instruction, ...]
    tensors: dict[int, ScheduleTensor]

    @cached_property
    def lanes(self) -> tuple[str, ...]:
        """The lanes some instruction occupies: the viewer's first, in its order, then any others."""
        used = {lane for i in self.instructions for lane in i.lanes}
        return tuple(lane for lane in LANES if lane in used) + tuple(sorted(used - set(LANES)))

    def on_lane(self, lane: str) -> list[Instruction]:
        return [i for i in self.instructions if lane in i.lanes]


def lanes_of(contexts: tuple[str, ...]) -> tuple[str, ...]:
    """The lanes one instruction occupies (a Tensor Unit op under the 64-access rule also holds TDMA)."""
    lanes = (CONTEXT_LANES.get(c, c) for c in contexts)
    return tuple(dict.fromkeys(lane for lane in lanes if lane is not None))


def load_schedule(path: Path) -> Schedule:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ScheduleError(f"{path}: cannot read the schedule: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ScheduleError(f"{path}: not a schedule: the file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScheduleError(f"{path}: not JSON: {error.msg} at line {error.lineno}") from None
    except RecursionError:
        raise ScheduleError(f"{path}: not a schedule: its JSON nests deeper than Python can read") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise ScheduleError(f"{path}: not a schedule: {str(error).splitlines()[0]}") from None
    return parse_schedule(data, str(path))


def parse_schedule(data: Any, origin: str = "<schedule>") -> Schedule:
    try:
        return _schedule(data)
    except ScheduleError as error:
        raise ScheduleError(f"{origin}: {error}") from None
    except RecursionError:
        raise ScheduleError(f"{origin}: not a schedule: it nests deeper than Python can read") from None


def _schedule(data: Any) -> Schedule:
    if not isinstance(data, dict):
        raise ScheduleError("expected a JSON object with `instructions` and `tensors`")
    raw_tensors = _get(data, "tensors", "schedule", list)
    tensors: dict[int, ScheduleTensor] = {}
    for n, record in enumerate(raw_tensors):
        tensor = _tensor(record, f"tensors[{n}]")
        if tensor.index in tensors:
            raise ScheduleError(f"tensors[{n}].index: tensor {tensor.index} appears twice")
        tensors[tensor.index] = tensor
    raw_instructions = _get(data, "instructions", "schedule", list)
    instructions = tuple(_instruction(n, r, f"instructions[{n}]", tensors) for n, r in enumerate(raw_instructions))
    last = max((i.end for i in instructions), default=0)
    makespan = _get(data, "makespan", "schedule", int, last)
    if makespan < last:
        raise ScheduleError(f"makespan {makespan} is before the last instruction's end ({last})")
    return Schedule(_get(data, "kernel", "schedule", str, None), makespan, instructions, tensors)


def _instruction(position: int, record: Any, where: str, tensors: dict[int, ScheduleTensor]) -> Instruction:
    record = _object(record, where)
    index = _get(record, "index", where, (int, str))
    begin, end = _interval(_get(record, "lifetime", where, dict), f"{where}.lifetime")
    contexts = tuple(_strings(_get(record, "contexts", where, list), f"{where}.contexts"))
    description = _get(record, "description", where, str, "")
    source = _get(record, "source", where, str, None)
    if source is None and (found := _SOURCE.search(description)):
        source = found.group(1)
    util = _get(record, "util", where, dict, None)
    total = None if util is None else float(_get(util, "total_util", f"{where}.util", (int, float)))
    total = total if total is None or math.isfinite(total) else None  # NaN or ±Infinity: not known
    return Instruction(
        position,
        index,
        _get(record, "name", where, str, str(index)),
        _get(record, "tpe", where, str),
        contexts,
        lanes_of(contexts),
        begin,
        end,
        total,
        description,
        source,
        _tensor_ids(record, "input_tensors", where, tensors),
        _tensor_ids(record, "output_tensors", where, tensors),
        _get(record, "memory", where, dict, None),
    )


def _tensor(record: Any, where: str) -> ScheduleTensor:
    record = _object(record, where)
    lifetime = _get(record, "lifetime", where, dict)
    begin, end = _interval(lifetime, f"{where}.lifetime")
    return ScheduleTensor(
        _get(record, "index", where, int),
        _get(record, "name", where, str),
        _get(record, "visa_name", where, str, None),
        _get(record, "buffer_type", where, str),
        _get(record, "address", where, int, None),
        _natural(_get(record, "size", where, int), f"{where}.size"),
        _get(record, "dtype", where, str, None),
        _get(record, "mapping", where, str, None),
        begin,
        end,
    )


def _tensor_ids(record: dict, key: str, where: str, tensors: dict[int, ScheduleTensor]) -> tuple[int, ...]:
    ids = _get(record, key, where, list, [])
    for n, value in enumerate(ids):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScheduleError(f"{where}.{key}[{n}]: expected a tensor index, got {_show(value)}")
        if value not in tensors:
            raise ScheduleError(f"{where}.{key}[{n}]: tensor {value} is not in `tensors`")
    return tuple(ids)


def _interval(lifetime: dict, where: str) -> tuple[int, int]:
    begin = _natural(_get(lifetime, "begin", where, int), f"{where}.begin")
    end = _get(lifetime, "end", where, int)
    if end < begin:
        raise ScheduleError(f"{where}: ends at {end}, before it begins at {begin}")
    return begin, end


def _natural(value: int, where: str) -> int:
    if value < 0:
        raise ScheduleError(f"{where}: expected a non-negative integer, got {value}")
    return value


def _strings(values: list, where: str) -> list[str]:
    for n, value in enumerate(values):
        if not isinstance(value, str):
            raise ScheduleError(f"{where}[{n}]: expected a string, got {_show(value)}")
    return values


def _object(record: Any, where: str) -> dict:
    if not isinstance(record, dict):
        raise ScheduleError(f"{where}: expected an object, got {_show(record)}")
    return record


def _get(record: dict, key: str, where: str, kinds: type | tuple[type, ...], default: Any = _REQUIRED) -> Any:
    """`record[key]` if it is one of `kinds` (a bool is not an int); `default` when absent or null."""
    value = record.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ScheduleError(f"{where}: missing `{key}`")
        return default
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        wanted = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise ScheduleError(f"{where}.{key}: expected {wanted}, got {_show(value)}")
    if isinstance(value, int) and not isinstance(value, bool) and not -LIMIT <= value < LIMIT:
        raise ScheduleError(f"{where}.{key}: {_show(value)} is outside the 64-bit integers a schedule holds")
    return value


LIMIT = 1 << 63  # cycles, sizes, addresses and indices are 64-bit integers in every tool that writes them


_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}


def _show(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and not -LIMIT <= value < LIMIT:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = json.dumps(value)
    except (ValueError, RecursionError):
        text = "a value nested too deeply"
    return text if len(text) <= 40 else text[:37] + "..."


def instruction_json(instruction: Instruction) -> dict[str, Any]:
    """The fields every command's `--json` shows for an instruction."""
    return {
        "name": instruction.name,
        "index": instruction.index,
        "tpe": instruction.tpe,
        "lanes": list(instruction.lanes),
        "begin": instruction.begin,
        "end": instruction.end,
        "cycles": instruction.cycles,
        "source": instruction.source,
    }
