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
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np


class DTypeError(ValueError):
    """A value, element count or byte image that a scalar type cannot represent."""


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


def _float(name: str, bits: int, storage: type) -> DType:
    return DType(name, bits, bits, np.dtype(storage), True, True)


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
f32 = _float("f32", 32, np.float32)
"""IEEE single precision: the Vector Engine's float type and the Contraction Engine's accumulator.

Examples:
    >>> f32.bits, f32.is_float, f32.storage
    (32, True, dtype('float32'))
"""
bf16 = _float("bf16", 16, ml_dtypes.bfloat16)
"""bfloat16: f32's range with 8 bits of mantissa, the usual operand type of a contraction.

Examples:
    >>> float(bf16.to_f32(bf16.from_f32(3.14159)))   # 8 bits of mantissa
    3.140625
    >>> bf16.bits, bf16.is_float
    (16, True)
"""
f8e4m3 = _float("f8e4m3", 8, ml_dtypes.float8_e4m3fn)
"""8-bit float, 4 exponent and 3 mantissa bits (no infinities), for weights and activations.

Examples:
    >>> float(f8e4m3.to_f32(f8e4m3.from_f32(0.3)))   # 3 bits of mantissa
    0.3125
"""
f8e5m2 = _float("f8e5m2", 8, ml_dtypes.float8_e5m2)
"""8-bit float, 5 exponent and 2 mantissa bits, f16's range at lower precision.

Examples:
    >>> float(f8e5m2.to_f32(f8e5m2.from_f32(0.3)))   # 2 bits of mantissa
    0.3125
"""
f4e2m1 = _float("f4e2m1", 4, ml_dtypes.float4_e2m1fn)
"""4-bit float, 2 exponent and 1 mantissa bit: two per byte; the fetch adapter widens it by table lookup.

Examples:
    >>> f4e2m1.bits, float(f4e2m1.to_f32(f4e2m1.from_f32(2.6)))   # two per byte on the wire
    (4, 3.0)
"""

ALL_DTYPES: tuple[DType, ...] = (i4, i5, i8, i9, i16, i32, u8, f32, bf16, f8e4m3, f8e5m2, f4e2m1)
_BY_NAME = {d.name: d for d in ALL_DTYPES}


def dtype_by_name(name: str) -> DType:
    """Looks a scalar type up by its name (``"bf16"``, ``"i4"``, ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise DTypeError(f"unknown dtype {name!r}; valid names: {', '.join(_BY_NAME)}") from None


# --- Bit-level helpers ---

_F32_QNAN = 0x7FC00000
_BF16_QNAN = 0x7FC0


def _f32_bits(x) -> np.ndarray:
    """The f32 bit patterns of ``x`` as int64, so intermediate arithmetic never wraps."""
    with np.errstate(invalid="ignore"):  # a signalling NaN input raises the invalid flag when cast
        return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def _codes(x, dtype: DType) -> np.ndarray:
    """The raw codes of a ``dtype``-storage array, unwidened (unsigned arrays of the same width pass)."""
    arr = np.asarray(x)
    raw = np.dtype(f"u{dtype.storage.itemsize}")
    if arr.dtype not in (dtype.storage, raw):
        raise DTypeError(f"expected a {dtype.name} array ({dtype.storage}) or raw {raw} codes, got {arr.dtype}")
    return arr.view(raw)


def _raw_bits(x, dtype: DType) -> np.ndarray:
    """The raw codes as int64, so intermediate arithmetic never wraps."""
    return _codes(x, dtype).astype(np.int64)


def _as(bits: np.ndarray, dtype: DType) -> np.ndarray:
    return bits.astype(f"u{dtype.storage.itemsize}").view(dtype.storage)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """Rust's ``f64::round`` (ties away from zero); exact, unlike ``floor(v + 0.5)``."""
    t = np.trunc(v)
    with np.errstate(invalid="ignore"):  # inf - inf for infinite lanes; their result stays inf
        frac = np.abs(v - t)
    return np.where(frac >= 0.5, t + np.sign(v), t)


# --- bf16 ---


