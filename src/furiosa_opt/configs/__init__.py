"""The EDF's engine configs as numbers: each Tensor Unit stage's record, declared once.

`fields.py` says how a field is declared, `layouts.py` declares the live boxes and walks, `vector.py` the
codes and raw bits (with `codes.py`, the code tables' form), and `table.py` renders them all as
docs/edf.md's table."""

from furiosa_opt.configs.fields import Field, Record

__all__ = ["Field", "Record"]
