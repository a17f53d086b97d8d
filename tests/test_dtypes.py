"""Bit-exact tests of furiosa_opt.dtypes against hand-written values and per-element references.

The references below are deliberately naive: pure Python per element, exact ``Fraction`` arithmetic
or exhaustive nearest-code search, written from the rules in the spec rather than from the
vectorised bit manipulation they check.
"""

import math
import struct
from bisect import bisect_left
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt import dtypes as dt
from furiosa_opt.dtypes import DTypeError, floats

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


# ---------------------------------------------------------------------------------------------------
# Helpers and independent references
# ---------------------------------------------------------------------------------------------------


def f32(*bits: int) -> np.ndarray:
    """f32 array from bit patterns."""
    return np.array(bits, dtype=np.uint32).view(np.float32)


def fv(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def bits_of(a: np.ndarray) -> list[int]:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}").reshape(-1).tolist()


def py_f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def is_f32_nan(bits: int) -> bool:
    return (bits & 0x7FFFFFFF) > 0x7F800000


def sign_of(bits: int) -> int:
    return bits >> 31


def ref_bf16_user(bits: int) -> int:
    """half::bf16::from_f32 by exact distance: nearest of the two bracketing bf16 values, ties to even."""
    if is_f32_nan(bits):
        return (bits >> 16) | 0x40
    sign, mag = bits & 0x80000000, bits & 0x7FFFFFFF
    if mag == 0x7F800000:
        return (sign >> 16) | 0x7F80
    exact = Fraction(py_f32(mag))
    lo = mag >> 16

    def value(code: int) -> Fraction:  # 0x7f80 stands for 2^128, the first value past bf16 max
        return Fraction(2) ** 128 if code == 0x7F80 else Fraction(py_f32(code << 16))

    d_lo, d_hi = exact - value(lo), value(lo + 1) - exact
    pick = lo if d_lo < d_hi or (d_lo == d_hi and lo % 2 == 0) else lo + 1
    return (sign >> 16) | pick


def ref_bf16_hw(bits: int) -> int:
    if is_f32_nan(bits):
        return 0x7FC0
    if bits & 0x7F800000 == 0:  # zero or subnormal
        return (bits >> 16) & 0x8000
    return ref_bf16_user(bits)


def ref_bf16_relu(bits: int) -> int:
    if is_f32_nan(bits):
        return 0x7FC0
    return 0 if sign_of(bits) else ref_bf16_hw(bits)


def f8e4m3_value(code: int) -> Fraction:
    e, m = (code >> 3) & 0xF, code & 7
    mag = Fraction(m, 8) * Fraction(2) ** -6 if e == 0 else (1 + Fraction(m, 8)) * Fraction(2) ** (e - 7)
    return -mag if code & 0x80 else mag


F8E4M3_GRID = [f8e4m3_value(c) for c in range(0x7F)]  # 0 .. 448, increasing with the code


def ref_f8e4m3(bits: int) -> int:
    """Nearest finite code by exhaustive (bisected) search, ties to the even code; inf -> 448; NaN -> 0x7f."""
    if is_f32_nan(bits):
        return 0x7F
    sign = sign_of(bits) << 7
    if bits & 0x7FFFFFFF == 0x7F800000:
        return sign | 0x7E
    mag = abs(Fraction(py_f32(bits)))
    i = bisect_left(F8E4M3_GRID, mag)
    cands = [c for c in (i - 1, i) if 0 <= c < len(F8E4M3_GRID)]
    best = min(cands, key=lambda c: (abs(F8E4M3_GRID[c] - mag), c % 2))
    return sign | best


def ref_f8e5m2(bits: int) -> int:
    """The spec's f8e5m2 rule in exact arithmetic."""
    if is_f32_nan(bits):
        return 0x7E
    sign = sign_of(bits) << 7
    a = abs(Fraction(py_f32(bits))) if bits & 0x7F800000 != 0x7F800000 else None
    if a is None or a >= 2**16:  # inf, or exponent past the e5m2 range
        return sign | 0x7C
    if a < Fraction(2) ** -14:
        return sign | min(math.floor(a * 2**16 + Fraction(1, 2)), 3)
    e = math.floor(math.log2(a))
    while Fraction(2) ** e > a:  # guard log2 rounding
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    eighths = math.floor((a / Fraction(2) ** e - 1) * 8)  # two kept mantissa bits + bit 20
    code = (((e + 15) << 2) | (eighths >> 1)) + (eighths & 1)
    return sign | min(code, 0x7C)


F4E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def ref_f4e2m1(bits: int) -> int:
    """Upstream's loop, element by element: f32 error, strict less-than, so ties keep the lower code."""
    v = np.float32(py_f32(bits))
    best, best_err = 0, np.float32(np.inf)
    with np.errstate(invalid="ignore"):
        for code, value in enumerate(F4E2M1_VALUES):
            err = abs(np.float32(value) - v)
            if err < best_err:
                best, best_err = code, err
    return best


def ref_fp_to_fxp(x: float, iw: int) -> int:
    if math.isnan(x):
        return I32_MAX if math.copysign(1.0, x) > 0 else I32_MIN
    if math.isinf(x):
        return I32_MAX if x > 0 else I32_MIN
    q = Fraction(x) * Fraction(2) ** (31 - iw)
    r = math.floor(abs(q) + Fraction(1, 2)) * (1 if q >= 0 else -1)
    return max(I32_MIN, min(I32_MAX, r))