def _bf16_user_bits(n: np.ndarray) -> np.ndarray:
    # `half::bf16::from_f32`: RNE on the low 16 bits (overflow carries into inf); NaN keeps its sign and
    # top payload bits and is forced quiet.
    nan = (n & 0x7FFFFFFF) > 0x7F800000
    round_up = ((n & 0x8000) != 0) & ((n & 0x17FFF) != 0)
    return np.where(nan, (n >> 16) | 0x40, (n >> 16) + round_up)


def bf16_from_f32(x) -> np.ndarray:
    """User constructor (``half::bf16::from_f32``): RNE, overflow -> inf, subnormals and NaN payload kept.

    ml_dtypes' cast rounds the same way and runs in C; only its NaNs differ (it makes them canonical), so
    those lanes take the bit-exact path."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # NaN lanes are redone below
        out = x.astype(bf16.storage)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = _as(_bf16_user_bits(_f32_bits(x[nan])), bf16)
    return out


def f32_from_bf16(x) -> np.ndarray:
    """User widening (``half::bf16::to_f32``): exact, subnormals kept; a NaN gets the quiet bit, keeps
    its sign and payload."""
    h = _codes(x, bf16).astype(np.uint32)
    nan = (h & 0x7FFF) > 0x7F80
    return (np.where(nan, h | 0x40, h) << 16).astype(np.uint32).view(np.float32)


def _bf16_hw_bits(n: np.ndarray) -> np.ndarray:
    subnormal = ((n & 0x7F800000) == 0) & ((n & 0x7FFFFF) != 0)
    out = np.where(subnormal, (n >> 16) & 0x8000, _bf16_user_bits(n))
    return np.where((n & 0x7FFFFFFF) > 0x7F800000, _BF16_QNAN, out)


def bf16_from_f32_hw(x) -> np.ndarray:
    """Hardware f32 -> bf16 (``float/bf16.rs``): NaN -> 0x7fc0, f32 subnormal -> signed zero, else RNE.

    ml_dtypes' C cast does the RNE; the lanes the hardware treats differently are set afterwards."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x.astype(bf16.storage)
    n, bits = x.view(np.uint32), out.view(np.uint16)
    subnormal = ((n & 0x7F800000) == 0) & ((n & 0x7FFFFF) != 0)
    if subnormal.any():
        bits[subnormal] = (n[subnormal] >> 16) & 0x8000
    nan = np.isnan(x)
    if nan.any():
        bits[nan] = _BF16_QNAN
    return out


def bf16_from_f32_relu_hw(x) -> np.ndarray:
    """Commit ``cast_relu``: NaN is canonicalised first; then any set sign bit (even -0) becomes +0."""
    n = _f32_bits(x)
    clamp = ((n >> 31) == 1) & ((n & 0x7FFFFFFF) <= 0x7F800000)
    return _as(np.where(clamp, 0, _bf16_hw_bits(n)), bf16)


def f32_from_bf16_hw(x) -> np.ndarray:
    """Hardware bf16 -> f32 (``float/bf16.rs``): NaN -> 0x7fc00000, subnormal -> signed zero, else exact."""
    h = _codes(x, bf16)
    wide = h.astype(np.uint32) << 16
    out = np.where((h & 0x7F80) == 0, wide & 0x80000000, wide)
    return np.where((h & 0x7FFF) > 0x7F80, np.uint32(_F32_QNAN), out).astype(np.uint32).view(np.float32)


# --- f8e4m3: bias 7, no inf, NaN = 0x7f/0xff, max 448 ---


def f8e4m3_from_f32(x) -> np.ndarray:
    """``float/f8e4.rs``: RNE everywhere, saturate at +-448, NaN -> 0x7f, below 2^-10 -> signed zero."""
    n = _f32_bits(x)
    a = n & 0x7FFFFFFF
    exp = a >> 23
    # Normal range (f32 exponent > 120): the top 11 magnitude bits are f8 exponent+mantissa rebased by
    # 120 << 3; RNE on the 20 dropped bits. Every code past 0x7e (448) saturates, inf included.
    top = a >> 20
    normal = np.minimum(top + (((a & 0xFFFFF) + (top & 1)) > 0x80000) - (120 << 3), 0x7E)
    # Subnormal range (exponents 117..120): RNE of the 24-bit significand in units of 2^-9.
    shift = np.clip(141 - exp, 21, 24)
    sig = (a & 0x7FFFFF) | 0x800000
    q = sig >> shift
    rem = sig - (q << shift)
    half = 1 << (shift - 1)
    sub = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    mag = np.where(exp > 120, normal, np.where(exp >= 117, sub, 0))
    code = ((n >> 31) << 7) | mag
    return _as(np.where(a > 0x7F800000, 0x7F, code), f8e4m3)


