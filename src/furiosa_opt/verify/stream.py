"""Rules of the Tensor Unit stream stages outside the contraction and vector engines: fetch, fetch
adapter, collect, register-file stores, cast and the commit path (upstream `verify/engine/*`)."""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import is_resize_of, padded, pair, split_at
from furiosa_opt.mapping.expr import shown_pair
from furiosa_opt.mapping.sequencer import Mode, SequencerError, sequence
from furiosa_opt.stages import register

# (input, output) pairs each converting stage accepts (spec/mapping.md §6 "legal conversions per stage").
FETCH_CASTS = {
    ("i4", "i32"),
    ("i8", "i32"),
    ("i16", "i32"),
    ("f8e4m3", "f32"),
    ("f8e5m2", "f32"),
    ("bf16", "f32"),
    ("f32", "bf16"),
}
TABLE_LOOKUPS = {("f4e2m1", "f8e4m3"), ("f4e2m1", "f8e5m2"), ("f8e4m3", "bf16"), ("f8e5m2", "bf16")}
ZERO_POINT_SUBS = {("i4", "i5"), ("i8", "i9")}
ENGINE_CASTS = {
    ("i32", "i4"),
    ("i32", "i8"),
    ("i32", "i16"),
    ("f32", "f8e4m3"),
    ("f32", "f8e5m2"),
    ("f32", "bf16"),
}


def _show(mapping: Mapping) -> str:
    return f"`{mapping}`"


def check_flit_aligned(dtype: DType, packet: Mapping, what: str) -> None:
    """Fetch and Switch packets are read 8 bytes at a time."""
    size = dtype.nbytes(packet.size)
    if size % RNGD.packet_align_bytes:
        raise VerifyError(
            "packet-alignment",
            f"{what}: Packet size must be {RNGD.packet_align_bytes}-byte aligned: {_show(packet)} is "
            f"{packet.size} × {dtype} = {size} bytes",
        )


def _entries(used: int, what: str) -> None:
    if used > RNGD.max_sequencer_entries:
        raise VerifyError(
            f"{what.lower()}-entries",
            f"{what}: needs {used} sequencer entries, but the table holds {RNGD.max_sequencer_entries}",
            notes=("merge adjacent axes so that their strides coalesce, or move work to the time axes",),
        )


@register("rule", "fetch")
def check_fetch(time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping) -> None:
    """The fetch sequencer must read every live DM cell, place every output axis, and fit its table."""
    try:
        configs = sequence([time, packet], [out_time, out_packet], Mode.READ)
    except SequencerError as error:
        if error.kind == "Unconsumed":
            raise VerifyError(
                "fetch-unread",
                f"Fetch: a live input axis is left unread (Time {_show(time)}, Packet {_show(packet)} → "
                f"Time {_show(out_time)}, Packet {_show(out_packet)}): {error}",
            ) from None
        raise VerifyError("fetch-unreadable", f"Fetch: cannot read an output axis from DM: {error}") from None
    except MappingError as error:
        raise VerifyError("fetch-unreadable", f"Fetch: cannot read an output axis from DM: {error}") from None
    _entries(sum(map(len, configs)), "Fetch")


@register("rule", "fetch_cast")
def check_fetch_cast(source: DType, target: DType) -> None:
    if (source.name, target.name) not in FETCH_CASTS and source != target:
        legal = ", ".join(f"{a}→{b}" for a, b in sorted(FETCH_CASTS))
        raise VerifyError(
            "fetch-cast",
            f"fetch_cast: {source} → {target} is not a fetch adapter conversion (legal: identity, {legal})",
        )


@register("rule", "fetch_table_lookup")
def check_table_lookup(context: str, source: DType, target: DType) -> None:
    """The fetch adapter's lookup table decodes narrow floats; only the main context has one."""
    if context != "main":
        raise VerifyError(
            "fetch-table-context", f"fetch_table_lookup runs on the main context only, not on `{context}`"
        )
    if (source.name, target.name) not in TABLE_LOOKUPS:
        legal = ", ".join(f"{a}→{b}" for a, b in sorted(TABLE_LOOKUPS))
        raise VerifyError("fetch-table-types", f"fetch_table_lookup: {source} → {target} is not a table ({legal})")


