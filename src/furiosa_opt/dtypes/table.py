"""The table of scalar types: `DType`, the twelve dtypes, their lookup by name, and upstream's scalar methods.

A dtype's scalar methods (``bf16.from_f32(1.5)``, ``i4.from_i32(-9)``) follow the user rules: what host code
gets. They dispatch by dtype to the codecs of floats.py and ints.py, which sit below this table and so take
no dtype of it; convert.py reaches the hardware legs through the same dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from furiosa_opt.configs.codes import CodeTable
from furiosa_opt.dtypes.bits import DTypeError, Format, _as, _codes
from furiosa_opt.dtypes.floats import (
    BF16,
    F4E2M1,
    F8E4M3,
    F8E5M2,
    F32,
    bf16_from_f32,
    bf16_from_f32_hw,
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
from furiosa_opt.dtypes.ints import widen_int, wrap_int


@dataclass(frozen=True, slots=True)
class DType:
    """One scalar type: wire width, staging width, numpy storage and (for integers) value range."""

    name: str
    bits: int
    staging_bits: int
    storage: np.dtype
    is_float: bool
    materializable: bool
    int_range: tuple[int, int] | None = None

    def nbytes(self, count: int) -> int:
        """Bytes of ``count`` elements on the wire; sub-byte types need a whole number of bytes."""
        total = count * self.bits
        if count < 0 or total % 8:
            raise DTypeError(f"total bits must be byte-aligned: {count} x {self.name} = {total} bits")
        return total // 8

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    # --- Upstream's scalar methods (furiosa-opt-std/src/scalar.rs), spelled on the dtype ---
    #
    # | Python                                | upstream                                       |
    # |---------------------------------------|------------------------------------------------|
    # | bf16.from_f32(x) / bf16.to_f32(v)     | bf16::from_f32 / to_f32 (half: RNE; exact)     |
    # | bf16.from_bits(b) / bf16.to_bits(v)   | bf16::from_bits / to_bits                      |
    # | f8e4m3 / f8e5m2 .from_f32 / .to_f32   | f8e4m3::from_f32 / to_f32 (and f8e5m2's)       |
    # | f4e2m1 .from_f32 .to_f32 .from_bits   | f4e2m1::from_f32 / to_f32 / from_bits /        |
    # |   .to_bits .to_f8e4m3                 |   to_bits / to_f8e4m3                          |
    # | i4 / i5 / i9 .from_i32 / .to_i32      | i4::from_i32 / to_i32 (and i5's, i9's)         |
    # | i8 / i16 / i32 / u8 .from_i32 .to_i32 | Rust `v as i8` / `i32::from(v)` (no method)    |
    # | f32.from_f32 / f32.to_f32             | the f32 itself                                 |
    # | f8e4m3 / f8e5m2 / f32 .from_bits ...  | no public method upstream (raw codes)          |
    #
    # A scalar argument gives a numpy scalar of the dtype's storage, an array gives an array.

    def from_f32(self, x):
        """Upstream's ``<float type>::from_f32``: the nearest value of this float dtype (user rule).

        ``x`` is first rounded to f32, as upstream's argument is an f32. bf16 rounds to nearest even
        (overflow to inf, subnormals and NaN payloads kept, NaN made quiet); f8e4m3 saturates at ±448;
        f8e5m2 rounds half up; f4e2m1 takes the nearest of its 16 codes (ties to the lower code).

        >>> float(bf16.from_f32(1.01))
        1.0078125
        >>> float(f8e4m3.from_f32(1000.0))
        448.0
        """
        _method_of(self, "from_f32", _FLOATS)
        return _like(x, _FROM_USER[self](_f32_input(x)))

    def to_f32(self, value):
        """Upstream's ``<float type>::to_f32``: the exact f32 of a value of this dtype.

        bf16 widens exactly, subnormals included (``half``'s rule: a NaN keeps its payload and gets the
        quiet bit); the engines' bf16 leg (``dtypes.to_f32``) flushes subnormals instead. f8e4m3 NaN
        codes give +qNaN; f4e2m1 decodes through its f8e4m3 table. ``value`` is this dtype's storage
        (what ``from_f32`` returns) or its raw unsigned codes.

        >>> float(bf16.to_f32(bf16.from_bits(0x3FC0)))
        1.5
        >>> float(f4e2m1.to_f32(f4e2m1.from_bits(0xF)))
        -6.0
        """
        _method_of(self, "to_f32", _FLOATS)
        if self == f32:
            return _like(value, np.asarray(value, dtype=np.float32).copy())
        return _like(value, _USER_TO_F32[self](value))

    def from_bits(self, bits):
        """Upstream's ``bf16::from_bits`` / ``f4e2m1::from_bits``: the value with this raw encoding.

        f4e2m1 keeps the low nibble of a byte, as upstream; every other float dtype takes a code of its
        width (f8e4m3 / f8e5m2 / f32 have no public method upstream: their codes come from byte images).

        >>> float(bf16.from_bits(0xC040))
        -3.0
        >>> int(f4e2m1.to_bits(f4e2m1.from_bits(0x17)))
        7
        """
        _method_of(self, "from_bits", _FLOATS)
        limit = 1 << (8 if self == f4e2m1 else self.bits)
        codes = _ints_in(bits, 0, limit - 1, f"{self.name}.from_bits")
        if self == f4e2m1:
            codes = codes & 0xF
        return _like(bits, _as(codes, self))

    def to_bits(self, value):
        """Upstream's ``bf16::to_bits`` / ``f4e2m1::to_bits``: the raw encoding as unsigned integers.

        >>> hex(bf16.to_bits(bf16.from_f32(-2.0)))
        '0xc000'
        """
        _method_of(self, "to_bits", _FLOATS)
        codes = _codes(np.asarray(value, dtype=np.float32) if self == f32 else value, self)
        return _like(value, codes & 0xF if self == f4e2m1 else codes.copy())

    def from_i32(self, x):
        """Upstream's ``i4::from_i32`` (and ``i5``'s, ``i9``'s): keep the low bits, sign-extended.

        For i8 / i16 / u8 this is Rust's ``v as i8`` (wrap), for i32 the value itself. ``x`` must be an
        integer in the i32 range.

        >>> int(i4.from_i32(-9)), int(i4.from_i32(7)), int(i9.from_i32(256))
        (7, 7, -256)
        """
        _method_of(self, "from_i32", _INTS)
        return _like(x, wrap_int(_ints_in(x, -(2**31), 2**31 - 1, f"{self.name}.from_i32"), self))

    def to_i32(self, value):
        """Upstream's ``i4::to_i32`` (``i32::from`` for the others): the value as an i32.

        >>> int(i4.to_i32(i4.from_i32(-1)))
        -1
        """
        _method_of(self, "to_i32", _INTS)
        lo, hi = self.int_range
        return _like(value, widen_int(_ints_in(value, lo, hi, f"{self.name}.to_i32")))

    def to_f8e4m3(self, value):
        """Upstream's ``f4e2m1::to_f8e4m3``: the Fetch Adapter's table lookup of an e2m1 code.

        >>> hex(f8e4m3.to_bits(f4e2m1.to_f8e4m3(f4e2m1.from_bits(0x7))))
        '0x4c'
        """
        _method_of(self, "to_f8e4m3", (f4e2m1,))
        return _like(value, f8e4m3_from_f4e2m1(value))


def _int(name: str, bits: int, storage: type, lo: int, hi: int, staging: int | None = None) -> DType:
    return DType(name, bits, staging or bits, np.dtype(storage), False, staging is None, (lo, hi))


def _float(fmt: Format, bits: int) -> DType:
    return DType(fmt.name, bits, bits, fmt.storage, True, True)


i4 = _int("i4", 4, np.int8, -8, 7)
"""Signed 4-bit integer: two per byte on the wire, staged as i4.