def check_against(fn, ref, bit_patterns, width: int) -> None:
    got = bits_of(fn(f32(*bit_patterns)))
    want = [ref(b) for b in bit_patterns]
    bad = [(hex(b), hex(g), hex(w)) for b, g, w in zip(bit_patterns, got, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} mismatches (input, got, want), first: {bad[:5]}"
    assert fn(f32(0)).dtype.itemsize * 8 == width


def neighbourhood(values: np.ndarray) -> list[int]:
    """Each f32 value with its two f32 neighbours and both signs: the points where rounding flips."""
    v = np.asarray(values, dtype=np.float32)
    v = np.concatenate([v, -v])
    pts = np.concatenate([v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(-np.inf))])
    return sorted(set(bits_of(pts)))


def midpoints(grid: np.ndarray) -> np.ndarray:
    g = np.sort(np.asarray(grid, dtype=np.float64))
    return ((g[1:] + g[:-1]) / 2).astype(np.float32)


SPECIAL_BITS = [
    0x00000000,
    0x80000000,
    0x00000001,
    0x80000001,
    0x007FFFFF,
    0x807FFFFF,
    0x00800000,
    0x80800000,
    0x7F7FFFFF,
    0xFF7FFFFF,
    0x7F800000,
    0xFF800000,
    0x7F800001,
    0xFF800001,
    0x7FC00000,
    0xFFC00000,
    0x7FFFFFFF,
    0xFFFFFFFF,
    0x7FA00001,
    0x3F800000,
    0xBF800000,
]

RANDOM_BITS = np.random.default_rng(1234).integers(0, 2**32, 4000, dtype=np.uint64).tolist()

f32_bit_lists = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=32)


# ---------------------------------------------------------------------------------------------------
# DType table
# ---------------------------------------------------------------------------------------------------

DTYPE_TABLE = {
    # name: (bits, staging_bits, storage, is_float, materializable, int_range)
    "i4": (4, 4, np.int8, False, True, (-8, 7)),
    "i5": (4, 8, np.int8, False, False, (-16, 15)),
    "i8": (8, 8, np.int8, False, True, (-128, 127)),
    "i9": (8, 16, np.int16, False, False, (-256, 255)),
    "i16": (16, 16, np.int16, False, True, (-32768, 32767)),
    "i32": (32, 32, np.int32, False, True, (I32_MIN, I32_MAX)),
    "u8": (8, 8, np.uint8, False, True, (0, 255)),
    "f32": (32, 32, np.float32, True, True, None),
    "bf16": (16, 16, ml_dtypes.bfloat16, True, True, None),
    "f8e4m3": (8, 8, ml_dtypes.float8_e4m3fn, True, True, None),
    "f8e5m2": (8, 8, ml_dtypes.float8_e5m2, True, True, None),
    "f4e2m1": (4, 4, ml_dtypes.float4_e2m1fn, True, True, None),
}


@pytest.mark.parametrize("name", DTYPE_TABLE)
def test_dtype_attributes(name):
    d = dt.dtype_by_name(name)
    bits, staging, storage, is_float, mat, rng = DTYPE_TABLE[name]
    assert d is getattr(dt, name)
    assert (d.name, d.bits, d.staging_bits, d.storage) == (name, bits, staging, np.dtype(storage))
    assert (d.is_float, d.materializable, d.int_range) == (is_float, mat, rng)
    assert repr(d) == str(d) == name


def test_all_dtypes_and_lookup():
    assert [d.name for d in dt.ALL_DTYPES] == list(DTYPE_TABLE)
    with pytest.raises(DTypeError, match=r"unknown dtype 'f16'.*bf16.*f4e2m1"):
        dt.dtype_by_name("f16")
    assert issubclass(DTypeError, ValueError)
    with pytest.raises(AttributeError):
        dt.i8.bits = 16


def test_nbytes():
    assert dt.f32.nbytes(3) == 12 and dt.bf16.nbytes(5) == 10 and dt.i8.nbytes(7) == 7
    assert dt.i4.nbytes(4) == 2 and dt.f4e2m1.nbytes(0) == 0
    assert dt.i5.nbytes(2) == 1 and dt.i9.nbytes(3) == 3  # wire bits, not staging bits
    for d in (dt.i4, dt.f4e2m1, dt.i5):
        with pytest.raises(DTypeError, match="total bits must be byte-aligned"):
            d.nbytes(3)


# ---------------------------------------------------------------------------------------------------
# bf16
# ---------------------------------------------------------------------------------------------------


def test_bf16_rne_ties():
    # mapping.md §9 item 11: f32_to_bf16(1 + 2^-8) == 1.0; the next tie rounds up to even.
    x = fv(1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 2**-8), 1 + 2**-7)
    want = [0x3F80, 0x3F82, 0x3F81, 0xBF80, 0x3F81]
    assert bits_of(dt.bf16_from_f32_hw(x)) == want
    assert bits_of(dt.bf16_from_f32(x)) == want
    assert float(dt.bf16_from_f32_hw(fv(1 + 3 * 2**-8))[0]) == 1 + 2**-6


def test_bf16_overflow_and_inf():
    # bf16 max 0x7f7f; its halfway point to 2^128 (odd lsb) rounds up to inf, just below stays.
    x = f32(0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000)
    want = [0x7F80, 0x7F7F, 0x7F80, 0xFF80, 0x7F80, 0xFF80]
    assert bits_of(dt.bf16_from_f32(x)) == want
    assert bits_of(dt.bf16_from_f32_hw(x)) == want