@register("rule", "fetch_zero_point_sub")
def check_zero_point_sub(source: DType, target: DType, zero_point: int) -> None:
    """`v - zero_point` into the one-bit-wider staging type; the zero point is a value of the source type."""
    if (source.name, target.name) not in ZERO_POINT_SUBS:
        legal = ", ".join(f"{a}→{b}" for a, b in sorted(ZERO_POINT_SUBS))
        raise VerifyError("fetch-zero-point-types", f"fetch_zero_point_sub: {source} → {target} is not one of {legal}")
    lo, hi = source.int_range
    if isinstance(zero_point, bool) or not isinstance(zero_point, int) or not lo <= zero_point <= hi:
        raise VerifyError(
            "fetch-zero-point-range",
            f"fetch_zero_point_sub: zero_point {zero_point!r} is outside the source type's quantized range "
            f"[{lo}, {hi}]",
        )


@register("rule", "collect")
def check_collect(dtype: DType, time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> None:
    """Pad the packet to whole flits, split at one flit: the inner flit is the packet, the flit count
    goes innermost in time."""
    flit = RNGD.flit_bytes * 8 // dtype.bits
    if dtype.nbytes(packet2.size) != RNGD.flit_bytes:
        raise VerifyError(
            "collect-flit",
            f"Collect output packet must be exactly {RNGD.flit_bytes} bytes (one flit): {_show(packet2)} is "
            f"{packet2.size} × {dtype} = {dtype.nbytes(packet2.size)} bytes",
        )
    aligned = -(-packet.size // flit) * flit
    outer, inner = split_at(padded(packet, aligned), flit)
    if inner != packet2:
        shown, got = shown_pair(inner, packet2)
        raise VerifyError("collect-packet-mismatch", f"Collect packet mismatch. Expected: {shown}, got: {got}")
    expected_time = pair(time, outer)
    if expected_time != time2:
        shown, got = shown_pair(expected_time, time2)
        raise VerifyError("collect-time-mismatch", f"Collect time mismatch. Expected: {shown}, got: {got}")


@register("rule", "to_trf")
def check_to_trf(dtype: DType, time: Mapping, packet: Mapping, lane: Mapping, element: Mapping) -> None:
    """The lane axes are the outermost time axes; the rest of time and the packet make the element."""
    if lane.size not in RNGD.lane_sizes:
        raise VerifyError("trf-lane-size", f"to_trf: Lane::SIZE must be 1, 2, 4, or 8, got {lane.size}")
    total = dtype.nbytes(lane.size * element.size)
    if total > RNGD.trf_capacity_bytes:
        raise VerifyError(
            "trf-capacity",
            f"TRF data ({total} bytes = {lane.size} lanes x {dtype.nbytes(element.size)} bytes) exceeds "
            f"register file capacity ({RNGD.trf_capacity_bytes} bytes)",
        )
    if time.size % lane.size:
        raise VerifyError("trf-lane-time", f"to_trf: Lane::SIZE ({lane.size}) does not divide Time::SIZE ({time.size})")
    time_outer, time_inner = split_at(time, time.size // lane.size)
    if time_outer != lane:
        raise VerifyError(
            "trf-lane-mismatch",
            f"`to_trf` lane mismatch: time_outer != Lane: {_show(time_outer)} != {_show(lane)}",
            notes=("the Lane axes must be the outermost Time axes",),
        )
    expected = pair(time_inner, packet)
    if expected != element:
        raise VerifyError(
            "trf-element-mismatch",
            f"`to_trf` element mismatch: [time_inner, Packet] != Element: {_show(expected)} != {_show(element)}",
        )


@register("rule", "cast")
def check_cast(source: DType, target: DType, packet: Mapping, out_packet: Mapping) -> None:
    """The Cast Engine narrows one flit into one flit: `OutPacket == Packet # (32 B / out element)`."""
    if (source.name, target.name) not in ENGINE_CASTS:
        legal = ", ".join(f"{a}→{b}" for a, b in sorted(ENGINE_CASTS))
        raise VerifyError("cast-types", f"cast: {source} → {target} is not a Cast Engine conversion ({legal})")
    if source.nbytes(packet.size) != RNGD.flit_bytes:
        raise VerifyError(
            "cast-input-flit",
            f"Cast input packet must be exactly {RNGD.flit_bytes} bytes (one flit): {packet.size} elements = "
            f"{source.nbytes(packet.size)} bytes",
        )
    if target.nbytes(out_packet.size) != RNGD.flit_bytes:
        raise VerifyError(
            "cast-output-flit",
            f"Cast output packet must be exactly {RNGD.flit_bytes} bytes "
            f"(one flit): {_show(out_packet)} holds {out_packet.size} × {target}",
        )
    expected = padded(packet, RNGD.flit_bytes * 8 // target.bits)
    if expected != out_packet:
        shown, got = shown_pair(expected, out_packet)
        raise VerifyError("cast-packet-mismatch", f"Cast packet mismatch. Expected: {shown}, got: {got}")


@register("rule", "commit_trim")
def check_commit_trim(dtype: DType, packet: Mapping, out_packet: Mapping) -> None:
    size = dtype.nbytes(out_packet.size)
    if size not in RNGD.commit_packet_bytes:
        raise VerifyError(
            "commit-trim-width",
            f"commit_trim output packet must be one of {list(RNGD.commit_packet_bytes)} bytes, got {size}",
        )
    if not is_resize_of(out_packet, packet):
        raise VerifyError(
            "commit-trim-mismatch",
            f"commit_trim packet mismatch. Expected {_show(packet)} or a trimming of it, got {_show(out_packet)}",
        )


@register("rule", "commit_cast", "commit_cast_relu")
def check_commit_cast(packet: Mapping, source: DType, target: DType) -> None:
    if (source, target) != (dtypes.f32, dtypes.bf16):
        raise VerifyError("commit-cast-types", f"commit_cast converts f32 → bf16 only, not {source} → {target}")
    unit = RNGD.commit_base_bytes * (source.bits // target.bits)
    size = source.nbytes(packet.size)
    if size % unit:
        legal = [n for n in RNGD.commit_packet_bytes if n % unit == 0]
        raise VerifyError(
            "commit-cast-width",
            f"commit_cast input packet is {size} B, not a multiple of {unit} B; re-trim it to one of {legal} B",
        )


@register("rule", "commit", "commit_view")
def check_commit(dtype: DType, time: Mapping, packet: Mapping, element: Mapping) -> None:
    """Every stream cell lands on a distinct DM cell, every DM cell of the element is written, and the
    commit sequencer fits its table."""
    size = dtype.nbytes(packet.size)
    if size not in RNGD.commit_packet_bytes:
        raise VerifyError(
            "commit-packet",
            f"Commit: input packet must be one of {list(RNGD.commit_packet_bytes)} bytes, got {size}",
        )
    try:
        configs = sequence([element], [time, packet], Mode.WRITE)
    except SequencerError as error:
        if error.kind == "Unconsumed":
            raise VerifyError("commit-unwritten", f"Commit: a DM cell is left unwritten: {error}") from None
        raise VerifyError("commit-unwritable", f"Commit: cannot write an input axis into DM: {error}") from None
    except MappingError as error:
        raise VerifyError("commit-unwritable", f"Commit: cannot write an input axis into DM: {error}") from None
    _entries(sum(map(len, configs)), "Commit")


@register("rule", "begin_interleaved")
def check_interleaved(lhs: DType, rhs: DType, left: tuple, right: tuple, axis) -> None:
    """`begin_interleaved` pairs two DM tensors of one dtype and layout under a fresh size-2 axis."""
    if lhs != rhs or tuple(left) != tuple(right):
        raise VerifyError(
            "begin-interleaved-mismatch",
            f"begin_interleaved pairs two tensors of one shape: {lhs} `{', '.join(map(str, left))}` and {rhs} "
            f"`{', '.join(map(str, right))}` differ",
        )
    if getattr(axis, "size", None) != 2:
        raise VerifyError(
            "begin-interleaved-axis", f"begin_interleaved's axis selects one of two tensors: size 2, got {axis!r}"
        )
    if any(axis.name in level.axis_names for level in left):
        raise VerifyError(
            "begin-interleaved-axis", f"begin_interleaved's axis `{axis.name}` must be new to the tensors"
        )
