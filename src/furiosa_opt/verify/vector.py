"""Rules of the Vector Engine: entry types, stage order and way, one use per ALU, narrow/widen shapes
(spec/compute.md §6.1–§6.5, upstream `verify/engine/vector`)."""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import is_padding, padded, pair, split_at

# The intra-slice chain, in order: stage → (rank, way it needs, whether it may repeat).
STAGES = {
    "init": (0, 8, False),
    "tag": (1, 8, False),
    "logic": (2, 8, True),
    "fxp": (3, 8, True),
    "fxp_to_fp": (4, 8, False),
    "narrow": (5, 8, False),
    "fp": (6, 4, True),
    "fp_div": (8, 4, False),
    "widen": (9, 4, False),
    "fp_to_fxp": (10, 8, False),
    "clip": (11, 8, True),
}
HALF = RNGD.ve_lanes // 2


def _show(mapping: Mapping) -> str:
    return f"`{mapping}`"


def check_entry(dtype: DType) -> None:
    if dtype not in (dtypes.i32, dtypes.f32):
        raise VerifyError("vector-dtype", f"vector_init: the Vector Engine computes on i32 or f32, not {dtype}")


def check_stage(current: str, way: int, method: str, stage: str) -> None:
    """`stage` may follow `current` if it lies later in the chain (or repeats), at the right way."""
    rank, need, repeats = STAGES[stage]
    now = STAGES[current][0]
    if now > rank or (now == rank and not repeats):
        later = [s for s, (r, _, rep) in STAGES.items() if r > now or (r == now and rep)]
        raise VerifyError(
            "vector-stage-order",
            f"`{method}` cannot follow the {current} stage of the Vector Engine",
            notes=(
                f"after {current} come: {', '.join(later) or 'only vector_final'}",
                "the intra-slice chain runs tag → logic → fxp → fxp_to_fp → narrow → fp → fp_div → widen → "
                "fp_to_fxp → clip",
            ),
        )
    if way != need:
        hint = (
            "narrow it first (vector_narrow_split / vector_narrow_trim)"
            if need == 4
            else ("widen it first (vector_widen_concat / vector_widen_pad)")
        )
        raise VerifyError(
            "vector-way",
            f"`{method}` needs a {need}-element (Way{need}) stream, this one is Way{way}",
            notes=(hint,),
        )


def check_scalar(dtype: DType, wanted: DType, method: str) -> None:
    if dtype != wanted:
        raise VerifyError("vector-scalar", f"`{method}` computes on {wanted}, the stream holds {dtype}")


def check_alu(alu, used: frozenset, method: str) -> None:
    if alu is not None and alu in used:
        raise VerifyError(
            "vector-alu",
            f"`{method}`: {alu.name} is already in use",
            notes=("each ALU serves one op per Vector Engine pass",),
        )


def check_tag_packet(packet: Mapping) -> None:
    if packet.size != RNGD.ve_lanes:
        raise VerifyError(
            "vector-packet",
            f"VectorTensor requires Packet of {RNGD.ve_lanes} elements (one flit) "
            f"in Way8 mode, got {_show(packet)} ({packet.size} elements)",
        )


def check_narrow_split(time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, RNGD.ve_lanes, "vector_narrow_split")
    outer, inner = split_at(packet, HALF)
    _equal("vector_narrow_split", "time", pair(time, outer), time2)
    _equal("vector_narrow_split", "packet", inner, packet2)


def check_narrow_trim(packet: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, RNGD.ve_lanes, "vector_narrow_trim")
    outer, inner = split_at(packet, HALF)
    if not is_padding(outer):
        raise VerifyError(
            "vector-narrow-trim",
            f"vector_narrow_trim: the back {HALF} lanes of {_show(packet)} must "
            f"be dummy (`1 # 2`), they hold {_show(outer)}",
        )
    _equal("vector_narrow_trim", "packet", inner, packet2)


def check_widen_concat(time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, HALF, "vector_widen_concat")
    if time.size % 2:
        raise VerifyError("vector-widen-concat", f"vector_widen_concat: Time {_show(time)} has an odd size")
    outer, inner = split_at(time, 2)
    _equal("vector_widen_concat", "time", outer, time2)
    _equal("vector_widen_concat", "packet", pair(inner, packet), packet2)


def check_widen_pad(packet: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, HALF, "vector_widen_pad")
    _equal("vector_widen_pad", "packet", padded(packet, RNGD.ve_lanes), packet2)


def _packet_size(packet: Mapping, size: int, method: str) -> None:
    if packet.size != size:
        raise VerifyError(
            "vector-packet",
            f"{method}: the packet must hold {size} elements, {_show(packet)} holds {packet.size}",
        )


def _equal(method: str, what: str, expected: Mapping, got: Mapping) -> None:
    if expected != got:
        raise VerifyError(
            f"vector-{what}-mismatch",
            f"{method}: {what} mismatch. Expected: {_show(expected)}, got: {_show(got)}",
        )
