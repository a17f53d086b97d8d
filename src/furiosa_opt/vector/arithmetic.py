"""Bit-exact numpy semantics of the Vector Engine's elementwise ops, one function per op family.

Every function is vectorised over numpy arrays (int32 or float32; Python scalars broadcast) and
matches the upstream Rust CPU backend (``engine/vector/op/semantics.rs``) bit for bit, as built for
x86-64 in release mode:

* i32 arithmetic wraps unless the op says ``Sat``; shift amounts are masked to ``b & 31`` (what a
  Rust release build does; a debug build panics on ``b >= 32``).
* f32 ``Min``/``Max`` are Rust's ``f32::min``/``f32::max`` as compiled for x86-64: NaN-ignoring like
  ``np.fmin``/``np.fmax``, but on ties (``+0.0`` vs ``-0.0``) they return the *first* argument, where
  numpy returns the second. So they are spelled out with ``where`` here.
* Transcendentals call glibc's ``expf``/``logf``/``sinf``/``cosf``/``tanhf`` through ctypes, which is
  what Rust's ``f32::exp`` & co. link to; numpy's float32 SIMD versions differ by an ulp on a large
  fraction of inputs. ``sqrt`` is correctly rounded in both, so ``np.sqrt`` is used.
* ``FmaF`` is an exact single-rounding fused multiply-add (round-to-odd in float64, then one rounding
  to float32), with glibc ``fmaf`` for non-finite inputs.

Two ops panic with ``todo!()`` upstream and raise ``NotImplementedError`` here: ``FxpBinaryOp.
ArithRightShiftRound`` and ``FpUnaryOp.Erf``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np

from furiosa_opt.vector.ops import (
    BinaryArgMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    Cmp,
    FpBinaryOp,
    FpDivBinaryOp,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TagMode,
    TernaryArgMode,
    reduce_identity,
)

__all__ = [
    "apply_arg_mode",
    "apply_branched",
    "clip",
    "compare",
    "comparison_tags",
    "fma_f32",
    "fp_binary",
    "fp_ternary",
    "fp_unary",
    "fxp",
    "logic",
    "reduce_step",
    "reducer",
]

I32_MIN = -(2**31)
I32_MAX = 2**31 - 1


# ---- operand coercion ----------------------------------------------------------------------------


def _i32(x) -> np.ndarray:
    """``x`` as an int32 array; integers must fit i32, non-integer dtypes are rejected."""
    arr = np.asarray(x)
    if arr.dtype == np.int32:
        return arr
    if arr.dtype.kind not in "iuO":
        raise TypeError(f"expected i32 values, got dtype {arr.dtype}")
    if arr.size and (arr.min() < I32_MIN or arr.max() > I32_MAX):
        raise OverflowError(f"value out of i32 range: {x!r}")
    return arr.astype(np.int32)


def _f32(x) -> np.ndarray:
    """``x`` as a float32 array; Python ints/floats are rounded to f32, other array dtypes rejected."""
    if isinstance(x, int | float) and not isinstance(x, bool):
        return np.asarray(np.float32(x))
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        return arr
    raise TypeError(f"expected f32 values, got dtype {arr.dtype}")


def _wrap(v: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of an int64 array to int32."""
    return v.astype(np.int32)


def _sat(v: np.ndarray) -> np.ndarray:
    """Saturate an int64 array to the i32 range."""
    return np.clip(v, I32_MIN, I32_MAX).astype(np.int32)


def _shift_amount(b: np.ndarray) -> np.ndarray:
    """Rust's release-mode shift amount ``(b as u32) & 31``, as uint32."""
    return (b.astype(np.int64) & 31).astype(np.uint32)


def _shl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = _shift_amount(b)
    return np.asarray(np.left_shift(a.astype(np.uint32), s, dtype=np.uint32)).view(np.int32)


def _lshr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = _shift_amount(b)
    return np.asarray(np.right_shift(a.astype(np.uint32), s, dtype=np.uint32)).view(np.int32)


def _ashr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = _shift_amount(b).astype(np.int32)
    return np.right_shift(a, s).astype(np.int32)


def _bits(x: np.ndarray) -> np.ndarray:
    """The raw 32-bit patterns of an int32/float32 array, as uint32."""
    return np.asarray(x).view(np.uint32)


# ---- Rust f32::min / f32::max (x86-64 codegen) ------------------------------------------------------