Examples:
    >>> i4.int_range, i4.bits
    ((-8, 7), 4)
"""
# i5 / i9 are the zero-point-subtracted stagings: the wire carries i4 / i8, the staging one more bit.
i5 = _int("i5", 4, np.int8, -16, 15, staging=8)
"""Signed 5-bit staging of an i4 wire value after `fetch_zero_point_sub`; no tensor holds it.

Examples:
    >>> i5.int_range, i5.bits, i5.staging_bits        # an i4 on the wire, one more bit staged
    ((-16, 15), 4, 8)
"""
i8 = _int("i8", 8, np.int8, -(2**7), 2**7 - 1)
"""Signed 8-bit integer.

Examples:
    >>> i8.int_range, i8.storage
    ((-128, 127), dtype('int8'))
"""
i9 = _int("i9", 8, np.int16, -256, 255, staging=16)
"""Signed 9-bit staging of an i8 wire value after `fetch_zero_point_sub`; no tensor holds it.

Examples:
    >>> i9.int_range, i9.bits, i9.staging_bits        # an i8 on the wire, one more bit staged
    ((-256, 255), 8, 16)
"""
i16 = _int("i16", 16, np.int16, -(2**15), 2**15 - 1)
"""Signed 16-bit integer.

Examples:
    >>> i16.int_range
    (-32768, 32767)
"""
i32 = _int("i32", 32, np.int32, -(2**31), 2**31 - 1)
"""Signed 32-bit integer: the Vector Engine's integer type (fixed-point ops wrap or saturate).

Examples:
    >>> i32.int_range, i32.bits
    ((-2147483648, 2147483647), 32)
