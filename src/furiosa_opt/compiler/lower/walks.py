"""Layouts as the numbers an engine reads: the one place where a stream's mappings become live boxes and
walks (`sim/walk.py` says what they mean and applies them).

For each stage stage 2 knows the stream before and after it (the replayed objects); `ChainLayouts.fields`
gives what the stage's config holds for them, as the stage's `layout` in the stage table says: the new
layout's `steps`, `lanes` and `live` box, the walk that moves the stream into it, a register-file store's
walk into the file's layout, a fold's walks of its terms, and the walks of a Vector Engine port (the VRF
tensor, the stash) into the stream.
"""

from __future__ import annotations

import math
from functools import lru_cache

from furiosa_opt.dtypes import DTYPE_CODES
from furiosa_opt.fold import reduced_digits
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.factors import Factors, has_composite, size
from furiosa_opt.mapping.relayout import relayout_index
from furiosa_opt.mapping.sequencer import Mode, sequence
from furiosa_opt.stages import STAGES
from furiosa_opt.vector.ops import Branched, Stash
from furiosa_opt.verify.contraction import accumulator


def box(layout: Mapping) -> list[int]:
    """`[extent, live, …]` per digit of a stream layout, outermost first. A composite digit (`[A, B, C] # 32`,
    whose size does not split over its axes) is one digit too: its live positions are its first `m`, the
    axes' cells in order, so a prefix describes them."""
    return [n for f in layout.factors for n in (f.e, max(f.m, 0))]


def walk(source: Mapping, target: Mapping) -> dict[str, list[int]]:
    """`walk` and `table` moving a buffer laid out as `source` into `target` by logical index (the move was
    checked by the rule that accepted the stage)."""
    loops, table = _walk(source.factors, target.factors)
    return {"walk": list(loops), "table": list(table)}


@lru_cache(maxsize=4096)
def _walk(source: Factors, target: Factors) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if not has_composite(source) and not has_composite(target):
        try:
            (entries,) = sequence([Mapping(source)], [Mapping(target)], Mode.CARVE)
        except MappingError:
            entries = None
        if (
            entries is not None
            and math.prod(e.size for e in entries) == size(target)
            and all(e.stride >= 0 for e in entries)
        ):
            return tuple(n for e in entries for n in (e.size, e.stride)), ()
    return (), tuple(int(i) for i in relayout_index(source, target, True, True))


def stream_layout(obj: object, group: Mapping | None) -> Mapping:
    """The in-slice layout `[Time, Packet]` of a replayed stream as the engines carry it: in pair mode
    (`group`, the unzip's selector) both groups in one stream, the group outermost in time."""
    if hasattr(obj, "g0"):
        stream = obj.g0.stream
        return pair(group, stream.time, stream.packet)
    stream = getattr(obj, "stream", obj)
    return pair(stream.time, stream.packet)


def shape(obj: object, group: Mapping | None) -> dict:
    """A replayed stream's `steps` (Time positions, the group axis leading in pair mode), `lanes` (Packet
    positions) and `live`, the box of its whole layout: liveness is read from the layout's own digits,
    which may span Time and Packet (an axis split between them and padded as a whole)."""
    stream = obj.g0.stream if hasattr(obj, "g0") else getattr(obj, "stream", obj)
    time = pair(group, stream.time) if hasattr(obj, "g0") else stream.time
    return {"steps": time.size, "lanes": stream.packet.size, "live": box(stream_layout(obj, group))}


