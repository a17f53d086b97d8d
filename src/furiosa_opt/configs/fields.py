"""How an engine config's numbers are declared: each field once, with its width and meaning.

A config in the EDF is a record of integers, as a register file would hold them; a field that repeats
(a walk's loop entries, a routing table) is a list of them. The declaration is the one place that says
what a field means: stage 2 writes from it, the EDF reader checks every value against it
(`check_record`), and docs/edf.md's table of configs is generated from it.

    Field("op", 4, "the ALU operation: its code in `vector.codes`")
    Field("walk", 32, "loop entries `size, stride`, outermost first", signed=True, repeat=2 * MAX_LOOPS)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Field:
    """One number of a config (or, with `repeat` > 1, a list of up to `repeat` of them)."""

    name: str
    bits: int  # the register width: every value fits it
    meaning: str
    signed: bool = False
    repeat: int = 1  # 1: one integer; more: a list of at most this many integers
    group: int = 1  # a list's values come in groups of this many (2: a box's or a walk's pairs)

    def problem(self, value: object) -> str | None:
        """Why `value` cannot be this field's content, or None."""
        values = value if self.repeat > 1 else [value]
        if self.repeat > 1 and not isinstance(value, list):
            return f"is not a list of integers ({type(value).__name__})"
        if len(values) > self.repeat:
            return f"holds {len(values)} values, at most {self.repeat} fit"
        if len(values) % self.group:
            return f"holds {len(values)} values, not a whole number of groups of {self.group}"
        low, high = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool):
                return f"holds {v!r}, not an integer"
            if not low <= v <= high:
                return f"holds {v}, outside the {self.bits}-bit {'signed ' if self.signed else ''}range"
        return None


@dataclass(frozen=True, slots=True)
class Record:
    """The fields of one stage's config, besides its `stage` name."""

    stage: str
    fields: tuple[Field, ...]
    meaning: str = ""

    def problem(self, config: dict) -> tuple[str, str] | None:
        """(field, why) for the first field of `config` this record does not accept, or None."""
        declared = {f.name: f for f in self.fields}
        for key in config:
            if key != "stage" and key not in declared:
                return key, f"is not a field of the `{self.stage}` config"
        for f in self.fields:
            if f.name not in config:
                return f.name, "is missing"
            why = f.problem(config[f.name])
            if why is not None:
                return f.name, why
        return None
