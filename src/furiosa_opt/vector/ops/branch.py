"""Branches: guards on the tags (``BitReq``, ``TagGuard``), operands with one slot per arm (``Branched``),
and the operands read on the register-file port (``RF`` as printed, ``Stash``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import auto

import numpy as np

from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.vector.ops.spelling import _RustEnum


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
