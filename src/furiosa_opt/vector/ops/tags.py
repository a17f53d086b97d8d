"""The tag unit: how each element's 4-bit tag is computed (``TagMode``) from comparisons (``Cmp``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

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