def test_bf16_subnormals():
    x = f32(0x00010000, 0x80010000, 0x00000001, 0x007FFFFF, 0x00008000, 0x00018000, 0x00800000, 0x80000000)
    # User constructor keeps subnormals (with RNE: 0x00008000 ties to 0, 0x00018000 to 2).
    assert bits_of(dt.bf16_from_f32(x)) == [0x0001, 0x8001, 0x0000, 0x0080, 0x0000, 0x0002, 0x0080, 0x8000]
    # Hardware flushes every f32 subnormal to a zero of its own sign; min normal survives.
    assert bits_of(dt.bf16_from_f32_hw(x)) == [0, 0x8000, 0, 0, 0, 0, 0x0080, 0x8000]


def test_bf16_nan():
    x = f32(0x7FA00001, 0xFFA00000, 0x7F800001, 0x7FC00000, 0xFFFFFFFF)
    assert bits_of(dt.bf16_from_f32(x)) == [0x7FE0, 0xFFE0, 0x7FC0, 0x7FC0, 0xFFFF]
    assert bits_of(dt.bf16_from_f32_hw(x)) == [0x7FC0] * 5
    assert bits_of(dt.bf16_from_f32_relu_hw(x)) == [0x7FC0] * 5


def test_f32_from_bf16_hw():
    h = np.array([0x3F80, 0xC020, 0x7F81, 0xFFC0, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F80, 0xFF80, 0x8000])
    got = bits_of(dt.f32_from_bf16_hw(h.astype(np.uint16).view(ml_dtypes.bfloat16)))
    assert got == [
        0x3F800000,
        0xC0200000,
        0x7FC00000,
        0x7FC00000,
        0,
        0x80000000,
        0,
        0x00800000,
        0x7F800000,
        0xFF800000,
        0x80000000,
    ]
    assert dt.f32_from_bf16_hw(dt.bf16_from_f32(fv(1.5, -2.5))).tolist() == [1.5, -2.5]


def test_f32_from_bf16_hw_on_every_code():
    """All 65536 codes against ml_dtypes' exact widening, with the hardware's two exceptions applied on top:
    a subnormal becomes its signed zero, any NaN the canonical 0x7fc00000."""
    codes = np.arange(1 << 16, dtype=np.uint32)
    exact = codes.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    subnormal = ((codes & 0x7F80) == 0) & ((codes & 0x7F) != 0)
    nan = ((codes & 0x7F80) == 0x7F80) & ((codes & 0x7F) != 0)
    expected = np.where(subnormal, (codes << 16) & 0x80000000, np.where(nan, 0x7FC00000, exact))
    got = dt.f32_from_bf16_hw(codes.astype(np.uint16).view(ml_dtypes.bfloat16)).view(np.uint32)
    assert np.array_equal(got, expected)
    # An array with no subnormal and no NaN widens by a shift, not through the table: every such code, and
    # each odd code alone beside them (one is enough to send the whole array to the table).
    plain = ~(subnormal | nan)
    widened = dt.f32_from_bf16_hw(codes[plain].astype(np.uint16).view(ml_dtypes.bfloat16)).view(np.uint32)
    assert np.array_equal(widened, expected[plain])
    for odd in (0x0001, 0x807F, 0x7F81, 0xFFFF):
        mixed = np.array([0x3F80, odd, 0x0000], dtype=np.uint16)
        assert dt.f32_from_bf16_hw(mixed).view(np.uint32).tolist() == expected[[0x3F80, odd, 0]].tolist()


def test_bf16_from_f32_hw_fast_path_and_each_odd_lane():
    """An array with no NaN and no subnormal skips the lane fixes (two reductions say so): it must still
    match the rule on every lane, and one odd lane among plain ones must send the array to the fixes."""
    grid = np.arange(0x0000, 0x7F80, 97, dtype=np.uint32) << 16
    pts = neighbourhood(midpoints(grid.view(np.float32))) + RANDOM_BITS
    plain = [b for b in pts if not is_f32_nan(b) and not (b & 0x7F800000 == 0 and b & 0x7FFFFF)]
    check_against(dt.bf16_from_f32_hw, ref_bf16_hw, plain, 16)
    for odd in (0x00000001, 0x807FFFFF, 0x7F800001, 0xFFFFFFFF):
        check_against(dt.bf16_from_f32_hw, ref_bf16_hw, [0x3F800000, odd, 0x00000000, 0x7F800000], 16)


def test_bf16_relu():
    x = f32(0x80000000, 0xFF800000, 0x80000001, 0xBF800000, 0x00000001, 0x7F800000, 0x3F800000, 0x00000000)
    assert bits_of(dt.bf16_from_f32_relu_hw(x)) == [0, 0, 0, 0, 0, 0x7F80, 0x3F80, 0]


def test_bf16_against_reference():
    grid = np.arange(0x0000, 0x7F80, 97, dtype=np.uint32) << 16
    pts = neighbourhood(midpoints(grid.view(np.float32))) + SPECIAL_BITS + RANDOM_BITS
    check_against(dt.bf16_from_f32, ref_bf16_user, pts, 16)
    check_against(dt.bf16_from_f32_hw, ref_bf16_hw, pts, 16)
    check_against(dt.bf16_from_f32_relu_hw, ref_bf16_relu, pts, 16)


@settings(max_examples=examples(150), deadline=None)
@given(f32_bit_lists)
def test_bf16_property(bits):
    check_against(dt.bf16_from_f32, ref_bf16_user, bits, 16)
    check_against(dt.bf16_from_f32_hw, ref_bf16_hw, bits, 16)
    check_against(dt.bf16_from_f32_relu_hw, ref_bf16_relu, bits, 16)


# ---------------------------------------------------------------------------------------------------
# f8e4m3
# ---------------------------------------------------------------------------------------------------


def f8e4m3_codes(x) -> list[int]:
    out = dt.f8e4m3_from_f32(x)
    assert out.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    return bits_of(out)