def _f8e4m3_table() -> np.ndarray:
    c = np.arange(256)
    e, m = (c >> 3) & 0xF, c & 7
    mag = np.where(e == 0, np.ldexp(m, -9), np.ldexp(8 + m, e - 10)).astype(np.float32)
    out = np.where(c & 0x80, -mag, mag).view(np.uint32)
    return np.where((c & 0x7F) == 0x7F, _F32_QNAN, out).astype(np.uint32)


_F8E4M3_TO_F32 = _f8e4m3_table()


def f32_from_f8e4m3(x) -> np.ndarray:
    """The 256-entry decode table of ``float/f8e4.rs``: exact, both NaN codes -> 0x7fc00000."""
    return _F8E4M3_TO_F32[_raw_bits(x, f8e4m3)].view(np.float32)


# --- f8e5m2: bias 15, IEEE-like (inf 0x7c, NaN exp 31 mantissa != 0) ---


def f8e5m2_from_f32(x) -> np.ndarray:
    """``float/f8e5.rs`` with its quirks: half-up on bit 20, overflow -> inf, subnormals clamp at 3.

    NaN -> 0x7e. Normal results keep two mantissa bits and add bit 20 (no ties-to-even, no sticky), a
    carry walking into the exponent and on to 0x7c (inf). Below 2^-14 the magnitude is
    ``round_half_away(|v| * 2^16)`` clamped to 3, so [3.5 * 2^-16, 2^-14) gives 3, not 4.
    """
    n = _f32_bits(x)
    a = n & 0x7FFFFFFF
    biased = (a >> 23) - 112
    normal = ((biased << 2) | ((a >> 21) & 3)) + ((a >> 20) & 1)
    tiny = np.where(biased <= 0, a, 0).astype(np.uint32).view(np.float32)
    sub = np.minimum(_round_half_away(tiny.astype(np.float64) * 65536), 3).astype(np.int64)
    # Zero falls into the subnormal branch (0) and inf into the overflow one, as upstream's early returns.
    mag = np.where(biased >= 31, 0x7C, np.where(biased <= 0, sub, normal))
    code = ((n >> 24) & 0x80) | mag
    return _as(np.where(a > 0x7F800000, 0x7E, code), f8e5m2)


def _f8e5m2_table() -> np.ndarray:
    c = np.arange(256)
    sign, e, m = c >> 7, (c >> 2) & 0x1F, c & 3
    sub = np.where(sign == 1, -(m / 65536), m / 65536).astype(np.float32).view(np.uint32)
    normal = (sign << 31) | ((e + 112) << 23) | (m << 21)
    # Upstream negates f32::NAN for a negative NaN code, so the sign survives into 0xffc00000.
    special = (sign << 31) | np.where(m == 0, 0x7F800000, _F32_QNAN)
    return np.select([e == 0, e == 0x1F], [sub, special], normal).astype(np.uint32)


_F8E5M2_TO_F32 = _f8e5m2_table()


def f32_from_f8e5m2(x) -> np.ndarray:
    """``float/f8e5.rs`` decode: subnormals ``mant * 2^-16``, exponent 31 -> signed inf / signed qNaN."""
    return _F8E5M2_TO_F32[_raw_bits(x, f8e5m2)].view(np.float32)


# --- f4e2m1: codes 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6; 8..15 their negatives ---

_F4E2M1_TO_F8E4M3 = np.array(
    [0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C, 0x80, 0xB0, 0xB8, 0xBC, 0xC0, 0xC4, 0xC8, 0xCC],
    dtype=np.uint8,
)
_F4E2M1_VALUES = _F8E4M3_TO_F32[_F4E2M1_TO_F8E4M3].view(np.float32)


def f8e4m3_from_f4e2m1(x) -> np.ndarray:
    """The Fetch Adapter's 16-entry table lookup; only the low nibble of each code is read."""
    return _F4E2M1_TO_F8E4M3[_raw_bits(x, f4e2m1) & 0xF].view(f8e4m3.storage)


