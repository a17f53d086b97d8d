"""The Vector Engine's ALU classes (each usable once per pass) and the ALU choice of a float multiply."""

from __future__ import annotations

from enum import auto

from furiosa_opt.vector.ops.spelling import _RustEnum


class Alu(_RustEnum):
    """The ALU classes of the VE (upstream ``RngdAlu``). Each one can be used once per VE pass."""

    # Logic cluster
    LogicAnd = auto()
    LogicOr = auto()
    LogicXor = auto()
    LogicLshift = auto()
    LogicRshift = auto()
    # Fxp cluster
    FxpAdd = auto()
    FxpLshift = auto()
    FxpMul = auto()
    FxpRshift = auto()
    # Float cluster
    FpFma = auto()
    FpFpu = auto()
    FpExp = auto()
    FpMul0 = auto()
    FpMul1 = auto()
    # Clip cluster
    ClipAdd = auto()
    ClipMax = auto()
    ClipMin = auto()
    # Reduce
    ReduceAccTree = auto()
    ReduceFpDiv = auto()


class FpMulAlu(_RustEnum):
    """Which float ALU a ``FpBinaryOp.MulF`` runs on: FpMul0, FpMul1 or FpFma.

    Examples:
        >>> FpBinaryOp.MulF(FpMulAlu.Fma)                # the multiply runs on the FMA unit
        FpBinaryOp.MulF(FpMulAlu.Fma)
        >>> [alu.name for alu in FpMulAlu]
        ['Mul0', 'Mul1', 'Fma']
    """

    Mul0 = auto()
    Mul1 = auto()
    Fma = auto()

    @property
    def alu(self) -> Alu:
        return _FP_MUL_ALU[self]


_FP_MUL_ALU = {FpMulAlu.Mul0: Alu.FpMul0, FpMulAlu.Mul1: Alu.FpMul1, FpMulAlu.Fma: Alu.FpFma}
