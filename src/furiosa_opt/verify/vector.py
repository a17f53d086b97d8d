"""Rules of the Vector Engine: entry types, stage order and way, one use per ALU, the stash's write-once
read-once states, narrow/widen and intra-slice reduce shapes (upstream `verify/engine/vector`), and the
inter-slice reducer's shape rules, which upstream's book documents but no upstream code checks."""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping, MappingError, m
from furiosa_opt.mapping.algebra import divide_exact, divide_relaxed, is_padding, padded, pair, split_at, tile_view
from furiosa_opt.mapping.expr import Sym, shown_pair
from furiosa_opt.mapping.factors import PadKind, symbols
from furiosa_opt.mapping.refine import describe_subdigit, refine
from furiosa_opt.stages import VECTOR_CHAIN, register
from furiosa_opt.verify.contraction import inner_time

HALF = RNGD.ve_lanes // 2
STASHABLE = ("tag", "logic", "fxp", "narrow", "fp", "fp_div", "clip")  # where `vector_stash` may write
TO_INTER_SLICE = (
    "init",
    "logic",
    "fxp",
    "fxp_to_fp",
    "widen",
    "fp_to_fxp",
    "clip",
)  # may enter the inter-slice reducer
INTER = "inter_reduce"  # the stage after the inter-slice reducer (its slot in stages.VECTOR_CHAIN)
ZIPPED = "zipped"  # the stash state of a stream zipped from pair mode: no stash to write or read


def _show(mapping: Mapping) -> str:
    return f"`{mapping}`"


@register("rule", "vector_init", "vector_reinterpret")
def check_entry(dtype: DType) -> None:
    if dtype not in (dtypes.i32, dtypes.f32):
        raise VerifyError("vector-dtype", f"vector_init: the Vector Engine computes on i32 or f32, not {dtype}")


