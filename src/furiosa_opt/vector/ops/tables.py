"""The static questions about an op: the ALU it occupies (:func:`alu_of`, each ALU is usable once per VE
pass), the value a reduction starts from (:func:`reduce_identity`), its stream scalar, and every op value.
"""

from __future__ import annotations

import math

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.dtypes import DType
from furiosa_opt.vector.ops.alus import Alu, FpMulAlu
from furiosa_opt.vector.ops.families import (
    ClipBinaryOpF32,
    ClipBinaryOpI32,
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
)

_ALU: dict[object, Alu | None] = {
    LogicBinaryOpI32.BitAnd: Alu.LogicAnd,
    LogicBinaryOpI32.BitOr: Alu.LogicOr,
    LogicBinaryOpI32.BitXor: Alu.LogicXor,
    LogicBinaryOpI32.LeftShift: Alu.LogicLshift,
    LogicBinaryOpI32.LogicRightShift: Alu.LogicRshift,
    LogicBinaryOpI32.ArithRightShift: Alu.LogicRshift,
    LogicBinaryOpF32.BitAnd: Alu.LogicAnd,
    LogicBinaryOpF32.BitOr: Alu.LogicOr,
    LogicBinaryOpF32.BitXor: Alu.LogicXor,
    FxpBinaryOp.AddFxp: Alu.FxpAdd,
    FxpBinaryOp.AddFxpSat: Alu.FxpAdd,
    FxpBinaryOp.SubFxp: Alu.FxpAdd,
    FxpBinaryOp.SubFxpSat: Alu.FxpAdd,
    FxpBinaryOp.LeftShift: Alu.FxpLshift,
    FxpBinaryOp.LeftShiftSat: Alu.FxpLshift,
    FxpBinaryOp.MulFxp: Alu.FxpMul,
    FxpBinaryOp.MulInt: Alu.FxpMul,
    FxpBinaryOp.LogicRightShift: Alu.FxpRshift,
    FxpBinaryOp.ArithRightShift: Alu.FxpRshift,
    FxpBinaryOp.ArithRightShiftRound: Alu.FxpRshift,
    **{u: (Alu.FpExp if u in (FpUnaryOp.Exp, FpUnaryOp.NegExp) else Alu.FpFpu) for u in FpUnaryOp},
    FpBinaryOp.AddF: Alu.FpFma,
    FpBinaryOp.SubF: Alu.FpFma,
    FpBinaryOp.DivF: Alu.FpFpu,
    **{FpBinaryOp.MulF(m): m.alu for m in FpMulAlu},
    FpTernaryOp.FmaF: Alu.FpFma,
    FpDivBinaryOp.DivF: Alu.ReduceFpDiv,
    ClipBinaryOpI32.Min: Alu.ClipMin,
    ClipBinaryOpI32.AbsMin: Alu.ClipMin,
    ClipBinaryOpI32.Max: Alu.ClipMax,
    ClipBinaryOpI32.AbsMax: Alu.ClipMax,
    ClipBinaryOpI32.AddFxp: Alu.ClipAdd,
    ClipBinaryOpI32.AddFxpSat: Alu.ClipAdd,
    ClipBinaryOpF32.Min: Alu.ClipMin,
    ClipBinaryOpF32.AbsMin: Alu.ClipMin,
    ClipBinaryOpF32.Max: Alu.ClipMax,
    ClipBinaryOpF32.AbsMax: Alu.ClipMax,
    ClipBinaryOpF32.Add: Alu.ClipAdd,
    **{r: Alu.ReduceAccTree for r in IntraSliceReduceOpI32},
    **{r: Alu.ReduceAccTree for r in IntraSliceReduceOpF32},
    # The inter-slice reducer is its own unit outside the intra-slice ALU pool: upstream gives its
    # ops no ALU, and the transition into it resets the ALU bookkeeping.
    **{r: None for r in InterSliceReduceOpI32},
    **{r: None for r in InterSliceReduceOpF32},
}

_I32_MIN = -(2**31)
_I32_MAX = 2**31 - 1

_IDENTITY: dict[object, np.int32 | np.float32] = {
    IntraSliceReduceOpI32.AddSat: np.int32(0),
    IntraSliceReduceOpI32.Max: np.int32(_I32_MIN),
    IntraSliceReduceOpI32.Min: np.int32(_I32_MAX),
    IntraSliceReduceOpF32.Add: np.float32(0.0),
    IntraSliceReduceOpF32.Max: np.float32(-math.inf),
    IntraSliceReduceOpF32.Min: np.float32(math.inf),
    InterSliceReduceOpI32.Add: np.int32(0),
    InterSliceReduceOpI32.AddSat: np.int32(0),
    InterSliceReduceOpI32.Max: np.int32(_I32_MIN),
    InterSliceReduceOpI32.Min: np.int32(_I32_MAX),
    InterSliceReduceOpF32.Add: np.float32(0.0),
    InterSliceReduceOpF32.Max: np.float32(-math.inf),
    InterSliceReduceOpF32.Min: np.float32(math.inf),
    InterSliceReduceOpF32.Mul: np.float32(1.0),
}

_I32_FAMILIES = (
    LogicBinaryOpI32,
    FxpBinaryOp,
    ClipBinaryOpI32,
    IntraSliceReduceOpI32,
    InterSliceReduceOpI32,
)
_F32_FAMILIES = (
    LogicBinaryOpF32,
    FpUnaryOp,
    FpBinaryOp,
    FpTernaryOp,
    FpDivBinaryOp,
    ClipBinaryOpF32,
    IntraSliceReduceOpF32,
    InterSliceReduceOpF32,
)


def _check_op(op: object) -> None:
    if op is FpBinaryOp.MulF:
        raise TypeError("FpBinaryOp.MulF needs an ALU: write FpBinaryOp.MulF(FpMulAlu.Mul0) (or Mul1, Fma)")


def alu_of(op) -> Alu | None:
    """The ALU class ``op`` occupies in a VE pass; ``None`` for inter-slice reduce ops (no ALU pool).

    Raises ``TypeError`` for anything that is not a VE op.
    """
    _check_op(op)
    try:
        return _ALU[op]
    except (KeyError, TypeError):
        raise TypeError(f"{op!r} is not a Vector Engine op") from None


def reduce_identity(op) -> np.int32 | np.float32:
    """The value a reduction with ``op`` starts from (and leaves in cells with nothing to fold)."""
    try:
        return _IDENTITY[op]
    except (KeyError, TypeError):
        raise TypeError(f"{op!r} is not a reduce op") from None


def scalar_dtype(op) -> DType:
    """The stream scalar an op works on: ``dtypes.i32`` or ``dtypes.f32``."""
    _check_op(op)
    if isinstance(op, _I32_FAMILIES):
        return dtypes.i32
    if isinstance(op, _F32_FAMILIES):
        return dtypes.f32
    raise TypeError(f"{op!r} is not a Vector Engine op")


def all_ops() -> tuple[object, ...]:
    """Every op value of every op family (``FpBinaryOp.MulF`` once per ``FpMulAlu``)."""
    ops: list[object] = []
    for family in _I32_FAMILIES + _F32_FAMILIES:
        ops.extend(FpBinaryOp.variants() if family is FpBinaryOp else family)
    return tuple(ops)
