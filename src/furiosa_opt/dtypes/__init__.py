"""Scalar types of the RNGD NPU and their bit-exact conversion rules.

Every element lives in numpy in its ``DType.storage`` dtype (``ml_dtypes`` for the narrow floats).
Two families of conversions coexist, as in the reference implementation:

* user constructors (``from_user``, ``bf16_from_f32``) and the scalar methods of a dtype
  (``bf16.from_f32(1.5)``, ``f8e4m3.to_f32(v)``, ``i4.from_i32(-9)``): what host code gets;
* hardware legs (the module functions ``from_f32`` / ``to_f32`` and the ``*_hw`` functions): what
  Fetch Adapter, Cast Engine and Commit Adapter compute (flushed subnormals, one canonical NaN word).

The two differ only for bf16: ``bf16.to_f32(v)`` widens exactly (subnormals kept), the engines' leg
flushes them; ``bf16.from_f32(x)`` keeps subnormals and NaN payloads, the engines' leg does not.

All conversions are vectorised over arrays of any shape and work on the raw bit patterns.

Every name below is importable from here (``from furiosa_opt.dtypes import bf16``). Where each lives,
each module importing only those above it:

* ``bits.py``: ``DTypeError``, the ``Format`` the lower modules read, and the bit-level helpers;
* ``floats.py``: the float formats and codecs, user and hardware (``bf16_from_f32``, ``f32_from_bf16_hw``,
  ``f8e4m3_from_f32``, ``f4e2m1_from_f32``, ...: FTZ, canonical NaN, f8 saturation and rounding quirks);
* ``ints.py``: integer narrowing and widening (``wrap_int``, ``widen_int``) and fixed point
  (``fxp_to_fp``, ``fp_to_fxp``);
* ``table.py``: ``DType`` with upstream's scalar methods, the dtypes ``i4`` … ``f4e2m1``, ``ALL_DTYPES``,
  ``dtype_by_name``, ``DTYPE_CODES`` (a dtype's number in an EDF engine config), and the dispatch by dtype;
* ``convert.py``: conversions by dtype (``to_f32``, ``from_f32``, ``convert``, ``table_lookup``,
  ``from_user``, ``rand``);
* ``images.py``: byte images (``code_of``, ``from_code``, ``fill_pattern``, ``pack_nibbles``,
  ``unpack_nibbles``, ``pack``, ``unpack``);
* ``opt.py``: ``Opt``, upstream's initialized-or-not cell value.
"""

from furiosa_opt.dtypes.bits import DTypeError
from furiosa_opt.dtypes.convert import (
    commit_cast,
    convert,
    from_f32,
    from_user,
    rand,
    table_lookup,
    to_f32,
    zero_point_sub,
)
from furiosa_opt.dtypes.floats import (
    bf16_from_f32,
    bf16_from_f32_hw,
    bf16_from_f32_relu_hw,
    f4e2m1_from_f32,
    f8e4m3_from_f4e2m1,
    f8e4m3_from_f32,
    f8e5m2_from_f32,
    f32_from_bf16,
    f32_from_bf16_hw,
    f32_from_f4e2m1,
    f32_from_f8e4m3,
    f32_from_f8e5m2,
)
from furiosa_opt.dtypes.images import code_of, fill_pattern, from_code, pack, pack_nibbles, unpack, unpack_nibbles
from furiosa_opt.dtypes.ints import fp_to_fxp, fxp_to_fp, widen_int, wrap_int
from furiosa_opt.dtypes.opt import Opt
from furiosa_opt.dtypes.table import (
    ALL_DTYPES,
    DTYPE_CODES,
    DType,
    bf16,
    dtype_by_name,
    f4e2m1,
    f8e4m3,
    f8e5m2,
    f32,
    i4,
    i5,
    i8,
    i9,
    i16,
    i32,
    u8,
)

__all__ = [
    "ALL_DTYPES",
    "DTYPE_CODES",
    "DType",
    "DTypeError",
    "Opt",
    "bf16",
    "bf16_from_f32",
    "bf16_from_f32_hw",
    "bf16_from_f32_relu_hw",
    "code_of",
    "commit_cast",
    "convert",
    "dtype_by_name",
    "f4e2m1",
    "f4e2m1_from_f32",
    "f8e4m3",
    "f8e4m3_from_f4e2m1",
    "f8e4m3_from_f32",
    "f8e5m2",
    "f8e5m2_from_f32",
    "f32",
    "f32_from_bf16",
    "f32_from_bf16_hw",
    "f32_from_f4e2m1",
    "f32_from_f8e4m3",
    "f32_from_f8e5m2",
    "fill_pattern",
    "fp_to_fxp",
    "from_code",
    "from_f32",
    "from_user",
    "fxp_to_fp",
    "i4",
    "i5",
    "i8",
    "i9",
    "i16",
    "i32",
    "pack",
    "pack_nibbles",
    "rand",
    "table_lookup",
    "to_f32",
    "u8",
    "unpack",
    "unpack_nibbles",
    "widen_int",
    "wrap_int",
    "zero_point_sub",
]