def check_stage(current: str, way: int, method: str, stage: str, inter_first: bool = False) -> None:
    """`stage` may follow `current` if it lies later in the chain (or repeats), at the right way. The
    chain starts with the tag unit; after the inter-slice reducer it may start again only when the
    reducer came first (InterFirst)."""
    if current == INTER:
        if stage != "tag" or not inter_first:
            raise VerifyError(
                "vector-stage-order",
                f"`{method}` cannot follow the inter-slice reducer"
                + ("" if inter_first else " when the intra-slice chain came first (IntraFirst)"),
                notes=("after an IntraFirst inter-slice reduce only vector_final may follow; after an InterFirst "
                       "one, vector_intra_slice_tag starts the intra-slice chain",),
            )  # fmt: skip
        return
    slot, now = VECTOR_CHAIN[stage], VECTOR_CHAIN[current].rank
    rank, need = slot.rank, slot.way
    if (current == "init" and stage != "tag") or now > rank or (now == rank and not slot.repeats):
        later = (
            ["tag"]
            if current == "init"
            else [s for s, x in VECTOR_CHAIN.items() if x.rank > now or (x.rank == now and x.repeats)]
        )
        raise VerifyError(
            "vector-stage-order",
            f"`{method}` cannot follow the {current} stage of the Vector Engine",
            notes=(
                f"after {current} come: {', '.join(later) or 'only vector_final'}",
                f"the intra-slice chain runs {' → '.join(list(VECTOR_CHAIN)[1:-1])}",
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


@register("rule", "vector_intra_slice_tag")
def check_tag_packet(packet: Mapping) -> None:
    if packet.size != RNGD.ve_lanes:
        raise VerifyError(
            "vector-packet",
            f"VectorTensor requires Packet of {RNGD.ve_lanes} elements (one flit) "
            f"in Way8 mode, got {_show(packet)} ({packet.size} elements)",
        )


@register("rule", "vector_narrow_split")
def check_narrow_split(time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, RNGD.ve_lanes, "vector_narrow_split")
    outer, inner = split_at(packet, HALF)
    _equal("vector_narrow_split", "time", pair(time, outer), time2)
    _equal("vector_narrow_split", "packet", inner, packet2)


@register("rule", "vector_narrow_trim")
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


@register("rule", "vector_widen_concat")
def check_widen_concat(time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> None:
    _packet_size(packet, HALF, "vector_widen_concat")
    if time.size % 2:
        raise VerifyError("vector-widen-concat", f"vector_widen_concat: Time {_show(time)} has an odd size")
    outer, inner = split_at(time, 2)
    _equal("vector_widen_concat", "time", outer, time2)
    _equal("vector_widen_concat", "packet", pair(inner, packet), packet2)


@register("rule", "vector_widen_pad")
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
        shown, given = shown_pair(expected, got)
        raise VerifyError(f"vector-{what}-mismatch", f"{method}: {what} mismatch. Expected: {shown}, got: {given}")


# ---- the stash: write once, read once ----


@register("rule", "vector_stash")
def check_stash_write(stage: str, state: object, empty: object) -> None:
    """`vector_stash` writes the operand register: at a stashable stage, once, not after pair mode."""
    if state == ZIPPED:
        raise VerifyError("vector-stash-context", "vector_stash: a stream zipped from pair mode has no stash")
    if stage not in STASHABLE:
        raise VerifyError(
            "vector-stash-stage",
            f"vector_stash cannot write at the {stage} stage",
            notes=(f"the stash is written at {', '.join(STASHABLE)}",),
        )
    if state is not empty:
        raise VerifyError(
            "vector-stash-twice",
            "vector_stash: the stash is written once per Vector Engine pass, and it already was",
            notes=("read it with the `Stash` operand; a stash that was read cannot be written again",),
        )


def check_stash_read(state: object, dtype: DType, way: int, method: str) -> None:
    """A `Stash` operand reads what `vector_stash` wrote, once, at the scalar and way it was written in."""
    if state == ZIPPED:
        raise VerifyError("vector-stash-context", f"`{method}`: a stream zipped from pair mode has no stash")
    if state is None:
        raise VerifyError("vector-stash-empty", f"`{method}` reads the stash, but no vector_stash wrote it")
    if isinstance(state, str):
        raise VerifyError("vector-stash-read-twice", f"`{method}` reads the stash a second time; a stash is read once")
    if (state.dtype, state.way) != (dtype, way):
        raise VerifyError(
            "vector-stash-type",
            f"`{method}`: the stash holds a Way{state.way} {state.dtype} stream, this one is Way{way} {dtype}",
        )


# ---- reducers ----


@register("rule", "vector_intra_slice_reduce")
def check_intra_slice_reduce(
    time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping, label: str
) -> None:
    """`[out_time, out_packet]` divides `[time, packet]` exactly, every reduced axis is `label` and none
    survives, and the packet is kept or collapses to lane 0 (`[1 # 4]`) (upstream `config_reduce_label`);
    the retained cells inside the outermost reduced axis fit the accumulator's 8 slots (the book's rule,
    which upstream's code does not check)."""
    whole, kept = pair(time, packet), pair(out_time, out_packet)
    try:
        terms = divide_exact(whole, kept)
    except MappingError as error:
        raise VerifyError(
            "vector-reduce-indivisible",
            f"[Intra-slice reduce] divide failed: output shape must divide input shape: {error}",
        ) from None
    quotient = divide_relaxed(whole, kept).dividend_residue
    if not symbols(quotient.factors) <= {label}:
        raise VerifyError(
            "vector-reduce-label",
            f"IntraSliceReduce: all reduced axes must match the specified reduce_label {label}, got quotient "
            f"`{quotient}`",
        )
    if any(label in t.idents for t in terms):
        raise VerifyError(
            "vector-reduce-not-fully-reduced",
            f"IntraSliceReduce: all the reduce axes must be fully reduced, but reduce_label {label} is still "
            "present in a retained axis",
        )
    if out_packet != packet and out_packet != m["1 # 4"]:
        raise VerifyError(
            "vector-reduce-packet",
            f"IntraSliceReduce: Packet should be either preserved or reduced to 4 (for partial reduction), got "
            f"Packet `{packet}` -> OutPacket `{out_packet}`",
        )
    slots = inner_time(time, out_time)
    if slots > RNGD.ve_reduce_slots:
        raise VerifyError(
            "vector-reduce-slots",
            f"IntraSliceReduce: {slots} accumulator slots required (the OutTime cells inside the outermost "
            f"reduced axis), but only {RNGD.ve_reduce_slots} are available",
            notes=("move the reduced axis inward in Time, or reduce fewer retained cells per pass",),
        )


def check_inter_slice_entry(stage: str, way: int) -> None:
    if stage not in TO_INTER_SLICE:
        raise VerifyError(
            "vector-stage-order",
            f"vector_inter_slice_reduce cannot follow the {stage} stage of the Vector Engine",
            notes=(f"the inter-slice reducer is entered from {', '.join(TO_INTER_SLICE)}",),
        )
    if way != RNGD.ve_lanes:
        raise VerifyError(
            "vector-way", f"vector_inter_slice_reduce needs a Way8 stream, this one is Way{way}",
            notes=("widen it first (vector_widen_concat / vector_widen_pad)",),
        )  # fmt: skip


@register("rule", "vector_inter_slice_reduce")
def check_inter_slice_reduce(in_slice: Mapping, time: Mapping, out_slice: Mapping, out_time: Mapping) -> int:
    """The book's four rules (no upstream code checks them): the reduced Slice axes are its innermost
    ones; each slot they free in OutSlice holds a dummy, a fresh axis or an axis promoted from Time, in
    any order; the Time axes that stay keep their order. The reduction ratio: slices folded into one."""
    if in_slice.size != out_slice.size:
        raise VerifyError(
            "vector-inter-slice-size",
            f"vector_inter_slice_reduce keeps the slice count: Slice `{in_slice}` has {in_slice.size}, OutSlice "
            f"`{out_slice}` {out_slice.size}",
        )
    ins, times, outs, out_times = refine(in_slice.factors, time.factors, out_slice.factors, out_time.factors)
    key = lambda d: (d.key, d.cut)  # noqa: E731
    kept, time_keys = {key(d) for d in outs}, {key(d) for d in times}
    if moved := [d for d in out_times if key(d) in {key(s) for s in ins}]:
        raise VerifyError(
            "vector-inter-slice-time",
            f"vector_inter_slice_reduce moves no Slice axis into Time: `{_name(moved[0])}` of Slice `{in_slice}` is in "
            f"OutTime `{out_time}`",
        )
    reduced = [d for d in ins if key(d) not in kept]
    ratio = min((d.pos for d in ins if key(d) in kept), default=in_slice.size)  # the freed slots
    if any(d.pos >= ratio for d in reduced):
        raise VerifyError(
            "vector-inter-slice-innermost",
            f"vector_inter_slice_reduce reduces the innermost Slice axes: `{in_slice}` keeps "
            f"{', '.join(f'`{_name(d)}`' for d in ins if key(d) in kept)} but reduces "
            f"{', '.join(f'`{_name(d)}`' for d in reduced)}",
        )
    outer = split_at(in_slice, ratio)[0]
    if split_at(out_slice, ratio)[0] != outer:
        raise VerifyError(
            "vector-inter-slice-kept",
            f"vector_inter_slice_reduce keeps the other Slice axes in place: expected OutSlice `[{outer}, …]` "
            f"(with {ratio} slots for dummies, fresh axes or Time axes), got `{out_slice}`",
        )
    promoted = {key(d) for d in outs if key(d) in time_keys}
    staying = [(key(d), d.count) for d in times if key(d) not in promoted]
    if [(key(d), d.count) for d in out_times] != staying or not kept.isdisjoint({key(d) for d in out_times}):
        shown = ", ".join(f"`{_name(d)}`" for d in outs if key(d) in promoted) or "none"
        raise VerifyError(
            "vector-inter-slice-time",
            f"vector_inter_slice_reduce keeps the Time axes it does not promote, in order: Time `{time}`, OutTime "
            f"`{out_time}`, promoted into OutSlice: {shown}",
        )
    return ratio


def _name(d) -> str:
    return describe_subdigit(d.key, d.cut, d.count)


@register("rule", "vector_intra_slice_unzip")
def check_unzip(time: Mapping, packet: Mapping, axis, tile_time: Mapping, split_time: Mapping) -> None:
    """Pair mode splits Time at its size-2 axis `axis`: each group's tile of Time is `tile_time` (the
    axis a `1 # 2` hole), read as `split_time` (Time without the axis); packets are one Way8 flit."""
    check_tag_packet(packet)
    name = getattr(axis, "name", None)
    if getattr(axis, "size", None) != 2 or name not in time.axis_names:
        raise VerifyError(
            "vector-unzip-axis", f"vector_intra_slice_unzip splits Time `{time}` at a size-2 axis of it, got {axis!r}"
        )
    selector = Mapping.from_node(Sym(axis))
    expected_tile = tile_view(time, selector, 1, PadKind.TOP)
    if expected_tile != tile_time:
        raise VerifyError(
            "vector-unzip-tile",
            f"vector_intra_slice_unzip: a group's tile of Time is `{expected_tile}`, got TileTime `{tile_time}`",
        )
    key = lambda d: (d.key, d.cut, d.count)  # noqa: E731
    kept = [key(d) for d in refine(time.factors, selector.factors)[0] if d.key != name]
    if split_time.size * 2 != time.size or [key(d) for d in refine(split_time.factors)[0]] != kept:
        raise VerifyError(
            "vector-unzip-split",
            f"vector_intra_slice_unzip: a group's time is Time `{time}` without `{name}`, got SplitTime `{split_time}`",
        )