def test_f8e4m3_saturation():
    x = fv(448, 464, 465, 479, 480, 1e10, np.inf, -np.inf, -448, -464, -465, 3.4e38, 447)
    assert f8e4m3_codes(x) == [0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0xFE, 0xFE, 0xFE, 0x7E, 0x7E]
    # Top binade steps by 32: 432 ties 0x7d/0x7e -> even 0x7e; 400 ties 0x7c/0x7d -> 0x7c.
    assert f8e4m3_codes(fv(432, 431.99, 416, 400, 400.01)) == [0x7E, 0x7D, 0x7D, 0x7C, 0x7D]


def test_f8e4m3_nan_and_zero():
    assert f8e4m3_codes(f32(0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF)) == [0x7F] * 4
    assert f8e4m3_codes(fv(0.0, -0.0, 1e-30, -1e-30, 2**-10, -(2**-10))) == [0, 0x80, 0, 0x80, 0, 0x80]
    assert f8e4m3_codes(f32(0x00000001, 0x80000001)) == [0, 0x80]  # f32 subnormals


def test_f8e4m3_subnormal_thresholds():
    """The explicit thresholds of float/f8e4.rs, one f32 exponent (120..117) at a time."""

    def at(exp, man):
        return (exp << 23) | man

    cases = {
        at(120, 0x700000): 8,
        at(120, 0x6FFFFF): 7,
        at(120, 0x500001): 7,
        at(120, 0x500000): 6,
        at(120, 0x300000): 6,
        at(120, 0x2FFFFF): 5,
        at(120, 0x100001): 5,
        at(120, 0x100000): 4,
        at(120, 0): 4,
        at(119, 0x600000): 4,
        at(119, 0x5FFFFF): 3,
        at(119, 0x200001): 3,
        at(119, 0x200000): 2,
        at(119, 0): 2,
        at(118, 0x400000): 2,
        at(118, 0x3FFFFF): 1,
        at(118, 0): 1,
        at(117, 1): 1,
        at(117, 0): 0,
        at(116, 0x7FFFFF): 0,
        at(121, 0): 8,
    }
    assert f8e4m3_codes(f32(*cases)) == list(cases.values())
    assert f8e4m3_codes(f32(*(b | 0x80000000 for b in cases))) == [c | 0x80 for c in cases.values()]


def test_f8e4m3_normal_ties():
    # 1 + 2^-4 lies halfway between 0x38 (1.0) and 0x39: even wins; 1 + 3*2^-4 goes up to 0x3a.
    assert f8e4m3_codes(fv(1 + 2**-4, 1 + 3 * 2**-4, 1 + 2**-4 + 2**-20, -(1 + 3 * 2**-4))) == [
        0x38,
        0x3A,
        0x39,
        0xBA,
    ]


def test_f8e4m3_decode_table():
    codes = np.arange(256, dtype=np.uint8)
    got = bits_of(dt.f32_from_f8e4m3(codes.view(ml_dtypes.float8_e4m3fn)))
    for c in range(256):
        if c & 0x7F == 0x7F:
            assert got[c] == 0x7FC00000
        else:
            assert Fraction(py_f32(got[c])) == f8e4m3_value(c) and sign_of(got[c]) == c >> 7
    assert got[0x01] == 0x3B000000 and got[0x08] == 0x3C800000 and got[0x7E] == 0x43E00000
    assert got[0x80] == 0x80000000 and got[0xFE] == 0xC3E00000
    assert bits_of(dt.f32_from_f8e4m3(codes)) == got  # raw uint8 codes are accepted too


def test_f8e4m3_round_trip_all_codes():
    codes = np.array([c for c in range(256) if c & 0x7F != 0x7F], dtype=np.uint8)
    assert len(codes) == 254
    assert bits_of(dt.f8e4m3_from_f32(dt.f32_from_f8e4m3(codes))) == codes.tolist()


def test_f8e4m3_against_reference():
    grid = dt.f32_from_f8e4m3(np.arange(0x7F, dtype=np.uint8))
    pts = neighbourhood(np.concatenate([grid, midpoints(grid), fv(464, 2**-10, 2**-11)]))
    check_against(dt.f8e4m3_from_f32, ref_f8e4m3, pts + SPECIAL_BITS + RANDOM_BITS, 8)


@settings(max_examples=examples(150), deadline=None)
@given(f32_bit_lists)
def test_f8e4m3_property(bits):
    check_against(dt.f8e4m3_from_f32, ref_f8e4m3, bits, 8)


# ---------------------------------------------------------------------------------------------------
# f8e5m2
# ---------------------------------------------------------------------------------------------------


def f8e5m2_codes(x) -> list[int]:
    out = dt.f8e5m2_from_f32(x)
    assert out.dtype == np.dtype(ml_dtypes.float8_e5m2)
    return bits_of(out)


def test_f8e5m2_specials():
    x = f32(0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000, 0xFF800000, 0, 0x80000000, 0x00000001, 0x80000001)
    assert f8e5m2_codes(x) == [0x7E, 0x7E, 0x7E, 0x7C, 0xFC, 0, 0x80, 0, 0x80]


def test_f8e5m2_half_up_not_even():
    # Bit 20 alone decides: exact halves round up in magnitude even when that makes the mantissa odd.
    x = fv(1 + 2**-3, 1 + 3 * 2**-3, 1.875, 1 + 2**-3 - 2**-23, -(1 + 2**-3), 1.25, 3.5)
    assert f8e5m2_codes(x) == [0x3D, 0x3E, 0x40, 0x3C, 0xBD, 0x3D, 0x43]


