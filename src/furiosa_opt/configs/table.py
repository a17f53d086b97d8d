"""docs/edf.md's table of engine config fields, generated from the declarations (`configs.layouts` for the
layouts, `configs.vector` for the codes and raw bits), so the document cannot drift from what stage 2
writes and the reader checks. `tests/docs/test_config_table.py` compares the two; after changing a
declaration, print the table with `python -m furiosa_opt.configs.table` and paste it between the markers.
"""

from __future__ import annotations

from furiosa_opt.configs import layouts, vector
from furiosa_opt.configs.fields import Field
from furiosa_opt.stages import STAGES

BEGIN, END = "<!-- engine config fields: begin -->", "<!-- engine config fields: end -->"


def fields_by_stage() -> dict[str, tuple[Field, ...]]:
    """Every declared field of each stage, layouts first, in the stage table's order."""
    declared = {}
    for stage in STAGES:
        fields = tuple(
            f for records in (layouts.RECORDS, vector.RECORDS) if stage in records for f in records[stage].fields
        )
        if fields:
            declared[stage] = fields
    return declared


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
