"""Rules of the Contraction Engine: operand types, stream adapter, packet and time reducers, lane folder
(upstream `verify/engine/contraction/*`)."""

from __future__ import annotations

import itertools

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import (
    divide_exact,
    padded,
    padding_per_stride,
    pair,
    remove_padding,
    split_at,
)
from furiosa_opt.mapping.expr import shown_pair
from furiosa_opt.stages import register

# stream dtype → (TRF dtypes it pairs with, accumulator)
OPERANDS = {
    "i4": ({"i4", "i5"}, dtypes.i32),
    "i5": ({"i4", "i5"}, dtypes.i32),
    "i8": ({"i8", "i9"}, dtypes.i32),
    "i9": ({"i8", "i9"}, dtypes.i32),
    "f8e4m3": ({"f8e4m3"}, dtypes.f32),
    "f8e5m2": ({"f8e5m2"}, dtypes.f32),
    "bf16": ({"bf16"}, dtypes.f32),
}


def _show(mapping: Mapping) -> str:
    return f"`{mapping}`"


def accumulator(stream: DType, weight: DType) -> DType:
    """The accumulator of a stream × TRF pair, refusing pairs the Contraction Engine lacks."""
    if stream.name not in OPERANDS or weight.name not in OPERANDS[stream.name][0]:
        pairs = "; ".join(f"{s} × {'/'.join(sorted(w))}" for s, (w, _) in OPERANDS.items())
        raise VerifyError(
            "contraction-operands",
            f"contract_outer: no contraction of a {stream} stream with a {weight} TRF tensor (pairs: {pairs})",
        )
    return OPERANDS[stream.name][1]


