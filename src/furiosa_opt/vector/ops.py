"""The op vocabulary of the Vector Engine (VE): op enums, argument modes, tag modes and ALU classes.

Names follow the upstream Rust crate (``furiosa-opt-std``, ``engine/vector``) so that kernels copied
from the upstream book read the same in Python: ``FxpBinaryOp.AddFxpSat``, ``FpBinaryOp.MulF(FpMulAlu.Mul0)``,
``TagMode.Comparison((Cmp.Less(0.0), Cmp.Greater(0.0), Cmp.False_, Cmp.False_))``.

Two spellings differ from Rust because Python forbids them: ``Cmp::True`` / ``Cmp::False`` are
``Cmp.True_`` / ``Cmp.False_``.

Exact CPU semantics live in :mod:`furiosa_opt.vector.arithmetic`; this module only names things and
answers two static questions per op: which ALU it occupies (:func:`alu_of`, each ALU is usable once
per VE pass) and which value starts a reduction (:func:`reduce_identity`).
"""

from __future__ import annotations

import ast
import functools
import math
import re
from dataclasses import dataclass
from enum import Enum, auto
from typing import ClassVar

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType

__all__ = [
    "RF",
    "Alu",
    "BinaryArgMode",
    "BitReq",
    "Branched",
    "ClipBinaryOpF32",
    "ClipBinaryOpI32",
    "Cmp",
    "FpBinaryOp",
    "FpDivBinaryOp",
    "FpMulAlu",
    "FpTernaryOp",
    "FpUnaryOp",
    "FxpBinaryOp",
    "InterSliceReduceOpF32",
    "InterSliceReduceOpI32",
    "IntraSliceReduceOpF32",
    "IntraSliceReduceOpI32",
    "LaneMode",
    "LogicBinaryOpF32",
    "LogicBinaryOpI32",
    "Stash",
    "TagGuard",
    "TagMode",
    "TernaryArgMode",
    "all_ops",
    "alu_of",
    "reduce_identity",
    "scalar_dtype",
]


