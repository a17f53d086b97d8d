"""The Vector Engine's values as the numbers of an EDF engine config: code tables, bit fields, raw bits.

Each table is one tuple whose positions are the codes (`configs.codes.CodeTable`); stage 2 encodes with
it, the simulator decodes with it, the EDF reader checks codes against it and displays describe them:

* `OPS`: every op of every family, in `ops.all_ops()` order (`FpBinaryOp.MulF` once per ALU);
* `MODES`: the argument modes (`BinaryArgMode`, `TernaryArgMode`) and the contraction's `LaneMode`;
* `TAG_MODES`, `CMPS`: a `TagMode`'s kind and each of its four comparisons' kind;
* `KINDS`: what an operand part or a comparison boundary is — `none` (no part), an `i32` or `f32`
  immediate, `rf` (the VRF tensor the config names in `rf`) or `stash` (what `vector_stash` wrote).

An immediate is its kind and its 32 raw bits: an i32 as its two's-complement pattern, an f32 as its u32
pattern. A `TagGuard` is a 9-bit field: bit `i` (0-3) set where tag bit `i` is constrained, bit `4 + i`
its required value, bit 8 the negation; 0 admits every element.

A config's operand (`vector_logic` … `vector_clip`) is three lists, one entry per branch slot (a plain
operand is one slot that admits every element): `operand_guard` the slot's guard, and two parts per
slot in `operand` (kinds) and `operand_bits` (raw bits, 0 for a part that is no immediate) — the second
part `none` but in a ternary op's pair. A tag stage's `TagMode` is `mode` (its kind) and, for
`Comparison`, four entries each in `cmp` (kinds), `cmp_kind` and `cmp_bits` (the boundary).
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.configs.codes import CodeTable
from furiosa_opt.vector.ops import (
    RF,
    BinaryArgMode,
    BitReq,
    Branched,
    Cmp,
    LaneMode,
    Stash,
    TagGuard,
    TagMode,
    TernaryArgMode,
    all_ops,
)

OPS: CodeTable[object] = CodeTable("Vector Engine op", all_ops())
MODES: CodeTable[object] = CodeTable("argument or lane mode", (*BinaryArgMode, *TernaryArgMode, *LaneMode))
TAG_MODES: CodeTable[str] = CodeTable("TagMode", ("Zero", "Comparison", "AxisToggle"))
CMPS: CodeTable[str] = CodeTable(
    "Cmp", ("True", "False", "Equal", "Less", "Greater", "LessUnsigned", "GreaterUnsigned")
)
KINDS: CodeTable[str] = CodeTable("operand kind", ("none", "i32", "f32", "rf", "stash"))
GUARD_BITS = 9
_SCALARS = {"i32": np.dtype(np.int32), "f32": np.dtype(np.float32)}
_NONE = KINDS.code("none")


def encode_guard(guard: TagGuard | None) -> int:
    """A guard's bit field; None (no guard) admits every element, as `TagGuard.all()` does."""
    if guard is None:
        return 0
    mask = sum(1 << i for i, req in enumerate(guard.bits) if req is not BitReq.Ignore)
    value = sum(1 << i for i, req in enumerate(guard.bits) if req is BitReq.One)
    return mask | value << 4 | int(guard.negate) << 8


def decode_guard(field: int) -> TagGuard:
    bits = tuple(
        BitReq.Ignore if not field >> i & 1 else BitReq.One if field >> (4 + i) & 1 else BitReq.Zero for i in range(4)
    )
    return TagGuard(bits, bool(field >> 8 & 1))


def guard_problem(field: int) -> str | None:
    """Why a guard field is none `encode_guard` writes (a required value on an unconstrained bit), or None."""
    if field >> 4 & 0xF & ~field:
        return f"holds {field:#x}, a required tag bit value outside the constrained bits"
    return None


def immediate(kind: str, value: object) -> tuple[int, int]:
    """(kind code, raw bits) of `value` as an immediate of the stream scalar `kind` (`i32` or `f32`),
    converted as numpy fills a stream of that scalar with it."""
    raw = np.full((), value, dtype=_SCALARS[kind]).view(np.uint32)
    return KINDS.code(kind), int(raw)


def from_immediate(kind: int, bits: int) -> np.int32 | np.float32:
    """The scalar an immediate's kind code and raw bits give; ValueError for a kind that is no immediate."""
    name = KINDS.value(kind)
    if name not in _SCALARS:
        raise ValueError(f"operand kind `{name}` is no immediate")
    return np.uint32(bits).view(_SCALARS[name])