class ChainLayouts:
    """One pipeline's stages in order: the layout fields of each stage's config, from the replayed stream
    before and after it. It remembers what later stages need: pair mode's group axis (from the unzip to
    the zip) and the layout the stash was written in."""

    def __init__(self) -> None:
        self.group: Mapping | None = None
        self.stash: Mapping | None = None
        self.fold: dict = {}  # the contraction in flight: its operands' layouts and the mappings its stages name

    def fields(self, op, objects: dict, rf: object | None) -> dict:
        """The config fields for `op` (a Tensor Unit stage of this pipeline)."""
        stage, before = op.opcode, objects.get(op.operands[0])
        after = objects.get(op.results[0].name) if op.results else None
        if stage == "vector_intra_slice_unzip":
            self.group = op.attr("axis")
        fields: dict = {}
        kind = STAGES[stage].layout
        if kind == "walk":
            fields.update(walk(stream_layout(before, self._group(before)), stream_layout(after, self.group)))
        if kind in ("walk", "shape"):
            if not hasattr(after, "g0"):
                self.group = None
            fields.update(shape(after, self.group))
        if stage == "switch":
            fields["in_slices"] = before.spatial[2].size
        if kind == "store":
            target = pair(op.attr("lane"), op.attr("element")) if stage == "to_trf" else op.attr("element")
            fields.update(walk(stream_layout(before, self._group(before)), target), target=box(target))
        if stage == "vector_stash":
            self.stash = stream_layout(before, self._group(before))
        if STAGES[stage].engine == "contraction":
            fields.update(self.contraction(op, before, after, rf))
        if kind == "fold" and STAGES[stage].engine == "vector":
            fields.update(self.reduce(op, before, after))
        if STAGES[stage].rf == "vrf":  # the port's walks, empty where the operand reads neither
            here = stream_layout(before, self._group(before))
            vrf = walk(pair(*rf.params[3:]), here) if rf is not None else {"walk": [], "table": []}
            stash = walk(self.stash, here) if _reads_stash(op) else {"walk": [], "table": []}
            fields.update({f"rf_{k}": v for k, v in vrf.items()} | {f"stash_{k}": v for k, v in stash.items()})
        return fields

    def contraction(self, op, before: object, after: object, trf: object | None) -> dict:
        """`contract_outer` … `contract_packet` only name the fold; `contract_lane`'s config holds it: both
        operands walked into `[output, reduced]` (the contracted digits in `contract_outer`'s wire order,
        padding dropped), the count of reduced terms, the walk of the sums into the output layout, and
        the accumulator's dtype."""
        if op.opcode == "contract_outer":
            lane = trf.params[3]
            self.fold = {
                "lhs": stream_layout(before, None),
                "rhs": pair(*trf.params[3:]),
                "lane": lane,
                "pre": pair(lane, op.attr("time"), op.attr("packet")),
                "acc": accumulator(before.dtype, trf.dtype),
            }
            return {}
        if op.opcode == "contract_packet":
            self.fold["packet"] = op.attr("packet")
            return {}
        if op.opcode == "contract_time":
            self.fold["time"] = op.attr("time")
            return {}
        f = self.fold
        sums = pair(f["lane"], f["time"], f["packet"])
        reduced = reduced_digits(f["pre"], sums)
        terms = pair(sums, reduced)
        fields = {f"lhs_{k}": v for k, v in walk(f["lhs"], terms).items()}
        fields.update({f"rhs_{k}": v for k, v in walk(f["rhs"], terms).items()})
        fields.update(walk(sums, stream_layout(after, None)) | shape(after, None))
        return {**fields, "terms": box(terms), "reduced": reduced.size, "acc": DTYPE_CODES.code(f["acc"])}

    def reduce(self, op, before: object, after: object) -> dict:
        """A reducer's fold: each cluster's slices `[in_slice, time, packet]` walked into `[output, reduced]`
        (the reduced digits in wire order, padding dropped), the count of reduced terms, and the input's
        and output's Slice boxes."""
        in_slice = before.stream.spatial[2]
        out_slice = op.attr("slice") if op.opcode == "vector_inter_slice_reduce" else in_slice
        # one pair of all three: pairing a pair may merge digits with other live counts
        source = pair(in_slice, before.stream.time, before.stream.packet)
        target = pair(out_slice, after.stream.time, after.stream.packet)
        reduced = reduced_digits(source, target)
        terms = pair(target, reduced)
        slices = {"in_slices": in_slice.size, "slices": out_slice.size, "source": box(source), "target": box(target)}
        return {**walk(source, terms), "terms": box(terms), "reduced": reduced.size, **slices, **shape(after, None)}

    def _group(self, obj: object) -> Mapping | None:
        return self.group if hasattr(obj, "g0") else None


def _reads_stash(op) -> bool:
    """Whether a Vector Engine op's operand reads the stash (alone, in a ternary pair or a branch slot)."""

    def mentions(value: object) -> bool:
        if value is Stash:
            return True
        if isinstance(value, tuple):
            return any(mentions(v) for v in value)
        if isinstance(value, Branched):
            return any(mentions(v) for _, v in value.slots)
        return False

    return any(k == "operand" for k, _ in op.attrs) and mentions(op.attr("operand"))
