"""The op families, one enum per cluster and scalar: what each VE stage can compute.

Each family is an ``Enum`` but ``FpBinaryOp``, a value type because ``MulF`` carries the ALU it runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import auto
from typing import ClassVar

from furiosa_opt.vector.ops.alus import FpMulAlu
from furiosa_opt.vector.ops.spelling import _RustEnum


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