def _fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a.min(b)``: ``b`` if ``a`` is NaN or ``b < a``, else ``a`` (so a tie keeps ``a``)."""
    return np.where(np.isnan(a) | (b < a), b, a).astype(np.float32)


def _fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a.max(b)``: ``b`` if ``a`` is NaN or ``b > a``, else ``a`` (so a tie keeps ``a``)."""
    return np.where(np.isnan(a) | (b > a), b, a).astype(np.float32)


# ---- libm ----------------------------------------------------------------------------------------


def _load_libm() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libm.so.6")
    except OSError:
        name = ctypes.util.find_library("m")
        if name is None:
            raise
        return ctypes.CDLL(name)


_LIBM = _load_libm()


def _libm_fn(name: str, arity: int) -> Callable[..., float]:
    fn = getattr(_LIBM, name)
    fn.argtypes = [ctypes.c_float] * arity
    fn.restype = ctypes.c_float
    return fn


_EXPF = _libm_fn("expf", 1)
_LOGF = _libm_fn("logf", 1)
_SINF = _libm_fn("sinf", 1)
_COSF = _libm_fn("cosf", 1)
_TANHF = _libm_fn("tanhf", 1)
_FMAF = _libm_fn("fmaf", 3)


def _libm_map(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """Apply a libm ``float -> float`` function elementwise, calling it once per distinct bit pattern.

    This is a Python loop over ctypes calls (roughly 0.3 us per distinct value).
    """
    x = np.asarray(x, dtype=np.float32)
    uniq, inverse = np.unique(x.view(np.uint32).ravel(), return_inverse=True)
    values = np.fromiter(map(fn, uniq.view(np.float32).tolist()), dtype=np.float32, count=uniq.size)
    return values[inverse.ravel()].reshape(x.shape)


# ---- exact fused multiply-add ----------------------------------------------------------------------


def fma_f32(a, b, c) -> np.ndarray:
    """``a * b + c`` on f32 with a single rounding (Rust ``f32::mul_add``), vectorised.

    The product of two f32 is exact in float64; the sum is formed in float64 with round-to-odd (a
    TwoSum error term nudges an inexact, even result one ulp towards the exact value), and the final
    rounding to f32 is then correct because float64 carries more than 24 + 2 bits. Cells with a
    non-finite input go through glibc ``fmaf`` so NaN/inf handling is libm's own.
    """
    a, b, c = np.broadcast_arrays(_f32(a), _f32(b), _f32(c))
    shape = a.shape
    a, b, c = a.ravel(), b.ravel(), c.ravel()
    with np.errstate(all="ignore"):
        a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
        p = a64 * b64  # exact: 24 + 24 significant bits fit in 53
        s = p + c64
        bv = s - p
        err = (p - (s - bv)) + (c64 - bv)  # TwoSum: s + err == p + c exactly
        finite = np.isfinite(a64) & np.isfinite(b64) & np.isfinite(c64)
        sbits = s.view(np.uint64)
        nudge = finite & (err != 0) & ((sbits & np.uint64(1)) == 0)
        away = (err > 0) == (s > 0)  # the exact value lies further from zero than s
        step = np.where(away, np.uint64(1), np.uint64(0xFFFF_FFFF_FFFF_FFFF))  # +1 or -1 ulp
        out = np.where(nudge, sbits + step, sbits).view(np.float64).astype(np.float32)
    if not finite.all():
        bad = ~finite
        out[bad] = [_FMAF(x, y, z) for x, y, z in zip(*(v[bad].tolist() for v in (a, b, c)), strict=True)]
    return out.reshape(shape)


# ---- op families -----------------------------------------------------------------------------------


def logic(op, a, b) -> np.ndarray:
    """Logic cluster: ``LogicBinaryOpI32`` on i32, ``LogicBinaryOpF32`` (bitwise on the patterns) on f32."""
    if isinstance(op, LogicBinaryOpF32):
        ua, ub = np.broadcast_arrays(_bits(_f32(a)), _bits(_f32(b)))
        if op is LogicBinaryOpF32.BitAnd:
            r = ua & ub
        elif op is LogicBinaryOpF32.BitOr:
            r = ua | ub
        else:
            r = ua ^ ub
        return np.asarray(r, dtype=np.uint32).view(np.float32)
    if not isinstance(op, LogicBinaryOpI32):
        raise TypeError(f"{op!r} is not a logic op")
    a, b = np.broadcast_arrays(_i32(a), _i32(b))
    if op is LogicBinaryOpI32.BitAnd:
        return a & b
    if op is LogicBinaryOpI32.BitOr:
        return a | b
    if op is LogicBinaryOpI32.BitXor:
        return a ^ b
    if op is LogicBinaryOpI32.LeftShift:
        return _shl(a, b)
    if op is LogicBinaryOpI32.LogicRightShift:
        return _lshr(a, b)
    return _ashr(a, b)


def fxp(op: FxpBinaryOp, a, b) -> np.ndarray:
    """Fxp cluster (i32)."""
    if not isinstance(op, FxpBinaryOp):
        raise TypeError(f"{op!r} is not an FxpBinaryOp")
    a, b = np.broadcast_arrays(_i32(a), _i32(b))
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    match op:
        case FxpBinaryOp.AddFxp:
            return _wrap(a64 + b64)
        case FxpBinaryOp.AddFxpSat:
            return _sat(a64 + b64)
        case FxpBinaryOp.SubFxp:
            return _wrap(a64 - b64)
        case FxpBinaryOp.SubFxpSat:
            return _sat(a64 - b64)
        case FxpBinaryOp.LeftShift:
            return _shl(a, b)
        case FxpBinaryOp.LeftShiftSat:
            # a.saturating_mul(1 << (b & 31)) with the i32 shift, so 1 << 31 is i32::MIN.
            factor = _wrap(np.left_shift(np.int64(1), _shift_amount(b).astype(np.int64))).astype(np.int64)
            return _sat(a64 * factor)
        case FxpBinaryOp.MulFxp:
            # Q31 multiply rounding to nearest; MIN * MIN (= +1.0) saturates to MAX.
            q = (((a64 * b64) >> 30) + 1) >> 1
            both_min = (a == I32_MIN) & (b == I32_MIN)
            return np.where(both_min, np.int32(I32_MAX), _wrap(q)).astype(np.int32)
        case FxpBinaryOp.MulInt:
            return _wrap(a64 * b64)
        case FxpBinaryOp.LogicRightShift:
            return _lshr(a, b)
        case FxpBinaryOp.ArithRightShift:
            return _ashr(a, b)
        case _:
            raise NotImplementedError(
                "FxpBinaryOp.ArithRightShiftRound is not implemented by the upstream CPU backend either "
                "(semantics.rs: todo!)"
            )


def fp_unary(op: FpUnaryOp, a) -> np.ndarray:
    """Float cluster unary ops (f32), through glibc like Rust's ``f32`` methods."""
    if not isinstance(op, FpUnaryOp):
        raise TypeError(f"{op!r} is not an FpUnaryOp")
    x = _f32(a)
    with np.errstate(all="ignore"):
        match op:
            case FpUnaryOp.Exp:
                return _libm_map(_EXPF, x)
            case FpUnaryOp.NegExp:
                return _libm_map(_EXPF, -x)
            case FpUnaryOp.Sqrt:
                return np.asarray(np.sqrt(x), dtype=np.float32)
            case FpUnaryOp.Tanh:
                return _libm_map(_TANHF, x)
            case FpUnaryOp.Sigmoid:
                one = np.float32(1.0)
                return np.asarray(one / (one + _libm_map(_EXPF, -x)), dtype=np.float32)
            case FpUnaryOp.Log:
                return _libm_map(_LOGF, x)
            case FpUnaryOp.Sin:
                return _libm_map(_SINF, x)
            case FpUnaryOp.Cos:
                return _libm_map(_COSF, x)
            case _:
                raise NotImplementedError(
                    "FpUnaryOp.Erf is not implemented by the upstream CPU backend either (semantics.rs: todo!)"
                )


def fp_binary(op, a, b) -> np.ndarray:
    """Float cluster binary ops (``FpBinaryOp``) and the FpDiv stage's ``FpDivBinaryOp.DivF`` (f32)."""
    if op is FpBinaryOp.MulF:
        raise TypeError("FpBinaryOp.MulF needs an ALU: write FpBinaryOp.MulF(FpMulAlu.Mul0) (or Mul1, Fma)")
    x, y = _f32(a), _f32(b)
    with np.errstate(all="ignore"):
        if op is FpDivBinaryOp.DivF:
            r = x / y
        elif not isinstance(op, FpBinaryOp):
            raise TypeError(f"{op!r} is not an FpBinaryOp")
        elif op.kind == "AddF":
            r = x + y
        elif op.kind == "SubF":
            r = x - y
        elif op.kind == "MulF":
            r = x * y
        else:
            r = x / y
    return np.asarray(r, dtype=np.float32)


def fp_ternary(op: FpTernaryOp, a, b, c) -> np.ndarray:
    """Float cluster ternary ops: ``FmaF`` = ``a.mul_add(b, c)``."""
    if op is not FpTernaryOp.FmaF:
        raise TypeError(f"{op!r} is not an FpTernaryOp")
    return fma_f32(a, b, c)


def _abs_i32(x: np.ndarray) -> np.ndarray:
    """Rust's release ``i32::abs``: ``abs(MIN)`` wraps to ``MIN``."""
    return np.abs(x).astype(np.int32)


def clip(op, a, b) -> np.ndarray:
    """Clip cluster: ``ClipBinaryOpI32`` on i32, ``ClipBinaryOpF32`` on f32."""
    if isinstance(op, ClipBinaryOpI32):
        x, y = np.broadcast_arrays(_i32(a), _i32(b))
        match op:
            case ClipBinaryOpI32.Min:
                return np.minimum(x, y)
            case ClipBinaryOpI32.Max:
                return np.maximum(x, y)
            case ClipBinaryOpI32.AbsMin:
                return np.where(_abs_i32(x) < _abs_i32(y), x, y)
            case ClipBinaryOpI32.AbsMax:
                return np.where(_abs_i32(x) > _abs_i32(y), x, y)
            case ClipBinaryOpI32.AddFxp:
                return _wrap(x.astype(np.int64) + y)
            case _:
                return _sat(x.astype(np.int64) + y)
    if not isinstance(op, ClipBinaryOpF32):
        raise TypeError(f"{op!r} is not a clip op")
    x, y = np.broadcast_arrays(_f32(a), _f32(b))
    with np.errstate(all="ignore"):
        match op:
            case ClipBinaryOpF32.Min:
                return _fmin(x, y)
            case ClipBinaryOpF32.Max:
                return _fmax(x, y)
            case ClipBinaryOpF32.AbsMin:
                return np.where(np.abs(x) < np.abs(y), x, y)
            case ClipBinaryOpF32.AbsMax:
                return np.where(np.abs(x) > np.abs(y), x, y)
            case _:
                return np.asarray(x + y, dtype=np.float32)


def reducer(op) -> tuple[Callable, object]:
    """A reduce op as `(step, identity)` for a sequential fold (`fold.reduce_fold`)."""
    return (lambda acc, x: reduce_step(op, acc, x)), reduce_identity(op)


def reduce_step(op, acc, x) -> np.ndarray:
    """One step of a sequential reduce fold: ``acc = op(acc, x)`` (intra- or inter-slice op)."""
    if isinstance(op, IntraSliceReduceOpI32 | InterSliceReduceOpI32):
        p, q = np.broadcast_arrays(_i32(acc), _i32(x))
        match op.name:
            case "Add":
                return _wrap(p.astype(np.int64) + q)
            case "AddSat":
                return _sat(p.astype(np.int64) + q)
            case "Max":
                return np.maximum(p, q)
            case _:
                return np.minimum(p, q)
    if isinstance(op, IntraSliceReduceOpF32 | InterSliceReduceOpF32):
        p, q = np.broadcast_arrays(_f32(acc), _f32(x))
        with np.errstate(all="ignore"):
            match op.name:
                case "Add":
                    return np.asarray(p + q, dtype=np.float32)
                case "Mul":
                    return np.asarray(p * q, dtype=np.float32)
                case "Max":
                    return _fmax(p, q)
                case _:
                    return _fmin(p, q)
    raise TypeError(f"{op!r} is not a reduce op")


# ---- tags and argument modes -----------------------------------------------------------------------


def _boundary(cmp: Cmp, x: np.ndarray):
    """The comparison boundary as a scalar of the stream's type (an i32 stream needs an int)."""
    v = cmp.value
    if x.dtype == np.int32:
        if isinstance(v, float | np.floating):
            raise TypeError(f"{cmp!r} has a float boundary but the stream is i32")
        if not I32_MIN <= int(v) <= I32_MAX:
            raise OverflowError(f"{cmp!r}: boundary out of i32 range")
        return np.int32(v)
    if x.dtype == np.float32:
        if isinstance(v, int | np.integer) and int(np.float32(v)) != int(v):
            raise ValueError(f"{cmp!r}: int boundary is not exactly representable in f32")
        return np.float32(v)
    raise TypeError(f"tag comparisons need an i32 or f32 stream, got dtype {x.dtype}")


def compare(cmp: Cmp, a) -> np.ndarray:
    """Where ``cmp`` holds for each element of the i32 or f32 stream ``a`` (a bool array)."""
    x = np.asarray(a)
    if cmp.kind == "True":
        return np.ones(x.shape, dtype=bool)
    if cmp.kind == "False":
        return np.zeros(x.shape, dtype=bool)
    v = _boundary(cmp, x)
    match cmp.kind:
        case "Equal":
            return np.asarray(x == v)
        case "Less":
            return np.asarray(x < v)
        case "Greater":
            return np.asarray(v < x)
        case "LessUnsigned":
            return np.asarray(_bits(x) < _bits(np.asarray(v))[()])
        case _:
            return np.asarray(_bits(x) > _bits(np.asarray(v))[()])


def comparison_tags(mode: TagMode, a) -> np.ndarray:
    """The uint8 tags ``TagMode.Comparison`` (or ``Zero``) gives the stream ``a``: bit i = cmp i holds.

    ``AxisToggle`` depends on the stream's mapping, so it is computed by the engine, not here.
    """
    x = np.asarray(a)
    if mode.kind == "Zero":
        return np.zeros(x.shape, dtype=np.uint8)
    if mode.kind != "Comparison":
        raise TypeError(f"{mode!r} needs the stream's mapping; comparison_tags handles Zero and Comparison")
    tags = np.zeros(x.shape, dtype=np.uint8)
    for bit, cmp in enumerate(mode.cmps):
        tags |= compare(cmp, x).astype(np.uint8) << np.uint8(bit)
    return tags


def apply_branched(slots, tags, stream, combine) -> np.ndarray:
    """One Vector Engine pass over branched slots ``[(guard, operand), …]``: each element takes the first
    slot whose guard admits its tag, ``combine(stream, operand)``; an element no slot admits passes
    through unchanged (first match, as upstream's ``apply_slots``)."""
    x = np.asarray(stream)
    out, open_ = x.copy(), np.ones(x.shape, dtype=bool)
    for guard, operand in slots:
        hit = guard.admits(tags) & open_
        if hit.any():
            out = np.where(hit, combine(x, operand), out).astype(x.dtype, copy=False)
        open_ &= ~hit
    return out


def apply_arg_mode(mode, stream, operand0, operand1=None) -> tuple:
    """Pick which of ``(stream, operand0[, operand1])`` feed an op's arguments.

    ``BinaryArgMode`` returns ``(lhs, rhs)``; ``TernaryArgMode`` (needs ``operand1``) returns the three
    arguments. ``None`` means the default mode (``Mode01`` / ``Mode012``).
    """
    if mode is None:
        mode = BinaryArgMode.Mode01 if operand1 is None else TernaryArgMode.Mode012
    if isinstance(mode, BinaryArgMode):
        if operand1 is not None:
            raise TypeError(f"{mode!r} is a binary mode; it takes no operand1")
        s, o = stream, operand0
        return {
            BinaryArgMode.Mode00: (s, s),
            BinaryArgMode.Mode01: (s, o),
            BinaryArgMode.Mode10: (o, s),
            BinaryArgMode.Mode11: (o, o),
        }[mode]
    if isinstance(mode, TernaryArgMode):
        if operand1 is None:
            raise TypeError(f"{mode!r} is a ternary mode; it needs operand1")
        m, o0, o1 = stream, operand0, operand1
        return {
            TernaryArgMode.Mode012: (m, o0, o1),
            TernaryArgMode.Mode002: (m, m, o1),
            TernaryArgMode.Mode102: (o0, m, o1),
            TernaryArgMode.Mode112: (o0, o0, o1),
            TernaryArgMode.Mode020: (m, o1, m),
            TernaryArgMode.Mode021: (m, o1, o0),
            TernaryArgMode.Mode120: (o0, o1, m),
        }[mode]
    raise TypeError(f"{mode!r} is not a BinaryArgMode or TernaryArgMode")