def test_f8e5m2_overflow_to_inf():
    x = fv(57344, 61440, 61439.996, 65536, -61440, 3.4e38, 1e5)
    assert f8e5m2_codes(x) == [0x7B, 0x7C, 0x7B, 0x7C, 0xFC, 0x7C, 0x7C]


def test_f8e5m2_subnormal_quirk():
    u = 2.0**-16
    x = fv(0.5 * u, 0.49 * u, 1.5 * u, 2.5 * u, 3 * u, 3.49 * u, 3.5 * u, 3.9 * u)
    assert f8e5m2_codes(x) == [1, 0, 2, 3, 3, 3, 3, 3]
    below = np.nextafter(np.float32(2**-14), np.float32(0))
    assert f8e5m2_codes(np.array([below, -below, 2**-14], dtype=np.float32)) == [3, 0x83, 4]


def test_f8e5m2_decode():
    got = bits_of(
        dt.f32_from_f8e5m2(np.array([0x7C, 0xFC, 0x7D, 0x7E, 0x7F, 0xFD, 0x01, 0x83, 0x3C, 0x7B, 0x80], dtype=np.uint8))
    )
    assert got == [
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0x7FC00000,
        0x7FC00000,
        0xFFC00000,
        0x37800000,
        0xB8400000,
        0x3F800000,
        0x47600000,
        0x80000000,
    ]


def test_f8e5m2_round_trip_all_codes():
    codes = np.array([c for c in range(256) if (c & 0x7C) != 0x7C or (c & 3) == 0], dtype=np.uint8)
    assert len(codes) == 250  # 248 finite codes and two infinities
    values = dt.f32_from_f8e5m2(codes.view(ml_dtypes.float8_e5m2))
    assert bits_of(dt.f8e5m2_from_f32(values)) == codes.tolist()
    finite = codes[(codes & 0x7C) != 0x7C]
    np.testing.assert_array_equal(values[(codes & 0x7C) != 0x7C], finite.view(ml_dtypes.float8_e5m2))


def test_f8e5m2_against_reference():
    grid = dt.f32_from_f8e5m2(np.arange(0x7C, dtype=np.uint8))
    pts = neighbourhood(np.concatenate([grid, midpoints(grid), fv(61440, 2**-14, 3.5 * 2**-16)]))
    check_against(dt.f8e5m2_from_f32, ref_f8e5m2, pts + SPECIAL_BITS + RANDOM_BITS, 8)


@settings(max_examples=examples(150), deadline=None)
@given(f32_bit_lists)
def test_f8e5m2_property(bits):
    check_against(dt.f8e5m2_from_f32, ref_f8e5m2, bits, 8)


# ---------------------------------------------------------------------------------------------------
# f4e2m1
# ---------------------------------------------------------------------------------------------------


def f4_codes(*values) -> list[int]:
    out = dt.f4e2m1_from_f32(np.array(values, dtype=np.float32))
    assert out.dtype == np.dtype(ml_dtypes.float4_e2m1fn)
    return bits_of(out)


def test_f4e2m1_encode():
    assert f4_codes(*F4E2M1_VALUES[:8], *F4E2M1_VALUES[9:]) == [*range(8), *range(9, 16)]
    assert f4_codes(-0.0) == [0]  # -0 ties with +0 and the lower code wins
    # Ties go to the lower code: +-0.25 -> +0, 0.75 -> 0.5, 5 -> 4, -5 -> -4, 2.5 -> 2.
    assert f4_codes(-0.25, 0.25, 0.75, -0.75, 5, -5, 2.5, 1.25) == [0, 0, 1, 9, 6, 14, 4, 2]
    assert f4_codes(7, -7, 100, -1e6, 5.01, -5.01) == [7, 15, 7, 15, 7, 15]
    # Upstream quirks: NaN and +-inf give +0 (every error is NaN / inf, none beats the first).
    assert f4_codes(np.nan, -np.nan, np.inf, -np.inf, 3.0e38) == [0, 0, 0, 0, 0]


def test_f4e2m1_decode():
    codes = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)
    assert bits_of(dt.f8e4m3_from_f4e2m1(codes)) == [
        0x00,
        0x30,
        0x38,
        0x3C,
        0x40,
        0x44,
        0x48,
        0x4C,
        0x80,
        0xB0,
        0xB8,
        0xBC,
        0xC0,
        0xC4,
        0xC8,
        0xCC,
    ]
    got = dt.f32_from_f4e2m1(codes)
    assert got.tolist() == F4E2M1_VALUES and bits_of(got)[8] == 0x80000000
    assert bits_of(dt.f32_from_f4e2m1(np.array([0xF2], dtype=np.uint8))) == [0x3F800000]  # high nibble ignored


def test_f4e2m1_against_reference():
    grid = fv(*F4E2M1_VALUES)
    pts = neighbourhood(np.concatenate([grid, midpoints(grid), fv(2**25 + 12, 2**27, 2**27 + 16, 1e8)]))
    check_against(dt.f4e2m1_from_f32, ref_f4e2m1, pts + SPECIAL_BITS + RANDOM_BITS[:1500], 8)


@settings(max_examples=examples(100), deadline=None)
@given(f32_bit_lists)
def test_f4e2m1_property(bits):
    check_against(dt.f4e2m1_from_f32, ref_f4e2m1, bits, 8)


# ---------------------------------------------------------------------------------------------------
# Integers
# ---------------------------------------------------------------------------------------------------