@register("rule", "contract_outer")
def check_stream_adapter(
    dtype: DType, lane: Mapping, time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping
) -> None:
    if lane.size not in RNGD.lane_sizes:
        raise VerifyError("contract-lane-size", f"contract_outer: Lane::SIZE must be 1, 2, 4, or 8, got {lane.size}")
    size = dtype.nbytes(out_packet.size)
    if size % RNGD.flit_bytes or size // RNGD.flit_bytes not in RNGD.contract_packet_flits:
        raise VerifyError(
            "contract-outer-flits",
            f"contract_outer: Packet size must be one or two flits ({RNGD.flit_bytes} bytes each), got {size} bytes",
        )
    pack = size // RNGD.flit_bytes
    if time.size % pack:
        raise VerifyError(
            "contract-outer-packed",
            f"`contract_outer`: OutPacket packs {pack} cells of Time, which has {time.size}",
        )
    time_outer, time_packed = split_at(time, pack)
    packed, flit = split_at(out_packet, RNGD.flit_bytes * 8 // dtype.bits)
    if flit != packet:
        raise VerifyError(
            "contract-outer-flit",
            f"`contract_outer`: inner flit of OutPacket must equal the input Packet: {_show(flit)} != {_show(packet)}",
        )
    if packed != time_packed:
        raise VerifyError(
            "contract-outer-packed",
            f"`contract_outer`: OutPacket's packed cells must equal the innermost {pack} cells of Time: "
            f"{_show(packed)} != {_show(time_packed)}",
        )
    if out_time.size % time_outer.size:
        raise VerifyError(
            "contract-outer-time",
            f"`contract_outer`: Time {_show(time_outer)} does not divide OutTime {_show(out_time)}",
        )
    out_outer, _tiling = split_at(out_time, out_time.size // time_outer.size)
    if out_outer != time_outer:
        raise VerifyError(
            "contract-outer-time",
            f"`contract_outer`: OutTime must be the outer Time with broadcast (tiling) axes innermost: "
            f"{_show(out_outer)} != {_show(time_outer)}",
        )


@register("rule", "contract_packet")
def check_contract_packet(dtype: DType, packet: Mapping, out_packet: Mapping) -> None:
    """The packet reducer's tree removes the innermost 2^d cells."""
    size = dtype.nbytes(packet.size)
    if size not in (32, 64):
        raise VerifyError("contract-packet-size", f"contract_packet: Packet must be 32 or 64 bytes, got {size} bytes")
    if out_packet.size > RNGD.temporal_accumulator_cols:
        raise VerifyError(
            "contract-packet-wide",
            f"contract_packet: OutPacket::SIZE must be at most {RNGD.temporal_accumulator_cols}, got {out_packet.size}",
        )
    if out_packet.size & (out_packet.size - 1):
        raise VerifyError(
            "contract-packet-pow2",
            f"contract_packet: OutPacket::SIZE must be a power of two, got {out_packet.size}",
        )
    wanted = remove_padding(out_packet)
    for depth in range(packet.size.bit_length()):
        if packet.size % (1 << depth) == 0 and remove_padding(split_at(packet, 1 << depth)[0]) == wanted:
            return
    raise VerifyError(
        "contract-packet-mismatch",
        f"contract_packet: OutPacket {_show(wanted)} is not a valid contraction of Packet {_show(packet)}",
    )


def _boundaries(time: Mapping, terms) -> list:
    extents = padding_per_stride(time)
    return sorted(
        ((t, extents[t.dividend_stride]) for t in terms if t.dividend_stride in extents),
        key=lambda pair_: pair_[0].divisor_stride,
    )


@register("rule", "contract_time")
def check_contract_time(time: Mapping, out_time: Mapping) -> None:
    """The time reducer keeps some time axes, in order, with their padding lined up edge to edge."""
    try:
        terms = divide_exact(time, out_time)
    except MappingError as error:
        raise VerifyError(
            "contract-time-indivisible",
            f"contract_time: OutTime {_show(out_time)} must divide Time {_show(time)} (some axis is missing): {error}",
        ) from None
    if any(a.divisor_stride <= b.divisor_stride for a, b in itertools.pairwise(terms)):
        raise VerifyError(
            "contract-time-order",
            "contract_time: OutTime axes must follow the same order as the "
            f"Time axes ({_show(out_time)} against {_show(time)})",
        )
    boundaries = _boundaries(time, terms)
    if boundaries and boundaries[0][0].divisor_stride != 1:
        raise VerifyError(
            "contract-time-padding",
            f"contract_time: Padding mismatch. OutTime {_show(out_time)} has "
            f"unexpected leading padding not present in Time {_show(time)}",
        )
    for i, (term, extent) in enumerate(boundaries):
        end = boundaries[i + 1][0].divisor_stride if i + 1 < len(boundaries) else out_time.size
        if term.divisor_stride * extent != end:
            raise VerifyError(
                "contract-time-padding",
                f"contract_time: Padding mismatch. Non-reduced axes in OutTime {_show(out_time)} do not "
                f"preserve padding from Time {_show(time)}",
            )


def lane_outputs(mode: str, lane: Mapping, time: Mapping, packet: Mapping) -> tuple[Mapping, Mapping]:
    """(OutTime, OutPacket) the lane folder produces in `mode` ("Interleaved" or "Sequential")."""
    lanes = RNGD.ve_lanes
    if mode == "Interleaved":
        return pair(time, packet), padded(lane, lanes)
    aligned = padded(packet, -(-packet.size // lanes) * lanes)
    outer, inner = split_at(aligned, lanes)
    return pair(time, lane, outer), inner


@register("rule", "contract_lane")
def check_contract_lane(
    mode: str,
    lane: Mapping,
    time: Mapping,
    packet: Mapping,
    out_time: Mapping,
    out_packet: Mapping,
    pre_reduce_time: Mapping,
) -> None:
    lanes = RNGD.ve_lanes
    if packet.size > RNGD.temporal_accumulator_cols:
        raise VerifyError(
            "contract-lane-packet",
            f"contract_lane: Packet::SIZE must be at most {RNGD.temporal_accumulator_cols}, got {packet.size}",
        )
    if out_packet.size != lanes:
        raise VerifyError(
            "contract-lane-out-packet",
            f"contract_lane: OutPacket::SIZE must be {lanes}, got {out_packet.size}",
        )
    expected_time, expected_packet = lane_outputs(mode, lane, time, packet)
    if out_packet != expected_packet:
        shown, got = shown_pair(expected_packet, out_packet)
        raise VerifyError(
            "contract-lane-packet-mismatch",
            f"contract_lane ({mode}): OutPacket mismatch. Expected: {shown}, got: {got}",
        )
    if out_time != expected_time:
        shown, got = shown_pair(expected_time, out_time)
        raise VerifyError(
            "contract-lane-time-mismatch", f"contract_lane ({mode}): OutTime mismatch. Expected {shown}, got {got}"
        )
    inner = inner_time(pre_reduce_time, time)
    padded_lane, padded_packet = (
        (-(-lane.size // lanes) * lanes, packet.size)
        if mode == "Interleaved"
        else (lane.size, -(-packet.size // RNGD.temporal_accumulator_cols) * RNGD.temporal_accumulator_cols)
    )
    if padded_lane * inner * padded_packet > RNGD.accumulator_cells:
        raise VerifyError(
            "contract-lane-accumulator",
            f"contract_lane ({mode}): the [Lane, Packet] accumulator buffer overflows: padded Lane {padded_lane} * "
            f"InnerTime {inner} * padded Packet {padded_packet} = {padded_lane * inner * padded_packet} exceeds the "
            f"{RNGD.accumulator_cells}-cell accumulator",
        )


def inner_time(pre_reduce_time: Mapping, time: Mapping) -> int:
    """The retained time cells inner to the outermost reduced axis (what a temporal accumulator holds: the
    contraction's, and the Vector Engine's intra-slice reducer's)."""
    boundaries = sorted(
        _boundaries(pre_reduce_time, divide_exact(pre_reduce_time, time)),
        key=lambda pair_: -pair_[0].dividend_stride,
    )
    if not boundaries:
        return 1
    end = [term.dividend_stride * extent for term, extent in boundaries]
    if end[0] < pre_reduce_time.size:
        return time.size
    for (outer, _), inner_end in zip(boundaries, end[1:], strict=False):
        if inner_end != outer.dividend_stride:
            return outer.divisor_stride
    return 1
