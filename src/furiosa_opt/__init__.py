"""furiosa-opt: kernels for FuriosaAI's RNGD NPU, written in Python.

`from furiosa_opt import *` brings the kernel language: axes and mappings, scalar types, tensors,
contexts, `@device` and `launch`. The names below are the public contract (tests pin them).
"""

from furiosa_opt.dtypes import bf16, f4e2m1, f8e4m3, f8e5m2, f32, i4, i8, i16, i32, u8
from furiosa_opt.mapping import Axis, Cell, Mapping, MappingError, MappingSyntaxError, PadKind, axes, m

__version__ = "0.1.0"

__all__ = [
    "Axis",
    "Cell",
    "Mapping",
    "MappingError",
    "MappingSyntaxError",
    "PadKind",
    "axes",
    "bf16",
    "f4e2m1",
    "f8e4m3",
    "f8e5m2",
    "f32",
    "i4",
    "i8",
    "i16",
    "i32",
    "m",
    "u8",
]