def f32_from_f4e2m1(x) -> np.ndarray:
    """Decodes through the f8e4m3 table (0x8 -> -0.0)."""
    return f32_from_f8e4m3(f8e4m3_from_f4e2m1(x))


def f4e2m1_from_f32(x) -> np.ndarray:
    """Upstream's nearest-code search: f32 ``|table - v|``, strict minimum, so ties keep the lower code.

    Hence -0.25 -> 0x0, 5 -> 4, NaN and +-inf -> 0x0 (every error is NaN/inf), and values beyond +-6
    saturate until the f32 error itself rounds: from 2^25 a smaller code may win, above 2^27 all tie (0x0).
    """
    v = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs
        err = np.abs(_F4E2M1_VALUES - v[..., None])
    return _as(np.argmin(err, axis=-1), f4e2m1)  # argmin returns the first minimum, or the first NaN


# --- Integers and fixed point ---


def _check_int(dtype: DType) -> tuple[int, int]:
    if dtype.int_range is None:
        raise DTypeError(f"{dtype.name} is not an integer dtype")
    return dtype.int_range


def _int_array(x) -> np.ndarray:
    v = np.asarray(x)
    if v.dtype.kind not in "biu":
        raise DTypeError(f"expected an integer array, got {v.dtype}")
    return v


def wrap_int(x, dtype: DType) -> np.ndarray:
    """Rust ``as`` / ``from_i32`` narrowing: keep the low bits of the type's range and sign-extend."""
    lo, hi = _check_int(dtype)
    return (((_int_array(x).astype(np.int64) - lo) & (hi - lo)) + lo).astype(dtype.storage)


def widen_int(x) -> np.ndarray:
    """Sign extension (zero extension for u8) of integer storage to the i32 compute width."""
    return _int_array(x).astype(np.int32)


def _check_int_width(int_width: int) -> None:
    if not 0 <= int_width < 32:
        raise DTypeError(f"fixed-point integer width must be in [0, 31], got {int_width}")


def fxp_to_fp(x, int_width: int) -> np.ndarray:
    """VE ``fxp_to_fp``: ``float32(RNE(x * 2^(iw - 31)))``; the f64 product is exact, the cast rounds once."""
    _check_int_width(int_width)
    return (np.asarray(x, dtype=np.int32).astype(np.float64) * 2.0 ** (int_width - 31)).astype(np.float32)


def fp_to_fxp(x, int_width: int) -> np.ndarray:
    """VE ``fp_to_fxp``: NaN -> i32 max/min by sign, else ``round_half_away(x * 2^(31 - iw))`` saturated."""
    _check_int_width(int_width)
    v = np.asarray(x, dtype=np.float32)
    nan = np.isnan(v)
    scaled = _round_half_away(np.where(nan, 0, v).astype(np.float64) * 2.0 ** (31 - int_width))
    out = np.clip(scaled, -(2**31), 2**31 - 1).astype(np.int32)
    nan_fill = np.where(np.signbit(v), np.int32(-(2**31)), np.int32(2**31 - 1))
    return np.where(nan, nan_fill, out)


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


def _float_only(dtype: DType) -> None:
    if not dtype.is_float:
        raise DTypeError(f"expected a float dtype, got {dtype.name}")


def to_f32(x, dtype: DType) -> np.ndarray:
    """Hardware widening of a float ``dtype`` storage array to f32."""
    _float_only(dtype)
    return _TO_F32[dtype](x)


def from_f32(x, dtype: DType) -> np.ndarray:
    """Hardware narrowing of an f32 array to a float ``dtype`` (flushing bf16 leg, f8 rules)."""
    _float_only(dtype)
    return _FROM_F32[dtype](x)


def table_lookup(values, source: DType, target: DType) -> np.ndarray:
    """The fetch adapter's lookup table: each code's value in `target`. Upstream fills the table with
    `target::from_f32(code.to_f32())` through the user conversion, so a NaN keeps its sign (f8e5m2's
    negative NaNs decode to bf16 0xffc0); every other code is exact in its target."""
    return _FROM_USER[target](to_f32(values, source))


