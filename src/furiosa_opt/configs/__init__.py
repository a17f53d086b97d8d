"""The EDF's engine configs as numbers: each Tensor Unit stage's record, declared once (`fields.py`)."""

from furiosa_opt.configs.fields import Field, Record

__all__ = ["Field", "Record"]