class _RustEnum(Enum):
    """An enum whose ``repr`` is the Python spelling and whose ``str`` is the Rust spelling."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return f"{type(self).__name__}::{self.name}"


# ---- ALUs ----------------------------------------------------------------------------------------


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


# ---- op enums ------------------------------------------------------------------------------------


class LogicBinaryOpI32(_RustEnum):
    """Logic cluster ops on an i32 stream. Shift amounts are masked to ``b & 31``.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_logic(LogicBinaryOpI32.BitAnd, 0xFF).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(-1024, 1024, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, v & 0xFF))
        True
    """

    BitAnd = auto()
    BitOr = auto()
    BitXor = auto()
    LeftShift = auto()
    LogicRightShift = auto()
    ArithRightShift = auto()


class LogicBinaryOpF32(_RustEnum):
    """Logic cluster ops on an f32 stream: bitwise on the 32-bit patterns.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_logic(LogicBinaryOpF32.BitXor, -0.0).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, -v))
        True
    """

    BitAnd = auto()
    BitOr = auto()
    BitXor = auto()


class FxpBinaryOp(_RustEnum):
    """Fxp cluster ops on an i32 stream (``ArithRightShiftRound`` has no CPU implementation upstream).

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.MulInt, 3).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(-1024, 1024, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, v * 3))
        True
    """

    AddFxp = auto()
    AddFxpSat = auto()
    SubFxp = auto()
    SubFxpSat = auto()
    LeftShift = auto()
    LeftShiftSat = auto()
    MulFxp = auto()
    MulInt = auto()
    LogicRightShift = auto()
    ArithRightShift = auto()
    ArithRightShiftRound = auto()


class FpUnaryOp(_RustEnum):
    """Float cluster unary ops on an f32 stream (``Erf`` has no CPU implementation upstream).

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_unary(FpUnaryOp.Sqrt)
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(0, 4, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.sqrt(v)))
        True
    """

    Exp = auto()
    NegExp = auto()
    Sqrt = auto()
    Tanh = auto()
    Sigmoid = auto()
    Erf = auto()
    Log = auto()
    Sin = auto()
    Cos = auto()


@dataclass(frozen=True, slots=True)
class FpBinaryOp:
    """Float cluster binary ops: ``FpBinaryOp.AddF``, ``.SubF``, ``.DivF`` and ``.MulF(FpMulAlu.X)``.

    A value type rather than an ``Enum`` because ``MulF`` carries the ALU it runs on, as in Rust.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.5)
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, v * np.float32(0.5)))
        True
    """

    kind: str
    mul_alu: FpMulAlu | None = None

    AddF: ClassVar[FpBinaryOp]
    SubF: ClassVar[FpBinaryOp]
    DivF: ClassVar[FpBinaryOp]
    KINDS: ClassVar[tuple[str, ...]] = ("AddF", "SubF", "MulF", "DivF")

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown FpBinaryOp kind {self.kind!r}; expected one of {self.KINDS}")
        if self.kind == "MulF":
            if not isinstance(self.mul_alu, FpMulAlu):
                raise TypeError(f"FpBinaryOp.MulF needs an FpMulAlu (Mul0, Mul1 or Fma), got {self.mul_alu!r}")
        elif self.mul_alu is not None:
            raise TypeError(f"FpBinaryOp.{self.kind} takes no FpMulAlu")

    @staticmethod
    def MulF(alu: FpMulAlu) -> FpBinaryOp:
        """Float multiply on the ALU ``alu`` selects (FpMul0, FpMul1 or FpFma)."""
        return FpBinaryOp("MulF", alu)

    @staticmethod
    def variants() -> tuple[FpBinaryOp, ...]:
        """Every distinct op value (MulF once per ALU)."""
        muls = tuple(FpBinaryOp.MulF(a) for a in FpMulAlu)
        return (FpBinaryOp.AddF, FpBinaryOp.SubF, *muls, FpBinaryOp.DivF)

    def __repr__(self) -> str:
        if self.mul_alu is None:
            return f"FpBinaryOp.{self.kind}"
        return f"FpBinaryOp.{self.kind}({self.mul_alu!r})"

    def __str__(self) -> str:
        if self.mul_alu is None:
            return f"FpBinaryOp::{self.kind}"
        return f"FpBinaryOp::{self.kind}({self.mul_alu})"


FpBinaryOp.AddF = FpBinaryOp("AddF")
FpBinaryOp.SubF = FpBinaryOp("SubF")
FpBinaryOp.DivF = FpBinaryOp("DivF")


class FpTernaryOp(_RustEnum):
    """Float cluster ternary op: ``FmaF`` = ``a * b + c`` with a single rounding.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0))
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, v * np.float32(2) + np.float32(1)))
        True
    """

    FmaF = auto()


class FpDivBinaryOp(_RustEnum):
    """The FpDiv stage's op (implicit in ``vector_fp_div``): ``a / b`` on the ReduceFpDiv ALU.

    Examples:
        >>> list(FpDivBinaryOp)                          # the one op of `vector_fp_div(divisor)`
        [FpDivBinaryOp.DivF]
    """

    DivF = auto()


class ClipBinaryOpI32(_RustEnum):
    """Clip cluster ops on an i32 stream.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_clip(ClipBinaryOpI32.Min, 100).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(-1024, 1024, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.minimum(v, 100)))
        True
    """

    Min = auto()
    Max = auto()
    AbsMin = auto()
    AbsMax = auto()
    AddFxp = auto()
    AddFxpSat = auto()


class ClipBinaryOpF32(_RustEnum):
    """Clip cluster ops on an f32 stream.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_clip(ClipBinaryOpF32.Max, 0.0).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.maximum(v, np.float32(0))))
        True
    """

    Min = auto()
    Max = auto()
    AbsMin = auto()
    AbsMax = auto()
    Add = auto()


class IntraSliceReduceOpI32(_RustEnum):
    """Intra-slice reduce ops on an i32 stream.

    Examples:
        >>> [op.name for op in IntraSliceReduceOpI32]
        ['AddSat', 'Max', 'Min']
    """

    AddSat = auto()
    Max = auto()
    Min = auto()


class IntraSliceReduceOpF32(_RustEnum):
    """Intra-slice reduce ops on an f32 stream.

    Examples:
        >>> [op.name for op in IntraSliceReduceOpF32]    # `.vector_intra_slice_reduce(op, axis, time, packet)`
        ['Add', 'Max', 'Min']
    """

    Add = auto()
    Max = auto()
    Min = auto()


class InterSliceReduceOpI32(_RustEnum):
    """Inter-slice reduce ops on an i32 stream (``Add`` wraps).

    Examples:
        >>> [op.name for op in InterSliceReduceOpI32]
        ['Add', 'AddSat', 'Max', 'Min']
    """

    Add = auto()
    AddSat = auto()
    Max = auto()
    Min = auto()


class InterSliceReduceOpF32(_RustEnum):
    """Inter-slice reduce ops on an f32 stream.

    Examples:
        >>> [op.name for op in InterSliceReduceOpF32]    # `.vector_inter_slice_reduce(op, slice, time)`
        ['Add', 'Max', 'Min', 'Mul']
    """

    Add = auto()
    Max = auto()
    Min = auto()
    Mul = auto()


# ---- argument modes ------------------------------------------------------------------------------


class BinaryArgMode(_RustEnum):
    """``ModeXY`` computes ``op(argX, argY)`` with 0 = the stream, 1 = operand0. Default: ``Mode01``.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero)
        ...     s = s.vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 5).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(-1024, 1024, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, 5 - v))
        True
    """

    Mode00 = auto()
    Mode01 = auto()
    Mode10 = auto()
    Mode11 = auto()


class TernaryArgMode(_RustEnum):
    """``ModeXYZ`` computes ``op(argX, argY, argZ)`` with 0 = stream, 1 = operand0, 2 = operand1.

    Default: ``Mode012``.

    Examples:
        >>> [mode.name for mode in TernaryArgMode][:3]      # Mode012 = op(stream, operand0, operand1)
        ['Mode012', 'Mode002', 'Mode102']
    """

    Mode012 = auto()
    Mode002 = auto()
    Mode102 = auto()
    Mode112 = auto()
    Mode020 = auto()
    Mode021 = auto()
    Mode120 = auto()


class LaneMode(_RustEnum):
    """Where the contraction's Lane Folder relocates the ``Lane`` axis (into OutPacket or OutTime).

    Examples:
        >>> [mode.name for mode in LaneMode]              # `.contract_lane(LaneMode.Interleaved, time, packet)`
        ['Interleaved', 'Sequential']
    """

    Interleaved = auto()
    Sequential = auto()


# ---- tags ----------------------------------------------------------------------------------------


_CMP_WITH_VALUE = ("Equal", "Less", "Greater", "LessUnsigned", "GreaterUnsigned")
_CMP_SYMBOL = {"Equal": "=", "Less": "<", "Greater": ">", "LessUnsigned": "<u", "GreaterUnsigned": ">u"}


@dataclass(frozen=True, slots=True)
class Cmp:
    """One comparison of the tag unit against each stream element.

    ``Cmp.Equal(v)`` (``==``, so ``-0.0 == 0.0`` and NaN never matches), ``Cmp.Less(v)``,
    ``Cmp.Greater(v)``, ``Cmp.LessUnsigned(v)`` / ``Cmp.GreaterUnsigned(v)`` (on the raw 32-bit
    patterns read as unsigned), and the constants ``Cmp.True_`` / ``Cmp.False_`` (Rust's
    ``Cmp::True`` / ``Cmp::False``; ``True``/``False`` are Python keywords).

    The boundary ``v`` is a Python ``int`` or ``float``; it is checked against the stream's scalar when
    the comparison runs (an ``i32`` stream needs an ``int``).

    Examples:
        >>> A = axes(A=2048)
        >>> less = TagMode.Comparison((Cmp.Less(0.0), Cmp.False_, Cmp.False_, Cmp.False_))
        >>> negative = TagGuard.matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore))
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(less).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Branched.imm(negative, 0.0))
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.where(v < 0, np.float32(0), v)))
        True
    """

    kind: str
    value: int | float | None = None

    True_: ClassVar[Cmp]
    False_: ClassVar[Cmp]

    def __post_init__(self) -> None:
        if self.kind in _CMP_WITH_VALUE:
            v = self.value
            if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
                raise TypeError(f"Cmp.{self.kind} needs an int or float boundary, got {v!r}")
        elif self.kind in ("True", "False"):
            if self.value is not None:
                raise TypeError(f"Cmp.{self.kind}_ takes no boundary")
        else:
            raise ValueError(f"unknown Cmp kind {self.kind!r}")

    @staticmethod
    def Equal(value: int | float) -> Cmp:
        return Cmp("Equal", value)

    @staticmethod
    def Less(value: int | float) -> Cmp:
        return Cmp("Less", value)

    @staticmethod
    def Greater(value: int | float) -> Cmp:
        return Cmp("Greater", value)

    @staticmethod
    def LessUnsigned(value: int | float) -> Cmp:
        return Cmp("LessUnsigned", value)

    @staticmethod
    def GreaterUnsigned(value: int | float) -> Cmp:
        return Cmp("GreaterUnsigned", value)

    def __repr__(self) -> str:
        if self.kind in ("True", "False"):
            return f"Cmp.{self.kind}_"
        return f"Cmp.{self.kind}({self.value!r})"

    def __str__(self) -> str:
        if self.kind in ("True", "False"):
            return self.kind.lower()
        return f"{_CMP_SYMBOL[self.kind]}{self.value}"


Cmp.True_ = Cmp("True")
Cmp.False_ = Cmp("False")


@dataclass(frozen=True, slots=True)
class TagMode:
    """How the tag unit computes each element's 4-bit tag.

    * ``TagMode.Zero``: every tag is 0 (the default).
    * ``TagMode.Comparison((c0, c1, c2, c3))``: bit ``i`` is set where ``ci`` holds.
    * ``TagMode.AxisToggle(axis)``: bit 3 = coordinate along ``axis`` mod 2 (``axis`` is a mapping
      ``Axis`` or its name). Runs on the CPU backend but is rejected by the upstream compiler.

    Examples:
        >>> A = axes(A=2048)
        >>> less = TagMode.Comparison((Cmp.Less(0.0), Cmp.False_, Cmp.False_, Cmp.False_))
        >>> negative = TagGuard.matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore))
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(less).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Branched.imm(negative, 0.0))
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.where(v < 0, np.float32(0), v)))
        True
    """

    kind: str
    cmps: tuple[Cmp, Cmp, Cmp, Cmp] | None = None
    axis: object = None

    Zero: ClassVar[TagMode]

    def __post_init__(self) -> None:
        if self.kind == "Comparison":
            cmps = self.cmps
            if not isinstance(cmps, tuple) or len(cmps) != 4 or not all(isinstance(c, Cmp) for c in cmps):
                raise TypeError(f"TagMode.Comparison needs exactly four Cmp values, got {cmps!r}")
        elif self.kind == "AxisToggle":
            if self.axis is None:
                raise TypeError("TagMode.AxisToggle needs an axis")
        elif self.kind != "Zero":
            raise ValueError(f"unknown TagMode kind {self.kind!r}")

    @staticmethod
    def Comparison(cmps) -> TagMode:
        return TagMode("Comparison", cmps=tuple(cmps))

    @staticmethod
    def AxisToggle(axis) -> TagMode:
        return TagMode("AxisToggle", axis=axis)

    @property
    def axis_name(self) -> str | None:
        """The toggle axis's name (``AxisToggle`` only)."""
        if self.axis is None:
            return None
        return self.axis if isinstance(self.axis, str) else self.axis.name

    def __repr__(self) -> str:
        if self.kind == "Zero":
            return "TagMode.Zero"
        if self.kind == "Comparison":
            return f"TagMode.Comparison({self.cmps!r})"
        return f"TagMode.AxisToggle({self.axis!r})"


