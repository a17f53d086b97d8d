"""docs/edf.md's table of engine config fields, generated from the declarations (`configs.records`: the
layouts, the codes and raw bits, the derived counts and the register-file port), so the document cannot
drift from what stage 2 writes and the reader checks. `tests/docs/test_config_table.py` compares the two;
after changing a declaration, print the table with `python -m furiosa_opt.configs.table` and paste it
between the markers.
"""

from __future__ import annotations

from furiosa_opt.configs.fields import Field
from furiosa_opt.configs.records import RECORDS

BEGIN, END = "<!-- engine config fields: begin -->", "<!-- engine config fields: end -->"


def fields_by_stage() -> dict[str, tuple[Field, ...]]:
    """Every declared field of each stage that has any, layouts first, in the stage table's order."""
    return {stage: record.fields for stage, record in RECORDS.items() if record.fields}


def markdown() -> str:
    """The table, one row per stage and field: its width in bits, how many values it holds, its meaning."""
    rows = [BEGIN, "| stage | field | bits | values | meaning |", "|---|---|---|---|---|"]
    for stage, fields in fields_by_stage().items():
        for f in fields:
            count = (f"up to {f.repeat}" + (" (pairs)" if f.group == 2 else "")) if f.repeat > 1 else "1"
            bits = f"{f.bits}, signed" if f.signed else str(f.bits)
            meaning = f.meaning.replace("|", r"\|")
            rows.append(f"| `{stage}` | `{f.name}` | {bits} | {count} | {meaning} |")
    return "\n".join([*rows, END])


if __name__ == "__main__":
    print(markdown())