def scalar_kind(dtype: np.dtype) -> str:
    """The immediate kind of a stream stored as `dtype` (`int32`: i32, `float32`: f32)."""
    for kind, storage in _SCALARS.items():
        if storage == dtype:
            return kind
    raise ValueError(f"a Vector Engine stream holds i32 or f32, not {dtype}")


def encode_operand(operand: object, storage: np.dtype) -> dict[str, list[int]]:
    """The operand fields of a recorded operand (None or `RF`: the VRF tensor; `Stash`; a number; a
    ternary pair; a `Branched`) on a stream stored as `storage`."""
    slots = operand.slots if isinstance(operand, Branched) else ((TagGuard.all(), operand),)
    kinds, bits = [], []
    for _, payload in slots:
        parts = payload if isinstance(payload, tuple) else (payload, None)
        for k, part in enumerate(parts):
            if part is None:
                code, raw = KINDS.code("rf" if k == 0 else "none"), 0
            elif part is RF or part is Stash:
                code, raw = KINDS.code("rf" if part is RF else "stash"), 0
            else:
                code, raw = immediate(scalar_kind(storage), part)
            kinds.append(code)
            bits.append(raw)
    return {"operand": kinds, "operand_bits": bits, "operand_guard": [encode_guard(guard) for guard, _ in slots]}


def decode_operand(
    operand: list[int], operand_bits: list[int], operand_guard: list[int]
) -> list[tuple[TagGuard, object]]:
    """The operand's slots `[(guard, payload)]` from its fields (`encode_operand`'s), a payload `RF`,
    `Stash`, an immediate scalar, or for a ternary op the pair of two of them."""

    def part(kind: int, bits: int) -> object:
        name = KINDS.value(kind)
        return RF if name == "rf" else Stash if name == "stash" else from_immediate(kind, bits)

    kinds, bits = operand, operand_bits
    slots = []
    for s, guard in enumerate(operand_guard):
        first = part(kinds[2 * s], bits[2 * s])
        second = None if kinds[2 * s + 1] == _NONE else part(kinds[2 * s + 1], bits[2 * s + 1])
        slots.append((decode_guard(guard), first if second is None else (first, second)))
    return slots


def encode_tag(mode: TagMode) -> dict[str, int | list[int]]:
    """A tag stage's fields: the mode's kind and a `Comparison`'s four comparisons (an `AxisToggle`'s axis
    is not carried: the simulator does not run it, as upstream's compiler rejects it)."""
    cmps = mode.cmps if mode.kind == "Comparison" else ()
    boundaries = [_boundary(cmp.value) if cmp.value is not None else (_NONE, 0) for cmp in cmps]
    return {
        "mode": TAG_MODES.code(mode.kind),
        "cmp": [CMPS.code(cmp.kind) for cmp in cmps],
        "cmp_kind": [kind for kind, _ in boundaries],
        "cmp_bits": [raw for _, raw in boundaries],
    }


def decode_tag(mode: int, cmp: list[int], cmp_kind: list[int], cmp_bits: list[int]) -> TagMode:
    """The TagMode of a tag stage's fields (`encode_tag`'s)."""
    kind = TAG_MODES.value(mode)
    if kind == "Zero":
        return TagMode.Zero
    if kind == "AxisToggle":
        return TagMode.AxisToggle("?")  # its axis is not carried (`encode_tag`)
    cmps = []
    for code, boundary, bits in zip(cmp, cmp_kind, cmp_bits, strict=True):
        name = CMPS.value(code)
        if name in ("True", "False"):
            cmps.append(Cmp(name))
        else:  # an i32 boundary reads back as a Python int, an f32 one as an f32: compare() tells them apart
            value = from_immediate(boundary, bits)
            cmps.append(Cmp(name, int(value) if value.dtype == np.int32 else value))
    return TagMode.Comparison(cmps)


def _boundary(value: int | float) -> tuple[int, int]:
    """A comparison boundary as an immediate of its own type: an int as i32 (or, beyond it, as the f32 it
    equals exactly, which only an f32 stream accepts), a float as f32."""
    if isinstance(value, int | np.integer):
        if -(2**31) <= value < 2**31:
            return immediate("i32", value)
        if int(np.float32(value)) != int(value):
            raise ValueError(f"the comparison boundary {value} is neither an i32 nor an exact f32")
    return immediate("f32", value)