def test_wrap_int():
    assert dt.wrap_int(np.array([1_000_000, 100 * 100 * 100 * 3, 127, 128, -129]), dt.i8).tolist() == [
        64,
        -64,
        127,
        -128,
        127,
    ]
    assert dt.wrap_int(np.array([9, -9, 8, 7, -8, 15, 16]), dt.i4).tolist() == [-7, 7, -8, 7, -8, -1, 0]
    assert dt.wrap_int(np.array([16, -17, 15]), dt.i5).tolist() == [-16, 15, 15]
    assert dt.wrap_int(np.array([256, -257, 511]), dt.i9).tolist() == [-256, 255, -1]
    assert dt.wrap_int(np.array([40000, -40000], dtype=np.int32), dt.i16).tolist() == [-25536, 25536]
    assert dt.wrap_int(np.array([300, -1]), dt.u8).tolist() == [44, 255]
    for d in (dt.i4, dt.i5, dt.i8, dt.i9, dt.i16, dt.u8):
        assert dt.wrap_int(np.array([0], dtype=np.int32), d).dtype == d.storage
    x = np.random.default_rng(5).integers(I32_MIN, I32_MAX, 1000, dtype=np.int32, endpoint=True)
    np.testing.assert_array_equal(dt.wrap_int(x, dt.i8), x.astype(np.int8))
    with pytest.raises(DTypeError):
        dt.wrap_int(fv(1.0), dt.i8)
    with pytest.raises(DTypeError):
        dt.wrap_int(np.array([1]), dt.f32)


def test_widen_int():
    assert dt.widen_int(np.array([-8, 7], dtype=np.int8)).tolist() == [-8, 7]
    assert dt.widen_int(np.array([255], dtype=np.uint8)).tolist() == [255]
    assert dt.widen_int(np.array([-256], dtype=np.int16)).dtype == np.int32
    with pytest.raises(DTypeError):
        dt.widen_int(fv(1.0))


# ---------------------------------------------------------------------------------------------------
# Fixed point
# ---------------------------------------------------------------------------------------------------


def test_fp_to_fxp_boundaries():
    x = f32(0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7F800000, 0xFF800000)
    assert dt.fp_to_fxp(x, 0).tolist() == [I32_MAX, I32_MIN, I32_MAX, I32_MIN, I32_MAX, I32_MIN]
    # iw = 0: x * 2^31; 1.0 saturates to i32::MAX, -1.0 is exactly i32::MIN.
    assert dt.fp_to_fxp(fv(1.0, -1.0, 0.5, -0.5, 2.0, -2.0), 0).tolist() == [
        I32_MAX,
        I32_MIN,
        2**30,
        -(2**30),
        I32_MAX,
        I32_MIN,
    ]
    # iw = 31: plain rounding, half away from zero (2.5 -> 3, not 2).
    x = fv(0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.49999997, 2**31, -(2**31), 3e9, -3e9)
    assert dt.fp_to_fxp(x, 31).tolist() == [1, -1, 2, 3, -3, 0, 0, I32_MAX, I32_MIN, I32_MAX, I32_MIN]
    assert dt.fp_to_fxp(fv(1.25, -0.75), 29).tolist() == [5, -3]  # 1.25*4 = 5, -0.75*4 = -3
    assert dt.fp_to_fxp(fv(0.375), 28).dtype == np.int32


def test_fxp_to_fp_boundaries():
    x = np.array([I32_MIN, I32_MAX, 1, -1, 0], dtype=np.int32)
    assert dt.fxp_to_fp(x, 0).tolist() == [-1.0, 1.0, 2**-31, -(2**-31), 0.0]
    x = np.array([2**24 + 1, 2**24 + 3, -(2**24 + 1), I32_MAX, I32_MIN], dtype=np.int32)
    assert dt.fxp_to_fp(x, 31).tolist() == [2**24, 2**24 + 4, -(2**24), 2**31, -(2**31)]
    assert dt.fxp_to_fp(np.array([3 << 20], dtype=np.int32), 8).tolist() == [3 * 2.0**-3]
    for bad in (-1, 32):
        with pytest.raises(DTypeError):
            dt.fxp_to_fp(x, bad)
        with pytest.raises(DTypeError):
            dt.fp_to_fxp(fv(1.0), bad)


def test_fixed_point_against_reference():
    rng = np.random.default_rng(7)
    ints = np.concatenate([rng.integers(I32_MIN, I32_MAX, 300, dtype=np.int32, endpoint=True), [I32_MIN]])
    floats = np.concatenate([f32(*RANDOM_BITS[:300]), rng.standard_normal(300).astype(np.float32)])
    for iw in (0, 1, 8, 15, 30, 31):
        got = dt.fxp_to_fp(ints, iw)
        want = [np.float32(float(Fraction(int(v), 2 ** (31 - iw)))) for v in ints]
        assert bits_of(got) == bits_of(np.array(want, dtype=np.float32))
        half_steps = (np.arange(-40, 40) / 2 * 2.0 ** (iw - 31)).astype(np.float32)
        xs = np.concatenate([floats, half_steps])
        assert dt.fp_to_fxp(xs, iw).tolist() == [ref_fp_to_fxp(float(v), iw) for v in xs]


# ---------------------------------------------------------------------------------------------------
# Dispatch, user conversion, rand
# ---------------------------------------------------------------------------------------------------


