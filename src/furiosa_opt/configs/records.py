"""Each engine stage's config as a typed record: one frozen dataclass per stage of the table, its fields
exactly the ones declared for it (layouts in `layouts.py`, codes and raw bits in `vector.py`, derived
counts and the register-file port in `derived.py`), layouts first.

Stage 2 builds them (`config_of`), the EDF writer packs their fields, the reader checks a decoded map
against the declaration (`problem`) before it builds one, and the cost model and the simulator read their
attributes. A field nobody declared cannot be written, read or carried.

    config = config_of({"stage": "cast", "dtype": 3, ...})
    config.dtype      # 3
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass

from furiosa_opt.configs import derived, layouts, vector
from furiosa_opt.configs.fields import Field, Record
from furiosa_opt.stages import STAGES


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """What every stage's config holds: the stage it configures (its name in `stages.STAGES`)."""

    stage: str


def _declared() -> dict[str, Record]:
    records = {}
    for name, stage in STAGES.items():
        if stage.engine is None:
            continue
        found = [r for table in (layouts.RECORDS, vector.RECORDS, derived.RECORDS) if (r := table.get(name))]
        fields = tuple(f for record in found for f in record.fields)
        records[name] = Record(name, fields, next((r.meaning for r in found if r.meaning), ""))
    return records


RECORDS: dict[str, Record] = _declared()  # every engine stage, its fields from every declaration


def _class(record: Record) -> type[EngineConfig]:
    name = "".join(part.title() for part in record.stage.split("_")) + "Config"
    spec = [(f.name, int if f.repeat == 1 else list[int]) for f in record.fields]
    cls = make_dataclass(name, spec, bases=(EngineConfig,), frozen=True, slots=True)
    cls.__module__ = __name__  # `make_dataclass(module=…)` is Python 3.12's
    return cls


CONFIGS: dict[str, type[EngineConfig]] = {stage: _class(record) for stage, record in RECORDS.items()}


def fields_of(stage: str) -> tuple[Field, ...]:
    """The declared fields of `stage`'s config, in order."""
    return RECORDS[stage].fields


def config_of(values: dict) -> EngineConfig:
    """The typed config of a map holding `stage` and exactly its declared fields (stage 2's, or the
    reader's after `problem` found none); ValueError names what does not fit."""
    stage = values.get("stage")
    if stage not in CONFIGS:
        raise ValueError(f"no engine stage is called {stage!r}")
    found = RECORDS[stage].problem(values)
    if found is not None:
        raise ValueError(f"the `{stage}` config's field `{found[0]}` {found[1]}")
    return CONFIGS[stage](**values)


def problem(values: dict) -> tuple[str, str] | None:
    """(field, why) for the first thing in a decoded config map that is not its stage's record: an unknown
    stage, a field missing, undeclared or out of its width, then the layout numbers' consistency and the
    codes' meaning (`layouts.problem`, `vector.problem`)."""
    stage = values.get("stage")
    if stage not in CONFIGS:
        return "stage", f"{stage!r} is not a stage with an engine"
    found = RECORDS[stage].problem(values)
    if found is not None:
        return found
    config = CONFIGS[stage](**values)
    return layouts.problem(config) or vector.problem(config)