TagMode.Zero = TagMode("Zero")


# ---- branches: guards on the tags, and operands with a slot per arm ------------------------------------


class BitReq(_RustEnum):
    """What a guard asks of one tag bit: ``One``, ``Zero``, or ``Ignore`` (unconstrained).

    Examples:
        >>> TagGuard.matches((BitReq.One, BitReq.Zero, BitReq.Ignore, BitReq.Ignore))  # bit 0 set, bit 1 clear
        TagGuard.matches((BitReq.One, BitReq.Zero, BitReq.Ignore, BitReq.Ignore))
    """

    One = auto()
    Zero = auto()
    Ignore = auto()


_ANY = (BitReq.Ignore,) * 4


@dataclass(frozen=True, slots=True)
class TagGuard:
    """Which elements an operand slot (or a guarded unary op) applies to, by their 4-bit tag: a pattern
    of one ``BitReq`` per bit, in bit order (``TagMode.Comparison`` sets bit ``i`` from comparison ``i``;
    bit 3 is also the pair-mode group), kept as written or negated (upstream's ``TagGuard``).

        TagGuard.matches((BitReq.Zero, BitReq.Zero, BitReq.One, BitReq.Ignore))  # only bit 2 of 0..2 set
        TagGuard.not_matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore))
        TagGuard.all()      # every element: a pass's `else`
        TagGuard.group(1)   # bit 3 set

    Examples:
        >>> TagGuard.group(1)                            # bit 3 set: pair-mode group 1
        TagGuard.matches((BitReq.Ignore, BitReq.Ignore, BitReq.Ignore, BitReq.One))
        >>> TagGuard.all()                               # every element
        TagGuard.all()
    """

    bits: tuple[BitReq, BitReq, BitReq, BitReq] = _ANY
    negate: bool = False

    def __post_init__(self) -> None:
        if len(self.bits) != 4 or not all(isinstance(b, BitReq) for b in self.bits):
            raise TypeError(f"a TagGuard pattern is four BitReq values, got {self.bits!r}")

    @staticmethod
    def all() -> TagGuard:
        return TagGuard()

    @staticmethod
    def matches(bits) -> TagGuard:
        return TagGuard(tuple(bits))

    @staticmethod
    def not_matches(bits) -> TagGuard:
        """Negating a pattern on bit 3 alone names the other group, folded as upstream folds it."""
        bits = tuple(bits)
        if bits[:3] == _ANY[:3] and bits[3] is not BitReq.Ignore:
            return TagGuard.group(0 if bits[3] is BitReq.One else 1)
        return TagGuard(bits, True)

    @staticmethod
    def group(id: int) -> TagGuard:
        if id not in (0, 1):
            raise ValueError(f"a pair-mode group is 0 or 1, got {id!r}")
        return TagGuard((*_ANY[:3], BitReq.One if id else BitReq.Zero))

    @property
    def unconditional(self) -> bool:
        return self.bits == _ANY and not self.negate

    @property
    def dead(self) -> bool:
        """Admits no tag at all (the negation of the unconstrained pattern)."""
        return self.bits == _ANY and self.negate

    def admits(self, tags) -> np.ndarray:
        """Where the 4-bit ``tags`` satisfy the guard."""
        t = np.asarray(tags, dtype=np.uint8)
        ok = np.ones(t.shape, dtype=bool)
        for bit, req in enumerate(self.bits):
            if req is not BitReq.Ignore:
                ok &= ((t >> bit) & 1).astype(bool) == (req is BitReq.One)
        return ~ok if self.negate else ok

    def __repr__(self) -> str:
        if self.unconditional:
            return "TagGuard.all()"
        bits = "(" + ", ".join(repr(b) for b in self.bits) + ")"
        return f"TagGuard.{'not_matches' if self.negate else 'matches'}({bits})"


