"""The float formats and their codecs: every conversion between f32 and bf16, f8e4m3, f8e5m2 and f4e2m1.

Two legs per format, as in the reference implementation: the user constructors (``bf16_from_f32``,
``f32_from_bf16``: ``half``'s rules, what host code gets) and the hardware legs (the ``*_hw`` functions and
the f8/f4 codecs: what Fetch Adapter, Cast Engine and Commit Adapter compute, with flushed subnormals and
one canonical NaN word). The dtype table (table.py) dispatches to these by dtype; they name their types by
the formats below, since the table's scalar methods call them.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from furiosa_opt.dtypes.bits import _BF16_QNAN, _F32_QNAN, Format, _as, _codes, _f32_bits, _raw_bits, _round_half_away

F32 = Format("f32", np.dtype(np.float32))
BF16 = Format("bf16", np.dtype(ml_dtypes.bfloat16))
F8E4M3 = Format("f8e4m3", np.dtype(ml_dtypes.float8_e4m3fn))
F8E5M2 = Format("f8e5m2", np.dtype(ml_dtypes.float8_e5m2))
F4E2M1 = Format("f4e2m1", np.dtype(ml_dtypes.float4_e2m1fn))


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
        out = x.astype(BF16.storage)
    nan = np.isnan(x)
    if nan.any():
        out[nan] = _as(_bf16_user_bits(_f32_bits(x[nan])), BF16)
    return out


def f32_from_bf16(x) -> np.ndarray:
    """User widening (``half::bf16::to_f32``): exact, subnormals kept; a NaN gets the quiet bit, keeps
    its sign and payload."""
    h = _codes(x, BF16).astype(np.uint32)
    nan = (h & 0x7FFF) > 0x7F80
    return (np.where(nan, h | 0x40, h) << 16).astype(np.uint32).view(np.float32)


def _bf16_hw_bits(n: np.ndarray) -> np.ndarray:
    subnormal = ((n & 0x7F800000) == 0) & ((n & 0x7FFFFF) != 0)
    out = np.where(subnormal, (n >> 16) & 0x8000, _bf16_user_bits(n))
    return np.where((n & 0x7FFFFFFF) > 0x7F800000, _BF16_QNAN, out)


def bf16_from_f32_hw(x) -> np.ndarray:
    """Hardware f32 -> bf16 (``float/bf16.rs``): NaN -> 0x7fc0, f32 subnormal -> signed zero, else RNE.

    ml_dtypes' C cast does the RNE; the lanes the hardware treats differently are set afterwards, found
    only when two reductions over the magnitudes say some lane is a NaN or a subnormal."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x.astype(BF16.storage)
    if x.size and _odd(x.view(np.uint32), 0x7F800000, 0x7FFFFF):
        n, bits = x.view(np.uint32), out.view(np.uint16)
        subnormal = ((n & 0x7F800000) == 0) & ((n & 0x7FFFFF) != 0)
        bits[subnormal] = (n[subnormal] >> 16) & 0x8000
        bits[np.isnan(x)] = _BF16_QNAN
    return out


def _odd(codes: np.ndarray, infinity: int, subnormals: int) -> bool:
    """Whether some float code (unsigned) is a NaN (magnitude above `infinity`) or a subnormal (magnitude
    1 to `subnormals`): a max, then a min of the magnitudes less one (zero wraps to the top)."""
    magnitude = codes & codes.dtype.type(infinity | (infinity - 1))  # the sign bit cleared
    if magnitude.max() > infinity:
        return True
    magnitude -= codes.dtype.type(1)
    return bool(magnitude.min() < subnormals)


def bf16_from_f32_relu_hw(x) -> np.ndarray:
    """Commit ``cast_relu``: NaN is canonicalised first; then any set sign bit (even -0) becomes +0."""
    n = _f32_bits(x)
    clamp = ((n >> 31) == 1) & ((n & 0x7FFFFFFF) <= 0x7F800000)
    return _as(np.where(clamp, 0, _bf16_hw_bits(n)), BF16)


def _bf16_hw_table() -> np.ndarray:
    """Hardware bf16 -> f32 bits (``float/bf16.rs``) for all 65536 codes: NaN -> 0x7fc00000, subnormal ->
    signed zero, else exact."""
    h = np.arange(1 << 16, dtype=np.uint32)
    wide = h << 16
    out = np.where((h & 0x7F80) == 0, wide & 0x80000000, wide)
    return np.where((h & 0x7FFF) > 0x7F80, np.uint32(_F32_QNAN), out).astype(np.uint32)


_BF16_TO_F32_HW = _bf16_hw_table()


def f32_from_bf16_hw(x) -> np.ndarray:
    """Hardware bf16 -> f32 (``float/bf16.rs``): NaN -> 0x7fc00000, subnormal -> signed zero, else exact.
    Every zero, normal and infinity widens exactly (ml_dtypes' cast when the codes are contiguous, a shift
    when they are a strided view, which that cast walks slowly); only when some code is a subnormal or a
    NaN does every code go through the rule's table."""
    codes = _codes(x, BF16)
    if codes.size and _odd(codes, 0x7F80, 0x7F):
        return _BF16_TO_F32_HW[codes].view(np.float32)
    if codes.flags.c_contiguous:
        return codes.view(BF16.storage).astype(np.float32)
    wide = codes.astype(np.uint32, order="C")
    wide <<= 16
    return wide.view(np.float32)


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
    return _as(np.where(a > 0x7F800000, 0x7F, code), F8E4M3)


def _f8e4m3_table() -> np.ndarray:
    c = np.arange(256)
    e, m = (c >> 3) & 0xF, c & 7
    mag = np.where(e == 0, np.ldexp(m, -9), np.ldexp(8 + m, e - 10)).astype(np.float32)
    out = np.where(c & 0x80, -mag, mag).view(np.uint32)
    return np.where((c & 0x7F) == 0x7F, _F32_QNAN, out).astype(np.uint32)


_F8E4M3_TO_F32 = _f8e4m3_table()


def f32_from_f8e4m3(x) -> np.ndarray:
    """The 256-entry decode table of ``float/f8e4.rs``: exact, both NaN codes -> 0x7fc00000."""
    return _F8E4M3_TO_F32[_raw_bits(x, F8E4M3)].view(np.float32)


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
    return _as(np.where(a > 0x7F800000, 0x7E, code), F8E5M2)


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
    return _F8E5M2_TO_F32[_raw_bits(x, F8E5M2)].view(np.float32)


# --- f4e2m1: codes 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6; 8..15 their negatives ---

_F4E2M1_TO_F8E4M3 = np.array(
    [0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C, 0x80, 0xB0, 0xB8, 0xBC, 0xC0, 0xC4, 0xC8, 0xCC],
    dtype=np.uint8,
)
_F4E2M1_VALUES = _F8E4M3_TO_F32[_F4E2M1_TO_F8E4M3].view(np.float32)


def f8e4m3_from_f4e2m1(x) -> np.ndarray:
    """The Fetch Adapter's 16-entry table lookup; only the low nibble of each code is read."""
    return _F4E2M1_TO_F8E4M3[_raw_bits(x, F4E2M1) & 0xF].view(F8E4M3.storage)


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
    return _as(np.argmin(err, axis=-1), F4E2M1)  # argmin returns the first minimum, or the first NaN