def test_to_and_from_f32_use_hardware_legs():
    sub = f32(0x00010000)
    assert bits_of(dt.from_f32(sub, dt.bf16)) == [0]
    assert bits_of(dt.from_user(sub, dt.bf16)) == [1]
    assert bits_of(dt.to_f32(np.array([1], dtype=np.uint16).view(ml_dtypes.bfloat16), dt.bf16)) == [0]
    assert bits_of(dt.from_f32(fv(500), dt.f8e4m3)) == [0x7E]
    assert bits_of(dt.from_f32(fv(1 + 2**-3), dt.f8e5m2)) == [0x3D]
    assert bits_of(dt.from_f32(fv(5.0), dt.f4e2m1)) == [6]
    assert dt.to_f32(np.array([0x7E], dtype=np.uint8), dt.f8e4m3).tolist() == [448.0]
    assert dt.to_f32(np.array([0x3C], dtype=np.uint8), dt.f8e5m2).tolist() == [1.0]
    assert dt.to_f32(np.array([7], dtype=np.uint8), dt.f4e2m1).tolist() == [6.0]
    assert bits_of(dt.to_f32(f32(0x7FA00001, 1), dt.f32)) == [0x7FA00001, 1]
    assert dt.from_f32(fv(1.5), dt.f32).dtype == np.float32
    for d in (dt.i8, dt.i32, dt.i4):
        with pytest.raises(DTypeError):
            dt.to_f32(np.zeros(2, dtype=d.storage), d)
        with pytest.raises(DTypeError):
            dt.from_f32(fv(0.0), d)
    with pytest.raises(DTypeError, match="bf16"):
        dt.f32_from_bf16_hw(fv(1.0))


def test_conversions_keep_shape():
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    for fn in (
        dt.bf16_from_f32,
        dt.bf16_from_f32_hw,
        dt.f8e4m3_from_f32,
        dt.f8e5m2_from_f32,
        dt.f4e2m1_from_f32,
    ):
        assert fn(x).shape == (2, 3, 4)
    assert dt.f8e4m3_from_f32(np.float32(1.0)).shape == ()
    assert dt.fp_to_fxp(x, 4).shape == (2, 3, 4)


def test_from_user_floats():
    vals = np.array([1 + 2**-8, 1e-40, -3.0, 500.0, np.nan])
    assert from_user_bits(vals, dt.bf16) == bits_of(dt.bf16_from_f32(vals.astype(np.float32)))
    assert from_user_bits(vals, dt.f8e4m3) == [0x38, 0, 0xC4, 0x7E, 0x7F]
    assert from_user_bits(vals, dt.f8e5m2) == bits_of(dt.f8e5m2_from_f32(vals.astype(np.float32)))
    assert from_user_bits([0.5, -6, 5], dt.f4e2m1) == [1, 15, 6]
    assert dt.from_user([1, 2], dt.f32).dtype == np.float32
    already = dt.bf16_from_f32(fv(1.0))
    out = dt.from_user(already, dt.bf16)
    assert out is not already and bits_of(out) == [0x3F80]


def from_user_bits(values, d):
    out = dt.from_user(values, d)
    assert out.dtype == d.storage
    return bits_of(out)


def test_from_user_integers():
    assert dt.from_user([-8, 7, 0], dt.i4).tolist() == [-8, 7, 0]
    assert dt.from_user(np.array([1.0, -2.0]), dt.i8).dtype == np.int8
    assert dt.from_user(np.array([255], dtype=np.uint64), dt.u8).tolist() == [255]
    assert dt.from_user(np.array([True, False]), dt.i4).tolist() == [1, 0]
    assert dt.from_user([[-256, 255]], dt.i9).dtype == np.int16
    assert dt.from_user([I32_MIN, I32_MAX], dt.i32).tolist() == [I32_MIN, I32_MAX]
    assert dt.from_user(np.array([3.0], dtype=ml_dtypes.bfloat16), dt.i8).tolist() == [3]


@pytest.mark.parametrize(
    ("values", "dtype", "message"),
    [
        ([1, 8, 9], dt.i4, r"value 8 at index \(1,\) .*i4.*\[-8, 7\]"),
        ([[0, 0], [0, -9]], dt.i4, r"value -9 at index \(1, 1\)"),
        ([1.0, 2.5], dt.i8, r"value 2.5 at index \(1,\)"),
        ([np.nan], dt.i16, r"value nan"),
        ([np.inf], dt.i32, r"value inf"),
        ([128], dt.i8, r"value 128"),
        ([-1], dt.u8, r"value -1 .*\[0, 255\]"),
        (np.array([2**40], dtype=np.uint64), dt.i32, r"value 1099511627776"),
        ([16], dt.i5, r"\[-16, 15\]"),
        ([256], dt.i9, r"value 256"),
        ([1_000_000], dt.i8, r"value 1000000"),
        (np.array([100], dtype=np.int8), dt.i4, r"value 100"),  # storage dtype, still range-checked
    ],
)
def test_from_user_rejects_out_of_range(values, dtype, message):
    with pytest.raises(DTypeError, match=message):
        dt.from_user(values, dtype)


def test_from_user_rejects_other_kinds():
    with pytest.raises(DTypeError):
        dt.from_user(np.array(["a"]), dt.i8)


@pytest.mark.parametrize("d", dt.ALL_DTYPES, ids=str)
def test_rand_storage_and_determinism(d):
    a = dt.rand(d, 257, np.random.default_rng(42))
    b = dt.rand(d, 257, np.random.default_rng(42))
    c = dt.rand(d, 257, np.random.default_rng(43))
    assert a.dtype == d.storage and a.shape == (257,)
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()


