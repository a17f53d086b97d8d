"""Vector Engine op vocabulary and its bit-exact CPU semantics.

Every vectorised op in ``vector.arithmetic`` is checked against an independent per-element reference
written here with plain Python ints / floats (and glibc through ctypes for the transcendentals).
"""

from __future__ import annotations

import ctypes
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt import dtypes
from furiosa_opt.vector import arithmetic as cv
from furiosa_opt.vector.ops import (
    Alu,
    BinaryArgMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    Cmp,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LaneMode,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TagMode,
    TernaryArgMode,
    all_ops,
    alu_of,
    reduce_identity,
    scalar_dtype,
)

MIN = -(2**31)
MAX = 2**31 - 1
EDGE_I32 = [MIN, MIN + 1, -(2**30), -65536, -33, -32, -31, -2, -1, 0, 1, 2, 31, 32, 33, 2**30, MAX - 1, MAX]
SHIFTS = [0, 1, 7, 30, 31, 32, 33, 63, 64, -1, -31, -32, MIN, MAX]

F32_EDGE_LITERALS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -2.5,
    math.inf,
    -math.inf,
    math.nan,
    1e-45,
    -1e-45,
    1.1754943508222875e-38,
    3.4028234663852886e38,
    -3.4028234663852886e38,
]

# ---- per-element references -------------------------------------------------------------------------