class _Port:
    """`RF`: where a printed `Branched` names the register-file tensor its op reads (an operand of the op)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "RF"


RF = _Port()


class _FromClassOrValue:
    """A builder step callable on the class (starting an empty `Branched`) or on a value (extending it)."""

    def __init__(self, fn):
        self.fn, self.__doc__ = fn, fn.__doc__

    def __get__(self, obj, cls):
        return functools.partial(self.fn, obj if obj is not None else cls())


@dataclass(frozen=True, slots=True)
class Branched:
    """An operand with one slot per branch: up to three immediates, then the register-file port (a VRF
    tensor or ``Stash``), each under a ``TagGuard``. Each element takes the first slot whose guard admits
    its tag; an element no slot admits passes through unchanged (upstream's ``Branched``).

        Branched.imm(negative, 1.0).rf(TagGuard.all(), scale_vrf)     # negatives: 1.0; the rest: the VRF
        Branched.imm(nonzero, (-2.0, 10.0))                          # a ternary slot: its two operands

    Examples:
        >>> A = axes(A=2048)
        >>> less = TagMode.Comparison((Cmp.Less(0.0), Cmp.False_, Cmp.False_, Cmp.False_))
        >>> negative = TagGuard.matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore))
        >>> @device
        ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(less).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        ...     s = s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Branched.imm(negative, 0.0))
        ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
        >>> with Context.acquire() as ctx:
        ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool(np.array_equal(y, np.where(v < 0, np.float32(0), v)))
        True
    """

    imms: tuple = ()  # (guard, value) per immediate slot, in order
    port: tuple | None = None  # (guard, VrfTensor | Stash | RF)

    @_FromClassOrValue
    def imm(self, guard: TagGuard, value) -> Branched:
        """Fill the next immediate slot."""
        if self.port is not None or len(self.imms) == 3:
            raise VerifyError(
                "vector-branch-slots", "Branched: this pass has no immediate register left (three, before the port)"
            )
        return Branched((*self.imms, (guard, value)), None)._checked()

    @_FromClassOrValue
    def rf(self, guard: TagGuard, operand) -> Branched:
        """Fill the register-file port, the last slot."""
        if self.port is not None:
            raise VerifyError("vector-branch-slots", "Branched: the register-file port is already filled")
        return Branched(self.imms, (guard, operand))._checked()

    @property
    def slots(self) -> tuple:
        return (*self.imms, *((self.port,) if self.port else ()))

    def with_port(self, operand) -> Branched:
        return Branched(self.imms, (self.port[0], operand))

    def _checked(self) -> Branched:
        after = None
        for i, (guard, _) in enumerate(self.slots):
            if not isinstance(guard, TagGuard):
                raise VerifyError("vector-branch-guard", f"Branched: a slot is guarded by a TagGuard, got {guard!r}")
            if guard.dead:
                raise VerifyError(
                    "vector-branch-dead-guard", f"Branched: slot {i}'s TagGuard admits no tag, so it could never fire"
                )
            if after is not None:
                raise VerifyError(
                    "vector-branch-after-unconditional",
                    f"Branched: slot {after} is unconditional, so slot {i} after it could never fire",
                    notes=("fill it before the unconditional slot, or guard the unconditional one",),
                )
            if guard.unconditional:
                after = i
        return self

    def __repr__(self) -> str:
        text = "Branched"
        for guard, value in self.imms:
            text += f".imm({guard!r}, {value!r})"
        if self.port:
            text += f".rf({self.port[0]!r}, {self.port[1]!r})"
        return text


# ---- the stash operand ---------------------------------------------------------------------------


class _StashOperand:
    """`Stash`: the operand that reads what `vector_stash` wrote earlier in the same pass — once, at the
    scalar and way it was written in (upstream's `Stash`; the operand register, read on the rf port).

        s.vector_stash().vector_fp_unary(FpUnaryOp.Exp).vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "Stash"


Stash = _StashOperand()
"""The operand that reads what `vector_stash` wrote earlier in the same Vector Engine pass: once, at the
scalar type and way it was written in (upstream's `Stash`).

Examples:
    >>> A = axes(A=2048)
    >>> @device
    ... def op(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
    ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
    ...     s = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
    ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
    ...     s = s.vector_stash().vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
    ...     s = s.vector_widen_concat(m["1"], m["A % 8"]).vector_final()
    ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
    >>> v = np.linspace(-2, 2, 2048, dtype=np.float32)
    >>> with Context.acquire() as ctx:
    ...     y = launch(op, ctx, HostTensor.from_numpy(v, f32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
    >>> bool(np.array_equal(y, v * v))
    True
"""


# ---- static tables -------------------------------------------------------------------------------

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


_OP_TEXT = re.compile(r"[A-Z][A-Za-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*(\(.*\))*(\.[a-z_]+\(.*\))*\Z|Stash\Z")


def parse_op(text: str) -> object:
    """An op value from its printed form (`FxpBinaryOp.AddFxp`, `FpBinaryOp.MulF(FpMulAlu.Mul0)`), as
    vISA text and EDF engine configs carry it. The text comes from files, so it is checked node by node
    before it is evaluated: this module's public names, their public attributes, calls and constants."""
    if not _OP_TEXT.match(text):
        raise ValueError(f"`{text}` is not a Vector Engine op value")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"`{text}` is not a Vector Engine op value") from None
    for node in ast.walk(tree):
        allowed = (
            isinstance(node, ast.Expression | ast.Call | ast.Load | ast.keyword | ast.UnaryOp | ast.USub | ast.Tuple)
            or (isinstance(node, ast.Name) and node.id in __all__)
            or (isinstance(node, ast.Attribute) and not node.attr.startswith("_"))
            or (isinstance(node, ast.Constant) and isinstance(node.value, int | float | bool | type(None)))
        )
        if not allowed:
            raise ValueError(f"`{text}` is not a Vector Engine op value (`{ast.unparse(node)}` is not allowed)")
    try:
        return eval(compile(tree, "<op>", "eval"), {name: globals()[name] for name in __all__} | {"__builtins__": {}})
    except Exception as error:
        raise ValueError(f"unknown Vector Engine op value `{text}`: {error}") from None
