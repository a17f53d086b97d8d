"""Argument modes (which inputs feed an op's operands) and the contraction's ``LaneMode``."""

from __future__ import annotations

from enum import auto

from furiosa_opt.vector.ops.spelling import _RustEnum


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