def wrap(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def sat(v: int) -> int:
    return max(MIN, min(MAX, v))


def ref_shl(a: int, b: int) -> int:
    return wrap(a << (b & 31))


def ref_lshr(a: int, b: int) -> int:
    return wrap((a & 0xFFFF_FFFF) >> (b & 31))


def ref_ashr(a: int, b: int) -> int:
    return a >> (b & 31)


def ref_mul_fxp(a: int, b: int) -> int:
    if a == MIN and b == MIN:
        return MAX
    return wrap((((a * b) >> 30) + 1) >> 1)


def ref_abs(a: int) -> int:
    return wrap(abs(a))  # release-mode i32::abs: abs(MIN) == MIN


REF_LOGIC_I32 = {
    LogicBinaryOpI32.BitAnd: lambda a, b: a & b,
    LogicBinaryOpI32.BitOr: lambda a, b: a | b,
    LogicBinaryOpI32.BitXor: lambda a, b: a ^ b,
    LogicBinaryOpI32.LeftShift: ref_shl,
    LogicBinaryOpI32.LogicRightShift: ref_lshr,
    LogicBinaryOpI32.ArithRightShift: ref_ashr,
}

REF_FXP = {
    FxpBinaryOp.AddFxp: lambda a, b: wrap(a + b),
    FxpBinaryOp.AddFxpSat: lambda a, b: sat(a + b),
    FxpBinaryOp.SubFxp: lambda a, b: wrap(a - b),
    FxpBinaryOp.SubFxpSat: lambda a, b: sat(a - b),
    FxpBinaryOp.LeftShift: ref_shl,
    FxpBinaryOp.LeftShiftSat: lambda a, b: sat(a * wrap(1 << (b & 31))),
    FxpBinaryOp.MulFxp: ref_mul_fxp,
    FxpBinaryOp.MulInt: lambda a, b: wrap(a * b),
    FxpBinaryOp.LogicRightShift: ref_lshr,
    FxpBinaryOp.ArithRightShift: ref_ashr,
}

REF_CLIP_I32 = {
    ClipBinaryOpI32.Min: min,
    ClipBinaryOpI32.Max: max,
    ClipBinaryOpI32.AbsMin: lambda a, b: a if ref_abs(a) < ref_abs(b) else b,
    ClipBinaryOpI32.AbsMax: lambda a, b: a if ref_abs(a) > ref_abs(b) else b,
    ClipBinaryOpI32.AddFxp: lambda a, b: wrap(a + b),
    ClipBinaryOpI32.AddFxpSat: lambda a, b: sat(a + b),
}


def f32(x: float) -> float:
    """Round a Python float to the nearest f32 (as a Python float)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


# The edge values as the f32 numbers they denote (1e-45 is the smallest subnormal, 2**-149).
F32_EDGE = [f32(v) for v in F32_EDGE_LITERALS]


def bits(x) -> int:
    return int(np.float32(x).view(np.uint32))


def rust_min(a: float, b: float) -> float:
    """Rust ``f32::min`` as x86-64 codegen computes it (a NaN ``a`` yields ``b``; ties keep ``a``)."""
    return b if math.isnan(a) or b < a else a


def rust_max(a: float, b: float) -> float:
    return b if math.isnan(a) or b > a else a


REF_CLIP_F32 = {
    ClipBinaryOpF32.Min: rust_min,
    ClipBinaryOpF32.Max: rust_max,
    ClipBinaryOpF32.AbsMin: lambda a, b: a if abs(a) < abs(b) else b,
    ClipBinaryOpF32.AbsMax: lambda a, b: a if abs(a) > abs(b) else b,
    # One rounding of the f64 sum is exact enough: 53 >= 2 * 24 + 2, so double rounding is harmless.
    ClipBinaryOpF32.Add: lambda a, b: f32(a + b),
}

_LIBM = ctypes.CDLL("libm.so.6")


def _libm(name: str, arity: int = 1):
    fn = getattr(_LIBM, name)
    fn.argtypes = [ctypes.c_float] * arity
    fn.restype = ctypes.c_float
    return fn


EXPF, LOGF, SINF, COSF, TANHF, SQRTF = (_libm(n) for n in ("expf", "logf", "sinf", "cosf", "tanhf", "sqrtf"))
FMAF = _libm("fmaf", 3)

REF_UNARY = {
    FpUnaryOp.Exp: EXPF,
    FpUnaryOp.NegExp: lambda x: EXPF(-x),
    FpUnaryOp.Sqrt: SQRTF,
    FpUnaryOp.Tanh: TANHF,
    FpUnaryOp.Sigmoid: lambda x: f32(1.0 / f32(1.0 + EXPF(-x))),
    FpUnaryOp.Log: LOGF,
    FpUnaryOp.Sin: SINF,
    FpUnaryOp.Cos: COSF,
}


def round_f32(q: Fraction) -> float:
    """Round an exact rational to the nearest f32, ties to even (subnormals and overflow included)."""
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    quantum = Fraction(2) ** (max(e, -126) - 23)
    value = round(q / quantum) * quantum  # round() on a Fraction is half-to-even
    if value >= 2**128:
        return sign * math.inf
    return sign * float(value)


def i32_array(values) -> np.ndarray:
    return np.array(values, dtype=np.int64).astype(np.int32)


def f32_array(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def pairs(values):
    a, b = zip(*[(x, y) for x in values for y in values], strict=True)
    return list(a), list(b)


def assert_f32_bits(got: np.ndarray, expected: list[float]) -> None:
    """Bit equality, except that any NaN matches any NaN."""
    exp = f32_array(expected)
    assert got.dtype == np.float32
    same = (got.view(np.uint32) == exp.view(np.uint32)) | (np.isnan(got) & np.isnan(exp))
    assert same.all(), list(zip(got[~same].tolist(), exp[~same].tolist(), strict=True))


# ---- vocabulary --------------------------------------------------------------------------------------


def test_enum_names_follow_upstream():
    names = lambda e: [m.name for m in e]  # noqa: E731
    assert names(Alu) == [
        "LogicAnd",
        "LogicOr",
        "LogicXor",
        "LogicLshift",
        "LogicRshift",
        "FxpAdd",
        "FxpLshift",
        "FxpMul",
        "FxpRshift",
        "FpFma",
        "FpFpu",
        "FpExp",
        "FpMul0",
        "FpMul1",
        "ClipAdd",
        "ClipMax",
        "ClipMin",
        "ReduceAccTree",
        "ReduceFpDiv",
    ]
    assert names(LogicBinaryOpI32) == [
        "BitAnd",
        "BitOr",
        "BitXor",
        "LeftShift",
        "LogicRightShift",
        "ArithRightShift",
    ]
    assert names(LogicBinaryOpF32) == ["BitAnd", "BitOr", "BitXor"]
    assert set(names(FxpBinaryOp)) == {
        "AddFxp",
        "AddFxpSat",
        "SubFxp",
        "SubFxpSat",
        "LeftShift",
        "LeftShiftSat",
        "LogicRightShift",
        "ArithRightShift",
        "ArithRightShiftRound",
        "MulFxp",
        "MulInt",
    }
    assert set(names(FpUnaryOp)) == {"Exp", "NegExp", "Sqrt", "Tanh", "Sigmoid", "Log", "Sin", "Cos", "Erf"}
    assert names(FpMulAlu) == ["Mul0", "Mul1", "Fma"]
    assert names(FpTernaryOp) == ["FmaF"]
    assert names(FpDivBinaryOp) == ["DivF"]
    assert names(ClipBinaryOpI32) == ["Min", "Max", "AbsMin", "AbsMax", "AddFxp", "AddFxpSat"]
    assert names(ClipBinaryOpF32) == ["Min", "Max", "AbsMin", "AbsMax", "Add"]
    assert names(IntraSliceReduceOpI32) == ["AddSat", "Max", "Min"]
    assert names(IntraSliceReduceOpF32) == ["Add", "Max", "Min"]
    assert names(InterSliceReduceOpI32) == ["Add", "AddSat", "Max", "Min"]
    assert names(InterSliceReduceOpF32) == ["Add", "Max", "Min", "Mul"]
    assert names(BinaryArgMode) == ["Mode00", "Mode01", "Mode10", "Mode11"]
    assert names(TernaryArgMode) == [
        "Mode012",
        "Mode002",
        "Mode102",
        "Mode112",
        "Mode020",
        "Mode021",
        "Mode120",
    ]
    assert names(LaneMode) == ["Interleaved", "Sequential"]


def test_display_uses_rust_spelling():
    assert str(FxpBinaryOp.AddFxpSat) == "FxpBinaryOp::AddFxpSat"
    assert repr(FxpBinaryOp.AddFxpSat) == "FxpBinaryOp.AddFxpSat"
    assert str(FpBinaryOp.MulF(FpMulAlu.Mul0)) == "FpBinaryOp::MulF(FpMulAlu::Mul0)"
    assert repr(FpBinaryOp.MulF(FpMulAlu.Fma)) == "FpBinaryOp.MulF(FpMulAlu.Fma)"
    assert repr(FpBinaryOp.AddF) == "FpBinaryOp.AddF"
    assert [str(c) for c in (Cmp.Less(0.0), Cmp.GreaterUnsigned(3), Cmp.True_, Cmp.False_)] == [
        "<0.0",
        ">u3",
        "true",
        "false",
    ]
    assert repr(Cmp.True_) == "Cmp.True_"


def test_fp_binary_op_values():
    assert FpBinaryOp.MulF(FpMulAlu.Mul0) == FpBinaryOp.MulF(FpMulAlu.Mul0)
    assert FpBinaryOp.MulF(FpMulAlu.Mul0) != FpBinaryOp.MulF(FpMulAlu.Mul1)
    assert len({*FpBinaryOp.variants()}) == 6
    with pytest.raises(TypeError, match="FpMulAlu"):
        FpBinaryOp.MulF("Mul0")
    with pytest.raises(TypeError):
        FpBinaryOp("AddF", FpMulAlu.Mul0)
    with pytest.raises(ValueError):
        FpBinaryOp("PowF")
    with pytest.raises(TypeError, match=r"MulF\(FpMulAlu.Mul0\)"):
        alu_of(FpBinaryOp.MulF)
    with pytest.raises(TypeError, match="needs an ALU"):
        cv.fp_binary(FpBinaryOp.MulF, f32_array([1.0]), f32_array([2.0]))


def test_tag_mode_and_cmp_values():
    assert TagMode.Zero.kind == "Zero"
    mode = TagMode.Comparison([Cmp.Equal(0.0), Cmp.Greater(0.0), Cmp.Less(0.0), Cmp.True_])
    assert mode.cmps == (Cmp.Equal(0.0), Cmp.Greater(0.0), Cmp.Less(0.0), Cmp.True_)
    assert TagMode.AxisToggle("I").axis_name == "I"
    with pytest.raises(TypeError, match="four"):
        TagMode.Comparison([Cmp.True_])
    with pytest.raises(TypeError):
        Cmp.Less(True)
    with pytest.raises(TypeError):
        Cmp.Equal("0")
    with pytest.raises(TypeError):
        Cmp("True", 1)


def test_alu_spot_checks():
    assert alu_of(FxpBinaryOp.AddFxp) is Alu.FxpAdd
    assert alu_of(FxpBinaryOp.SubFxpSat) is Alu.FxpAdd
    assert alu_of(FxpBinaryOp.LeftShiftSat) is Alu.FxpLshift
    assert alu_of(FxpBinaryOp.MulInt) is Alu.FxpMul
    assert alu_of(FxpBinaryOp.MulFxp) is Alu.FxpMul
    assert alu_of(FxpBinaryOp.ArithRightShiftRound) is Alu.FxpRshift
    assert alu_of(LogicBinaryOpI32.BitAnd) is Alu.LogicAnd
    assert alu_of(LogicBinaryOpI32.LeftShift) is Alu.LogicLshift
    assert alu_of(LogicBinaryOpI32.ArithRightShift) is Alu.LogicRshift
    assert alu_of(LogicBinaryOpF32.BitXor) is Alu.LogicXor
    assert alu_of(FpUnaryOp.Exp) is Alu.FpExp
    assert alu_of(FpUnaryOp.NegExp) is Alu.FpExp
    for op in (FpUnaryOp.Sqrt, FpUnaryOp.Tanh, FpUnaryOp.Sigmoid, FpUnaryOp.Log, FpUnaryOp.Erf):
        assert alu_of(op) is Alu.FpFpu
    assert alu_of(FpBinaryOp.AddF) is Alu.FpFma
    assert alu_of(FpBinaryOp.SubF) is Alu.FpFma
    assert alu_of(FpBinaryOp.MulF(FpMulAlu.Mul0)) is Alu.FpMul0
    assert alu_of(FpBinaryOp.MulF(FpMulAlu.Mul1)) is Alu.FpMul1
    assert alu_of(FpBinaryOp.MulF(FpMulAlu.Fma)) is Alu.FpFma
    assert alu_of(FpBinaryOp.DivF) is Alu.FpFpu
    assert alu_of(FpDivBinaryOp.DivF) is Alu.ReduceFpDiv
    assert alu_of(FpTernaryOp.FmaF) is Alu.FpFma
    assert alu_of(ClipBinaryOpI32.AddFxpSat) is Alu.ClipAdd
    assert alu_of(ClipBinaryOpF32.Add) is Alu.ClipAdd
    assert alu_of(ClipBinaryOpI32.AbsMax) is Alu.ClipMax
    assert alu_of(ClipBinaryOpF32.Max) is Alu.ClipMax
    assert alu_of(ClipBinaryOpI32.AbsMin) is Alu.ClipMin
    assert alu_of(ClipBinaryOpF32.Min) is Alu.ClipMin
    assert alu_of(IntraSliceReduceOpF32.Add) is Alu.ReduceAccTree
    assert alu_of(IntraSliceReduceOpI32.Min) is Alu.ReduceAccTree


def test_every_op_has_an_alu_entry():
    ops = all_ops()
    families = {type(op) for op in ops}
    assert len(families) == 13
    for op in ops:
        alu = alu_of(op)
        if isinstance(op, InterSliceReduceOpI32 | InterSliceReduceOpF32):
            assert alu is None, op  # the inter-slice reducer is outside the ALU pool
        else:
            assert isinstance(alu, Alu), op
    for not_an_op in ("AddFxp", 3, TagMode.Zero, BinaryArgMode.Mode01, FpMulAlu.Mul0):
        with pytest.raises(TypeError):
            alu_of(not_an_op)


def test_scalar_dtype():
    assert scalar_dtype(FxpBinaryOp.MulFxp) is dtypes.i32
    assert scalar_dtype(ClipBinaryOpI32.Min) is dtypes.i32
    assert scalar_dtype(InterSliceReduceOpI32.Add) is dtypes.i32
    assert scalar_dtype(FpBinaryOp.MulF(FpMulAlu.Mul1)) is dtypes.f32
    assert scalar_dtype(LogicBinaryOpF32.BitAnd) is dtypes.f32
    assert all(scalar_dtype(op) in (dtypes.i32, dtypes.f32) for op in all_ops())


def test_reduce_identities():
    i32_cases = {
        IntraSliceReduceOpI32.AddSat: 0,
        IntraSliceReduceOpI32.Max: MIN,
        IntraSliceReduceOpI32.Min: MAX,
        InterSliceReduceOpI32.Add: 0,
        InterSliceReduceOpI32.AddSat: 0,
        InterSliceReduceOpI32.Max: MIN,
        InterSliceReduceOpI32.Min: MAX,
    }
    for op, value in i32_cases.items():
        ident = reduce_identity(op)
        assert ident.dtype == np.int32 and int(ident) == value, op
    f32_cases = {
        IntraSliceReduceOpF32.Add: 0.0,
        IntraSliceReduceOpF32.Max: -math.inf,
        IntraSliceReduceOpF32.Min: math.inf,
        InterSliceReduceOpF32.Add: 0.0,
        InterSliceReduceOpF32.Max: -math.inf,
        InterSliceReduceOpF32.Min: math.inf,
        InterSliceReduceOpF32.Mul: 1.0,
    }
    for op, value in f32_cases.items():
        ident = reduce_identity(op)
        assert ident.dtype == np.float32 and bits(ident) == bits(value), op
    with pytest.raises(TypeError):
        reduce_identity(FxpBinaryOp.AddFxp)


# ---- i32 ops at the boundaries -----------------------------------------------------------------------


@pytest.mark.parametrize("op", list(REF_LOGIC_I32), ids=str)
def test_logic_i32_edges(op):
    a, b = pairs(EDGE_I32 + SHIFTS)
    got = cv.logic(op, i32_array(a), i32_array(b))
    assert got.dtype == np.int32
    assert got.tolist() == [REF_LOGIC_I32[op](x, y) for x, y in zip(a, b, strict=True)]


def test_shift_amount_is_masked():
    a = i32_array([1] * 5 + [-8] * 5)
    b = i32_array([0, 31, 32, 33, -1] * 2)
    assert cv.logic(LogicBinaryOpI32.LeftShift, a, b).tolist() == [1, MIN, 1, 2, MIN, -8, 0, -8, -16, 0]
    assert cv.fxp(FxpBinaryOp.LogicRightShift, a, b).tolist() == [1, 0, 1, 0, 0, -8, 1, -8, 2**31 - 4, 1]
    assert cv.fxp(FxpBinaryOp.ArithRightShift, a, b).tolist() == [1, 0, 1, 0, 0, -8, -1, -8, -4, -1]


def test_logic_f32_works_on_bit_patterns():
    a = f32_array([-1.5, 0.0, math.inf, -0.0])
    b = f32_array([1.0, -0.0, -2.0, 3.0])
    for op, fn in [
        (LogicBinaryOpF32.BitAnd, lambda x, y: x & y),
        (LogicBinaryOpF32.BitOr, lambda x, y: x | y),
        (LogicBinaryOpF32.BitXor, lambda x, y: x ^ y),
    ]:
        got = cv.logic(op, a, b)
        assert got.dtype == np.float32
        assert got.view(np.uint32).tolist() == [fn(bits(x), bits(y)) for x, y in zip(a, b, strict=True)]
    # Flipping the sign bit with XOR is the classic use.
    assert cv.logic(LogicBinaryOpF32.BitXor, f32_array([2.0]), f32_array([-0.0])).tolist() == [-2.0]


@pytest.mark.parametrize("op", list(REF_FXP), ids=str)
def test_fxp_edges(op):
    a, b = pairs(EDGE_I32 + SHIFTS)
    got = cv.fxp(op, i32_array(a), i32_array(b))
    assert got.dtype == np.int32
    assert got.tolist() == [REF_FXP[op](x, y) for x, y in zip(a, b, strict=True)]


def test_fxp_named_cases():
    fxp = lambda op, a, b: int(cv.fxp(op, i32_array([a]), i32_array([b]))[0])  # noqa: E731
    assert fxp(FxpBinaryOp.AddFxp, MAX, 1) == MIN
    assert fxp(FxpBinaryOp.AddFxpSat, MAX, 1) == MAX
    assert fxp(FxpBinaryOp.SubFxpSat, MIN, 1) == MIN
    assert fxp(FxpBinaryOp.SubFxp, MIN, 1) == MAX
    # Q31: MIN * MIN is +1.0, which saturates; MIN * MAX is just above -1.0.
    assert fxp(FxpBinaryOp.MulFxp, MIN, MIN) == MAX
    assert fxp(FxpBinaryOp.MulFxp, MIN, MAX) == MIN + 1
    assert fxp(FxpBinaryOp.MulFxp, 2**30, 2**30) == 2**29  # 0.5 * 0.5
    assert fxp(FxpBinaryOp.MulFxp, 3, 2**30) == 2  # 1.5 rounds half up
    assert fxp(FxpBinaryOp.MulFxp, -3, 2**30) == -1  # -1.5 rounds half up too
    # 1 << 31 is i32::MIN, so a shift by 31 multiplies by a negative number.
    assert fxp(FxpBinaryOp.LeftShiftSat, 1, 31) == MIN
    assert fxp(FxpBinaryOp.LeftShiftSat, -1, 31) == MAX
    assert fxp(FxpBinaryOp.LeftShiftSat, 2, 31) == MIN
    assert fxp(FxpBinaryOp.LeftShiftSat, 2**29, 2) == MAX
    assert fxp(FxpBinaryOp.LeftShiftSat, 3, 33) == 6  # masked to a shift by 1
    assert fxp(FxpBinaryOp.MulInt, 65536, 65536) == 0
    assert fxp(FxpBinaryOp.MulInt, MIN, -1) == MIN


def test_fxp_accepts_python_scalars_and_broadcasts():
    assert cv.fxp(FxpBinaryOp.AddFxp, MAX, 1).tolist() == MIN
    got = cv.fxp(FxpBinaryOp.AddFxpSat, i32_array([[1, MAX], [MIN, 0]]), -5)
    assert got.shape == (2, 2) and got.tolist() == [[-4, MAX - 5], [MIN, -5]]
    with pytest.raises(OverflowError):
        cv.fxp(FxpBinaryOp.AddFxp, 2**31, 0)
    with pytest.raises(TypeError):
        cv.fxp(FxpBinaryOp.AddFxp, f32_array([1.0]), 0)


def test_unimplemented_upstream_ops_raise():
    with pytest.raises(NotImplementedError, match="upstream CPU backend either"):
        cv.fxp(FxpBinaryOp.ArithRightShiftRound, i32_array([4]), i32_array([1]))
    with pytest.raises(NotImplementedError, match="upstream CPU backend either"):
        cv.fp_unary(FpUnaryOp.Erf, f32_array([0.5]))


@pytest.mark.parametrize("op", list(REF_CLIP_I32), ids=str)
def test_clip_i32_edges(op):
    a, b = pairs(EDGE_I32)
    got = cv.clip(op, i32_array(a), i32_array(b))
    assert got.dtype == np.int32
    assert got.tolist() == [REF_CLIP_I32[op](x, y) for x, y in zip(a, b, strict=True)]


def test_clip_i32_abs_ties_and_min():
    absmin = lambda a, b: int(cv.clip(ClipBinaryOpI32.AbsMin, i32_array([a]), i32_array([b]))[0])  # noqa: E731
    absmax = lambda a, b: int(cv.clip(ClipBinaryOpI32.AbsMax, i32_array([a]), i32_array([b]))[0])  # noqa: E731
    assert absmin(3, -3) == -3 and absmin(-3, 3) == 3  # a tie takes b
    assert absmax(3, -3) == -3 and absmax(-3, 3) == 3
    # |MIN| wraps to MIN, the smallest i32, so MIN is the "smallest magnitude".
    assert absmin(MIN, 0) == MIN and absmin(0, MIN) == MIN
    assert absmax(MIN, 5) == 5


# ---- f32 ops -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", list(REF_CLIP_F32), ids=str)
def test_clip_f32_edges(op):
    a, b = pairs(F32_EDGE)
    got = cv.clip(op, f32_array(a), f32_array(b))
    assert_f32_bits(got, [REF_CLIP_F32[op](x, y) for x, y in zip(a, b, strict=True)])


def test_f32_min_max_match_rust_on_signed_zeros_and_nan():
    # Observed from rustc 1.95 (x86-64, -O and debug): ties keep the first argument, NaN is ignored.
    # np.fmin/np.fmax return the second argument on a tie, so they would get the zero's sign wrong.
    z, nz, nan = 0.0, -0.0, math.nan
    cases = [  # a, b, a.min(b), a.max(b)
        (z, nz, z, z),
        (nz, z, nz, nz),
        (nan, nz, nz, nz),
        (nz, nan, nz, nz),
        (nan, 1.0, 1.0, 1.0),
        (-math.inf, nan, -math.inf, -math.inf),
        (1.0, -1.0, -1.0, 1.0),
    ]
    a, b, mn, mx = (f32_array(c) for c in zip(*cases, strict=True))
    assert cv.clip(ClipBinaryOpF32.Min, a, b).view(np.uint32).tolist() == mn.view(np.uint32).tolist()
    assert cv.clip(ClipBinaryOpF32.Max, a, b).view(np.uint32).tolist() == mx.view(np.uint32).tolist()
    both_nan = cv.clip(ClipBinaryOpF32.Min, f32_array([nan]), f32_array([nan]))
    assert np.isnan(both_nan).all()


def test_f32_abs_min_max_ties_and_nan():
    absmin = lambda a, b: float(cv.clip(ClipBinaryOpF32.AbsMin, f32_array([a]), f32_array([b]))[0])  # noqa: E731
    absmax = lambda a, b: float(cv.clip(ClipBinaryOpF32.AbsMax, f32_array([a]), f32_array([b]))[0])  # noqa: E731
    assert math.copysign(1, absmin(0.0, -0.0)) == -1  # tie: b
    assert math.copysign(1, absmax(-0.0, 0.0)) == 1
    assert absmin(2.0, -2.0) == -2.0 and absmax(-2.0, 2.0) == 2.0
    assert absmin(math.nan, 1.0) == 1.0 and math.isnan(absmin(1.0, math.nan))  # NaN compares false: b
    assert absmax(math.nan, 1.0) == 1.0 and math.isnan(absmax(1.0, math.nan))
    assert absmax(-math.inf, 3.0) == -math.inf


def test_fp_binary_edges():
    a, b = pairs(F32_EDGE)
    fa, fb = f32_array(a), f32_array(b)
    refs = {
        FpBinaryOp.AddF: lambda x, y: f32(x + y),
        FpBinaryOp.SubF: lambda x, y: f32(x - y),
        FpBinaryOp.MulF(FpMulAlu.Mul0): lambda x, y: f32(x * y),
        FpBinaryOp.MulF(FpMulAlu.Fma): lambda x, y: f32(x * y),
    }
    with np.errstate(all="ignore"):
        for op, ref in refs.items():
            assert_f32_bits(cv.fp_binary(op, fa, fb), [ref(x, y) for x, y in zip(a, b, strict=True)])
        div = [float(np.float32(x) / np.float32(y)) for x, y in zip(a, b, strict=True)]
    assert_f32_bits(cv.fp_binary(FpBinaryOp.DivF, fa, fb), div)
    assert_f32_bits(cv.fp_binary(FpDivBinaryOp.DivF, fa, fb), div)


UNARY_INPUTS = [
    *F32_EDGE,
    -1e-30,
    88.72283,
    88.72284,
    -103.97208,
    -87.33655,
    1e-7,
    3.1415927,
    -3.1415927,
    1e5,
    1e30,
    -20.0,
    20.0,
    0.6931472,
]


@pytest.mark.parametrize("op", list(REF_UNARY), ids=str)
def test_fp_unary_matches_libm(op):
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            f32_array(UNARY_INPUTS),
            rng.uniform(-30, 30, 1500).astype(np.float32),
            rng.integers(0, 2**32, 1500, dtype=np.uint64).astype(np.uint32).view(np.float32),
        ]
    )
    got = cv.fp_unary(op, x)
    assert got.dtype == np.float32 and got.shape == x.shape
    ref = REF_UNARY[op]
    assert_f32_bits(got, [ref(v) for v in x.tolist()])


def test_fp_unary_keeps_shape_and_repeats():
    x = f32_array([[0.0, 1.0, 0.0], [1.0, -1.0, 0.0]])
    got = cv.fp_unary(FpUnaryOp.Exp, x)
    assert got.shape == (2, 3)
    assert got.tolist() == [[1.0, EXPF(1.0), 1.0], [EXPF(1.0), EXPF(-1.0), 1.0]]
    assert cv.fp_unary(FpUnaryOp.Sigmoid, f32_array([0.0])).tolist() == [0.5]
    assert cv.fp_unary(FpUnaryOp.NegExp, 0.0).shape == ()


# ---- fused multiply-add ------------------------------------------------------------------------------


def double_rounding_case() -> tuple[float, float, float]:
    """f32 ``a, b`` whose product is ``2**-24 * (1 + r * 2**-47)`` with a small ``r > 0``, and ``c = 1``.

    The exact ``a*b + c`` lies just above the midpoint ``1 + 2**-24`` between two f32 neighbours, but
    within half a float64 ulp of it: float64 rounds onto the midpoint and the f32 tie then goes down.
    """
    for m1 in range(11_863_284, 2**24):  # just above sqrt(2**47)
        m2 = -(-(2**47) // m1)
        r = m1 * m2 - 2**47
        if 0 < r < 2**17 and m2 < 2**24:
            return math.ldexp(m1, -35), math.ldexp(m2, -36), 1.0
    raise AssertionError("no case found")


def test_fma_is_single_rounding():
    a, b, c = double_rounding_case()
    assert f32(a) == a and f32(b) == b
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    fused = float(cv.fp_ternary(FpTernaryOp.FmaF, f32_array([a]), f32_array([b]), f32_array([c]))[0])
    assert fused == round_f32(exact) == FMAF(a, b, c) == 1.0 + 2.0**-23
    naive_f64 = f32(a * b + c)
    naive_f32 = float(np.float32(a) * np.float32(b) + np.float32(c))
    assert naive_f64 == naive_f32 == 1.0 != fused


def test_fma_random_and_special():
    rng = np.random.default_rng(11)
    n = 3000
    mant = lambda: rng.uniform(-2, 2, n)  # noqa: E731
    a = np.ldexp(mant(), rng.integers(-80, 80, n)).astype(np.float32)
    b = np.ldexp(mant(), rng.integers(-80, 80, n)).astype(np.float32)
    with np.errstate(over="ignore"):
        c = (a.astype(np.float64) * b * rng.choice([-1.0, 1.0, 1e-3, 1e8], n)).astype(np.float32)
    specials = f32_array(F32_EDGE)
    sa, sb, sc = (g.ravel() for g in np.meshgrid(specials, specials, specials[:8]))
    a, b, c = np.concatenate([a, sa]), np.concatenate([b, sb]), np.concatenate([c, sc])
    got = cv.fma_f32(a, b, c)
    assert_f32_bits(got, [FMAF(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist(), strict=True)])
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    for x, y, z, g in zip(a[finite][:500].tolist(), b[finite].tolist(), c[finite].tolist(), got[finite], strict=False):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact != 0:
            assert float(g) == round_f32(exact), (x, y, z)


def test_fma_subnormal_and_overflow():
    tiny = math.ldexp(1, -149)
    big = 3.4028234663852886e38
    a = f32_array([tiny, 2.0**-75, big, big, -0.0, 0.0])
    b = f32_array([0.5, 2.0**-75, 2.0, 1.0, 5.0, -5.0])
    c = f32_array([tiny, -0.0, -big, big, 0.0, 0.0])
    got = cv.fma_f32(a, b, c)
    assert_f32_bits(got, [FMAF(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist(), strict=True)])
    assert got.tolist()[:4] == [2 * tiny, 0.0, big, math.inf]
    assert bits(got[4]) == 0 and bits(got[5]) == 0  # -0 + +0 is +0


# ---- reduce steps ------------------------------------------------------------------------------------


def test_reduce_step_i32():
    xs = [MAX, 5, MIN, -7]

    def fold(op, step):
        acc, ref = reduce_identity(op), int(reduce_identity(op))
        for x in xs:
            acc = cv.reduce_step(op, acc, np.int32(x))
            ref = step(ref, x)
            assert int(acc) == ref, op
        return ref

    assert fold(InterSliceReduceOpI32.Add, lambda p, q: wrap(p + q)) == wrap(MAX + 5 + MIN - 7)
    # MAX + 5 saturates at MAX, so adding MIN then lands on -1 (wrapping would not).
    assert fold(InterSliceReduceOpI32.AddSat, lambda p, q: sat(p + q)) == -8
    assert fold(IntraSliceReduceOpI32.AddSat, lambda p, q: sat(p + q)) == -8
    assert fold(IntraSliceReduceOpI32.Max, max) == MAX
    assert fold(InterSliceReduceOpI32.Min, min) == MIN


def test_reduce_step_f32_vectorised():
    acc = np.full(3, reduce_identity(InterSliceReduceOpF32.Max))
    for row in ([math.nan, -0.0, 1.0], [-5.0, 0.0, math.nan], [math.nan, -1.0, 2.0]):
        acc = cv.reduce_step(InterSliceReduceOpF32.Max, acc, f32_array(row))
    # NaN is skipped; max(-0.0, 0.0) keeps the accumulator's -0.0.
    assert acc.view(np.uint32).tolist() == [bits(-5.0), bits(-0.0), bits(2.0)]
    acc = np.full(2, reduce_identity(IntraSliceReduceOpF32.Min))
    acc = cv.reduce_step(IntraSliceReduceOpF32.Min, acc, f32_array([0.0, math.nan]))
    acc = cv.reduce_step(IntraSliceReduceOpF32.Min, acc, f32_array([-0.0, 3.0]))
    assert acc.view(np.uint32).tolist() == [bits(0.0), bits(3.0)]
    prod = cv.reduce_step(InterSliceReduceOpF32.Mul, reduce_identity(InterSliceReduceOpF32.Mul), 0.1)
    assert float(prod) == f32(0.1)
    total = cv.reduce_step(IntraSliceReduceOpF32.Add, f32_array([1.0]), f32_array([2.0**-24]))
    assert total.tolist() == [1.0]  # f32 addition, ties to even
    with pytest.raises(TypeError):
        cv.reduce_step(ClipBinaryOpF32.Max, acc, acc)


# ---- tags and argument modes -------------------------------------------------------------------------


def test_compare_f32():
    x = f32_array([0.0, -0.0, 1.5, -2.5, math.nan, math.inf])
    assert cv.compare(Cmp.Equal(0.0), x).tolist() == [True, True, False, False, False, False]
    assert cv.compare(Cmp.Less(0.0), x).tolist() == [False, False, False, True, False, False]
    assert cv.compare(Cmp.Greater(0.0), x).tolist() == [False, False, True, False, False, True]
    assert cv.compare(Cmp.True_, x).all() and not cv.compare(Cmp.False_, x).any()
    assert cv.compare(Cmp.GreaterUnsigned(1.0), f32_array([-1.0])).tolist() == [True]
    assert cv.compare(Cmp.Greater(1.0), f32_array([-1.0])).tolist() == [False]
    assert cv.compare(Cmp.LessUnsigned(-1.0), f32_array([1.0])).tolist() == [True]
    assert cv.compare(Cmp.Less(2), f32_array([1.0])).tolist() == [True]  # an exact int boundary is fine


def test_compare_i32():
    x = i32_array([MIN, -1, 0, 1, MAX])
    assert cv.compare(Cmp.GreaterUnsigned(1), x).tolist() == [True, True, False, False, True]
    assert cv.compare(Cmp.LessUnsigned(0), x).tolist() == [False] * 5
    assert cv.compare(Cmp.Less(0), x).tolist() == [True, True, False, False, False]
    assert cv.compare(Cmp.Equal(MAX), x).tolist() == [False, False, False, False, True]
    with pytest.raises(TypeError, match="float boundary"):
        cv.compare(Cmp.Less(0.5), x)
    with pytest.raises(OverflowError):
        cv.compare(Cmp.Less(2**31), x)


def test_comparison_tags_bit_order():
    # Bit i holds comparison i (pinned by upstream's comparison_bits_land_in_cmp_order test).
    mode = TagMode.Comparison((Cmp.Equal(0.0), Cmp.Greater(0.0), Cmp.Less(0.0), Cmp.True_))
    tags = cv.comparison_tags(mode, f32_array([0.0, 1.5, -2.5, -0.0]))
    assert tags.dtype == np.uint8 and tags.tolist() == [0b1001, 0b1010, 0b1100, 0b1001]
    assert cv.comparison_tags(TagMode.Zero, i32_array([1, 2])).tolist() == [0, 0]
    with pytest.raises(TypeError):
        cv.comparison_tags(TagMode.AxisToggle("I"), i32_array([1]))


def test_apply_arg_mode():
    s, o, p = "s", "o0", "o1"
    binary = {m: cv.apply_arg_mode(m, s, o) for m in BinaryArgMode}
    assert binary == {
        BinaryArgMode.Mode00: (s, s),
        BinaryArgMode.Mode01: (s, o),
        BinaryArgMode.Mode10: (o, s),
        BinaryArgMode.Mode11: (o, o),
    }
    ternary = {m.name: cv.apply_arg_mode(m, s, o, p) for m in TernaryArgMode}
    assert ternary == {
        "Mode012": (s, o, p),
        "Mode002": (s, s, p),
        "Mode102": (o, s, p),
        "Mode112": (o, o, p),
        "Mode020": (s, p, s),
        "Mode021": (s, p, o),
        "Mode120": (o, p, s),
    }
    assert cv.apply_arg_mode(None, s, o) == (s, o)
    assert cv.apply_arg_mode(None, s, o, p) == (s, o, p)
    with pytest.raises(TypeError):
        cv.apply_arg_mode(TernaryArgMode.Mode012, s, o)
    with pytest.raises(TypeError):
        cv.apply_arg_mode(BinaryArgMode.Mode01, s, o, p)


def test_arg_mode_feeds_the_op():
    stream, operand = i32_array([10, 20]), i32_array([1, 2])
    lhs, rhs = cv.apply_arg_mode(BinaryArgMode.Mode10, stream, operand)
    assert cv.fxp(FxpBinaryOp.SubFxp, lhs, rhs).tolist() == [-9, -18]
    x, y, z = cv.apply_arg_mode(TernaryArgMode.Mode020, f32_array([2.0]), f32_array([3.0]), f32_array([5.0]))
    assert cv.fp_ternary(FpTernaryOp.FmaF, x, y, z).tolist() == [12.0]  # 2 * 5 + 2


# ---- random properties -------------------------------------------------------------------------------

i32s = st.integers(MIN, MAX)
i32_pairs = st.lists(st.tuples(i32s, st.one_of(i32s, st.integers(-40, 70))), min_size=1, max_size=40)
f32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
f32_pairs = st.lists(st.tuples(f32s, f32s), min_size=1, max_size=40)


@settings(max_examples=examples(150), deadline=None)
@given(i32_pairs)
def test_fxp_and_logic_random(ab):
    a, b = ([p[i] for p in ab] for i in (0, 1))
    xa, xb = i32_array(a), i32_array(b)
    for op, ref in REF_FXP.items():
        assert cv.fxp(op, xa, xb).tolist() == [ref(x, y) for x, y in ab], op
    for op, ref in REF_LOGIC_I32.items():
        assert cv.logic(op, xa, xb).tolist() == [ref(x, y) for x, y in ab], op


@settings(max_examples=examples(150), deadline=None)
@given(i32_pairs)
def test_clip_i32_random(ab):
    xa, xb = i32_array([p[0] for p in ab]), i32_array([p[1] for p in ab])
    for op, ref in REF_CLIP_I32.items():
        assert cv.clip(op, xa, xb).tolist() == [ref(x, y) for x, y in ab], op


@settings(max_examples=examples(150), deadline=None)
@given(f32_pairs)
def test_clip_f32_random(ab):
    xa, xb = f32_array([p[0] for p in ab]), f32_array([p[1] for p in ab])
    for op, ref in REF_CLIP_F32.items():
        assert_f32_bits(cv.clip(op, xa, xb), [ref(x, y) for x, y in ab])


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(f32s, f32s, f32s), min_size=1, max_size=20))
def test_fma_random_property(abc):
    a, b, c = (f32_array([t[i] for t in abc]) for i in range(3))
    assert_f32_bits(cv.fma_f32(a, b, c), [FMAF(x, y, z) for x, y, z in abc])