def convert(values, source: DType, target: DType) -> np.ndarray:
    """Element conversions of the fetch adapter and the Cast Engine (hardware rounding rules)."""
    if source == target:
        return values
    if not source.is_float and not target.is_float:
        wide = widen_int(values)
        return wide if target == i32 else wrap_int(wide, target)
    wide = values if source == f32 else to_f32(values, source)
    return wide if target == f32 else from_f32(wide, target)


def from_user(values, dtype: DType, copy: bool = True) -> np.ndarray:
    """Converts user data with the user constructors; integers are range-checked, never wrapped. With
    `copy=False`, data already in the storage type comes back as it is."""
    v = np.asarray(values)
    if dtype.is_float:
        if v.dtype == dtype.storage:
            return v.copy() if copy else v
        return _FROM_USER[dtype](v)
    lo, hi = _check_int(dtype)
    if v.dtype.kind in "fV":  # V: the ml_dtypes floats
        with np.errstate(invalid="ignore"):
            v64 = v.astype(np.float64)
            bad = ~np.isfinite(v64) | (v64 != np.trunc(v64)) | (v64 < lo) | (v64 > hi)
    elif v.dtype.kind in "biu":
        bad = (v > hi) | (v < lo) if v.dtype.kind == "i" else v > hi
    else:
        raise DTypeError(f"cannot convert {v.dtype} values to {dtype.name}")
    if bad.any():
        index = np.unravel_index(np.flatnonzero(bad)[0], v.shape)
        raise DTypeError(
            f"value {v[index].item()} at index {tuple(int(i) for i in index)} is not an integer in "
            f"{dtype.name}'s range [{lo}, {hi}]"
        )
    return v.astype(dtype.storage, copy=copy)


def rand(dtype: DType, count: int, rng: np.random.Generator) -> np.ndarray:
    """Upstream ``rand``: narrow floats from U[-1, 1), f4e2m1 and integers uniform over all codes."""
    if dtype in (bf16, f8e4m3, f8e5m2):
        # 2u - 1 is exact in f32 for the 2^-24 grid numpy draws on, so 1.0 is never produced.
        return _FROM_USER[dtype](rng.random(count, dtype=np.float32) * np.float32(2) - np.float32(1))
    if dtype == f32:
        return rng.random(count, dtype=np.float32)
    if dtype == f4e2m1:
        return rng.integers(0, 16, count, dtype=np.uint8).view(f4e2m1.storage)
    lo, hi = _check_int(dtype)
    return rng.integers(lo, hi, count, dtype=dtype.storage, endpoint=True)


# --- Byte images ---


def _check_materializable(dtype: DType) -> None:
    if not dtype.materializable:
        raise DTypeError(f"{dtype.name} is a stream-only staging type and has no byte image")


def code_of(value, dtype: DType) -> int:
    """The raw code (``dtype.bits`` wide, unsigned) of one value already in ``dtype``'s storage."""
    return int(_raw_bits(np.asarray(value, dtype=dtype.storage), dtype)) & ((1 << dtype.bits) - 1)


def from_code(code: int, dtype: DType) -> np.ndarray:
    """The storage scalar whose raw code is ``code`` (the inverse of ``code_of``; integers sign-extend)."""
    if not dtype.is_float and code >= 1 << (dtype.bits - 1):
        code -= 1 << dtype.bits
    return np.asarray(code).astype(dtype.storage) if not dtype.is_float else _as(np.asarray(code), dtype)