def test_rand_ranges():
    rng = np.random.default_rng(0)
    for d in (dt.bf16, dt.f8e4m3, dt.f8e5m2):
        v = dt.to_f32(dt.rand(d, 5000, rng), d)
        assert v.min() >= -1 and v.max() <= 1 and v.min() < -0.9 and v.max() > 0.9
    v = dt.rand(dt.bf16, 5000, rng)  # built by the user constructor: exactly bf16(f32 draw), no flush
    assert np.all(np.isfinite(v.astype(np.float32)))
    v = dt.rand(dt.f32, 5000, rng)
    assert v.min() >= 0 and v.max() < 1
    assert sorted(set(bits_of(dt.rand(dt.f4e2m1, 2000, rng)))) == list(range(16))
    for d in (dt.i4, dt.i5, dt.i8, dt.u8):
        lo, hi = d.int_range
        assert sorted(set(dt.rand(d, 5000, rng).tolist())) == list(range(lo, hi + 1))
    v = dt.rand(dt.i9, 20000, rng)
    assert v.min() == -256 and v.max() == 255
    v = dt.rand(dt.i32, 5000, rng).astype(np.int64)
    assert v.min() < -(2**30) and v.max() > 2**30


# ---------------------------------------------------------------------------------------------------
# Packing
# ---------------------------------------------------------------------------------------------------


def test_pack_nibbles():
    codes = np.array([1, 2, 3, 4], dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)
    assert dt.pack(codes, dt.f4e2m1) == bytes([0x21, 0x43])  # mapping.md §9 item 11
    assert dt.pack(np.array([1, 2, 3, 4], dtype=np.uint8), dt.f4e2m1) == bytes([0x21, 0x43])
    assert dt.pack(np.array([1, 2, -1, -8], dtype=np.int8), dt.i4) == bytes([0x21, 0x8F])
    assert dt.pack([[1, 2], [-1, -8]], dt.i4) == bytes([0x21, 0x8F])
    assert dt.unpack(bytes([0x21, 0x8F]), dt.i4, 4).tolist() == [1, 2, -1, -8]
    assert bits_of(dt.unpack(bytes([0x21, 0x43]), dt.f4e2m1, 4)) == [1, 2, 3, 4]
    for d in (dt.i4, dt.f4e2m1):
        with pytest.raises(DTypeError, match="byte-aligned"):
            dt.pack(np.zeros(3, dtype=d.storage), d)
        with pytest.raises(DTypeError, match="byte-aligned"):
            dt.unpack(bytes(2), d, 3)


def test_pack_little_endian():
    assert dt.pack(np.array([0x0102, -2], dtype=np.int16), dt.i16) == bytes([2, 1, 0xFE, 0xFF])
    assert dt.pack(np.array([1], dtype=np.int32), dt.i32) == bytes([1, 0, 0, 0])
    assert dt.pack(fv(1.0), dt.f32) == bytes([0, 0, 0x80, 0x3F])
    assert dt.pack(dt.bf16_from_f32(fv(1.0, -2.0)), dt.bf16) == bytes([0x80, 0x3F, 0x00, 0xC0])
    assert dt.pack(np.array([0x7E], dtype=np.uint8), dt.f8e4m3) == bytes([0x7E])
    assert dt.unpack(bytes([0, 0, 0x80, 0x3F]), dt.f32, 1).tolist() == [1.0]
    assert dt.unpack(bytes([2, 1]), dt.i16, 1).tolist() == [0x0102]


def test_pack_rejects():
    for d in (dt.i5, dt.i9):
        with pytest.raises(DTypeError, match="staging"):
            dt.pack(np.zeros(2, dtype=d.storage), d)
        with pytest.raises(DTypeError, match="staging"):
            dt.unpack(bytes(2), d, 2)
    with pytest.raises(DTypeError, match="needs 4 bytes"):
        dt.unpack(bytes(3), dt.f32, 1)
    with pytest.raises(DTypeError):
        dt.pack(fv(1.0), dt.bf16)  # floats must already be bf16 (or raw codes)
    with pytest.raises(DTypeError):
        dt.pack([8], dt.i4)  # integers are range-checked, never wrapped
    with pytest.raises(DTypeError):
        dt.pack(np.array([0, 8], dtype=np.int8), dt.i4)


@pytest.mark.parametrize("d", [d for d in dt.ALL_DTYPES if d.materializable], ids=str)
def test_pack_round_trip(d):
    v = dt.rand(d, 64, np.random.default_rng(3))
    data = dt.pack(v, d)
    assert len(data) == d.nbytes(64)
    back = dt.unpack(data, d, 64)
    assert back.dtype == d.storage and back.tobytes() == v.tobytes()
    back[0] = back[1]  # a writable copy, not a view of the bytes


def test_fast_bf16_conversions_equal_the_bit_level_rules_on_a_million_patterns():
    """The C-cast paths (ml_dtypes plus fixed lanes) against the bit-level rules they replace."""
    rng = np.random.default_rng(5)
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 1, 0x807FFFFF]
    special += [0x7F7FFFFF, 0x7F7F8000, 0x00800000, 0x007FFFFF, 0x3F808000, 0x3F818000, 0x3F80C000]
    bits = np.concatenate(
        [rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32), np.array(special, np.uint32)]
    )
    x = bits.view(np.float32)
    n = bits.astype(np.int64)
    assert np.array_equal(dt.bf16_from_f32(x).view(np.uint16), floats._bf16_user_bits(n).astype(np.uint16))
    assert np.array_equal(dt.bf16_from_f32_hw(x).view(np.uint16), floats._bf16_hw_bits(n).astype(np.uint16))
    codes = np.arange(2**16, dtype=np.uint32)
    expected = np.where((codes & 0x7F80) == 0, (codes & 0x8000) << 16, codes << 16)
    expected = np.where((codes & 0x7FFF) > 0x7F80, 0x7FC00000, expected)
    assert np.array_equal(dt.f32_from_bf16_hw(codes.astype(np.uint16)).view(np.uint32), expected)