"""
u8 = _int("u8", 8, np.uint8, 0, 255)
"""Unsigned 8-bit integer.

Examples:
    >>> u8.int_range, u8.storage
    ((0, 255), dtype('uint8'))
"""
f32 = _float(F32, 32)
"""IEEE single precision: the Vector Engine's float type and the Contraction Engine's accumulator.

Examples:
    >>> f32.bits, f32.is_float, f32.storage
    (32, True, dtype('float32'))
"""
bf16 = _float(BF16, 16)
"""bfloat16: f32's range with 8 bits of mantissa, the usual operand type of a contraction.

Examples:
    >>> float(bf16.to_f32(bf16.from_f32(3.14159)))   # 8 bits of mantissa
    3.140625
    >>> bf16.bits, bf16.is_float
    (16, True)
"""
f8e4m3 = _float(F8E4M3, 8)
"""8-bit float, 4 exponent and 3 mantissa bits (no infinities), for weights and activations.

Examples:
    >>> float(f8e4m3.to_f32(f8e4m3.from_f32(0.3)))   # 3 bits of mantissa
    0.3125
"""
f8e5m2 = _float(F8E5M2, 8)
"""8-bit float, 5 exponent and 2 mantissa bits, f16's range at lower precision.

Examples:
    >>> float(f8e5m2.to_f32(f8e5m2.from_f32(0.3)))   # 2 bits of mantissa
    0.3125
"""
f4e2m1 = _float(F4E2M1, 4)
"""4-bit float, 2 exponent and 1 mantissa bit: two per byte; the fetch adapter widens it by table lookup.

Examples:
    >>> f4e2m1.bits, float(f4e2m1.to_f32(f4e2m1.from_f32(2.6)))   # two per byte on the wire
    (4, 3.0)
"""

ALL_DTYPES: tuple[DType, ...] = (i4, i5, i8, i9, i16, i32, u8, f32, bf16, f8e4m3, f8e5m2, f4e2m1)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# An engine config's `dtype` in the EDF: the position in ALL_DTYPES (a new dtype goes at the end).
DTYPE_CODES: CodeTable[DType] = CodeTable("dtype", ALL_DTYPES)


def dtype_by_name(name: str) -> DType:
    """Looks a scalar type up by its name (``"bf16"``, ``"i4"``, ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise DTypeError(f"unknown dtype {name!r}; valid names: {', '.join(_BY_NAME)}") from None


# --- Dispatch by dtype ---

_TO_F32 = {f32: lambda x: np.asarray(x, dtype=np.float32), bf16: f32_from_bf16_hw}
_TO_F32 |= {f8e4m3: f32_from_f8e4m3, f8e5m2: f32_from_f8e5m2, f4e2m1: f32_from_f4e2m1}
_FROM_F32 = {f32: lambda x: np.asarray(x, dtype=np.float32), bf16: bf16_from_f32_hw}
_FROM_F32 |= {f8e4m3: f8e4m3_from_f32, f8e5m2: f8e5m2_from_f32, f4e2m1: f4e2m1_from_f32}
_FROM_USER = _FROM_F32 | {bf16: bf16_from_f32}
_USER_TO_F32 = _TO_F32 | {bf16: f32_from_bf16}
_FLOATS = (f32, bf16, f8e4m3, f8e5m2, f4e2m1)
_INTS = (i4, i5, i8, i9, i16, i32, u8)


def _method_of(dtype: DType, method: str, owners: tuple[DType, ...]) -> None:
    if dtype not in owners:
        raise DTypeError(f"{dtype.name} has no {method}; it is a method of {', '.join(d.name for d in owners)}")


def _f32_input(x) -> np.ndarray:
    """``x`` as f32 (how upstream's f32 argument arrives); raw codes of another float type are refused."""
    v = np.asarray(x)
    if v.dtype.kind not in "iuf":
        raise DTypeError(f"from_f32 takes real numbers (rounded to f32), got {v.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):  # f64 beyond the f32 range rounds to inf, as in Rust
        return v.astype(np.float32)


def _ints_in(x, lo: int, hi: int, what: str) -> np.ndarray:
    """``x`` as an int64 array of integers in ``[lo, hi]``, else a ``DTypeError`` naming the first offender."""
    v = np.asarray(x)
    if v.dtype.kind not in "iu":
        raise DTypeError(f"{what}: expected integers, got {v.dtype}")
    bad = (v < lo) | (v > hi)
    if bad.any():
        first = v[np.unravel_index(np.flatnonzero(bad)[0], v.shape)]
        raise DTypeError(f"{what}: expected integers in [{lo}, {hi}], got {first}")
    return v.astype(np.int64)


def _like(x, out: np.ndarray):
    """A numpy scalar for a scalar argument, else the array."""
    return out[()] if np.ndim(x) == 0 else out