def fill_pattern(code: int, dtype: DType) -> list[int]:
    """The bytes that repeat through memory filled with one code: its little-endian bytes, or for a
    4-bit type one byte holding the code in both nibbles."""
    if dtype.bits < 8:
        return [code | code << 4]
    return list(code.to_bytes(dtype.bits // 8, "little"))


def pack_nibbles(values: np.ndarray, dtype: DType) -> np.ndarray:
    """4-bit storage values [..., 2n] as their packed bytes [..., n] (uint8): element 2k in the low nibble
    of byte k, 2k+1 in the high one, as upstream packs i4 and f4e2m1 in HBM and DM."""
    codes = np.ascontiguousarray(values.astype(dtype.storage, copy=False)).view(np.uint8) & 0xF
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_nibbles(data: np.ndarray, dtype: DType) -> np.ndarray:
    """Packed bytes [..., n] (uint8) as 4-bit storage values [..., 2n], the inverse of ``pack_nibbles``."""
    codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(*data.shape[:-1], -1)
    if dtype == i4:  # sign-extend the code into int8 storage
        return ((codes.astype(np.int8) << 4) >> 4).astype(np.int8)
    return codes.astype(np.uint8).view(dtype.storage)


def pack(values, dtype: DType) -> bytes:
    """Little-endian byte image; 4-bit types put element 2k in the low nibble of byte k, 2k+1 in the high."""
    _check_materializable(dtype)
    v = np.asarray(values)
    if not dtype.is_float:  # i4 shares int8 storage with i8, so even storage arrays are range-checked
        v = from_user(v, dtype)
    elif v.dtype != dtype.storage:
        v = _as(_raw_bits(v, dtype), dtype)
    flat = v.reshape(-1)
    dtype.nbytes(flat.size)
    if dtype.bits == 4:
        return pack_nibbles(flat, dtype).tobytes()
    return flat.astype(dtype.storage.newbyteorder("<")).tobytes()


def unpack(data: bytes, dtype: DType, count: int) -> np.ndarray:
    """Inverse of ``pack``: ``count`` elements in ``dtype`` storage from a byte image of exactly that size."""
    _check_materializable(dtype)
    if len(data) != dtype.nbytes(count):
        raise DTypeError(f"{count} x {dtype.name} needs {dtype.nbytes(count)} bytes, got {len(data)}")
    if dtype.bits == 4:
        return unpack_nibbles(np.frombuffer(data, dtype=np.uint8), dtype)
    return np.frombuffer(data, dtype=dtype.storage.newbyteorder("<"), count=count).astype(dtype.storage)


# --- Opt: upstream's initialized-or-not cell value (scalar.rs) ---


@dataclass(frozen=True, slots=True)
class Opt:
    """Upstream's ``Opt<D>``: a value (``Opt.Init(v)``) or no value (``Opt.Uninit``).

    Upstream uses it for cells a kernel never wrote; ``+`` and ``*`` combine two through ``zip_map``,
    so anything with an uninitialized side stays uninitialized.

    >>> (Opt.Init(2) + Opt.Init(3)).unwrap(), Opt.Init(2) * Opt.Uninit
    (5, Opt.Uninit)
    """

    value: object = None
    is_init: bool = False

    @classmethod
    def Init(cls, value: object) -> Opt:
        """An initialized value: ``Opt.Init(7).unwrap() == 7``."""
        return cls(value, True)

    def map(self, f) -> Opt:
        """``f`` applied to the value; ``Uninit`` stays ``Uninit``.

        >>> Opt.Init(4).map(lambda v: v * 10), Opt.Uninit.map(lambda v: v * 10)
        (Opt.Init(40), Opt.Uninit)
        """
        return Opt.Init(f(self.value)) if self.is_init else self

    def zip_map(self, other: Opt, f) -> Opt:
        """``f(a, b)`` of two initialized values, else ``Uninit``.

        >>> Opt.Init(6).zip_map(Opt.Init(4), lambda a, b: a - b), Opt.Uninit.zip_map(Opt.Init(4), max)
        (Opt.Init(2), Opt.Uninit)
        """
        return Opt.Init(f(self.value, other.value)) if self.is_init and other.is_init else Opt.Uninit

    def unwrap(self) -> object:
        """The value; an uninitialized one is an error (upstream panics).

        >>> Opt.Init(1.5).unwrap()
        1.5
        """
        if not self.is_init:
            raise ValueError("unwrap of an uninitialized Opt value")
        return self.value

    def is_zero(self) -> bool:
        """Upstream's ``Zero::is_zero``: an initialized zero (``Uninit`` is not zero).

        >>> Opt.Init(0).is_zero(), Opt.Uninit.is_zero()
        (True, False)
        """
        return self.is_init and self.value == 0

    def __add__(self, other: Opt) -> Opt:
        return self.zip_map(other, lambda a, b: a + b)

    def __mul__(self, other: Opt) -> Opt:
        return self.zip_map(other, lambda a, b: a * b)

    def __repr__(self) -> str:
        return f"Opt.Init({self.value!r})" if self.is_init else "Opt.Uninit"


Opt.Uninit = Opt()
