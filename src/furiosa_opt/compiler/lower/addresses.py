"""Byte addresses of tensors and the loops that walk them: DMA descriptors and stream sequencers.

A tensor's buffer is its levels paired (`[Chip, Cluster, Slice, Element]`); each level has a unit in
bits (element: the dtype's width; slice: the 4 MB slice stride; …), so a position's bit address is the
sum of its level positions times their units. Bits, because i4 and f4e2m1 pack two elements per byte:
every stride and packet the hardware walks must still come out a whole number of bytes, which
`to_bytes` checks, so a 4-bit tensor moves in element pairs (upstream's rule that a sub-byte region be
byte-aligned). DMA loops come from the joint refinement of the source and
destination levels (without merging digits across levels), one loop per live destination sub-digit;
fetch and commit sequencers come from the matcher of mapping/sequencer.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import CHIP_STRIDE, DM_BASE, SLICE_STRIDE, Entry, IndirectWalk, Loop, Sequencer
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.factors import BC, Comp, SymAtom, concat, size, symbols
from furiosa_opt.mapping.refine import SubDigit, pairing, refine
from furiosa_opt.mapping.relayout import position_of
from furiosa_opt.mapping.sequencer import Mode, max_access, sequence


@dataclass(frozen=True)
class Layout:
    """A buffer seen through some levels: the levels' mappings, their byte units, and a base address."""

    levels: tuple[Mapping, ...]
    units: tuple[int, ...]  # bits per position of each level
    base: int  # bytes
    dtype: DType

    @property
    def factors(self):
        return concat(*(level.factors for level in self.levels))

    def level_of(self, factor_index: int) -> int:
        seen = 0
        for i, level in enumerate(self.levels):
            seen += len(level.factors)
            if factor_index < seen:
                return i
        raise IndexError(factor_index)

    def inner_size(self, level: int) -> int:
        return math.prod(m.size for m in self.levels[level + 1 :])

    def bit_stride(self, factor_index: int, position_stride: int) -> int:
        level = self.level_of(factor_index)
        return position_stride // self.inner_size(level) * self.units[level]

    def spatial(self, stride: int) -> bool:
        """Whether a byte stride steps a chip, cluster or slice of this layout rather than inside one: DM
        slices are SLICE_STRIDE apart and hold less, HBM chips CHIP_STRIDE apart."""
        return abs(stride) >= (SLICE_STRIDE if len(self.levels) == 4 else CHIP_STRIDE)

    def addresses(self, positions: np.ndarray) -> np.ndarray:
        """Byte address of each flat position of the paired levels (a 4-bit element: its byte's)."""
        bits = np.zeros(positions.shape, dtype=np.int64)
        rest = positions.astype(np.int64)
        for level, unit in zip(reversed(self.levels), reversed(self.units), strict=True):
            bits += rest % level.size * unit
            rest //= level.size
        return self.base + bits // 8


def to_bytes(bits: int, dtype: DType, what: str) -> int:
    """`bits` as bytes; refused when a 4-bit tensor would start, step or end inside a byte."""
    if bits % 8:
        raise VerifyError(
            "subbyte-alignment",
            f"{what}: {bits // dtype.bits} {dtype} element(s) make {bits} bits, not a whole number of bytes "
            f"({dtype} packs two elements per byte and the hardware addresses bytes)",
            notes=(f"give the axes that {dtype} data moves along even sizes, so every run is whole bytes",),
        )
    return bits // 8


def dram_layout(levels: tuple[Mapping, ...], dtype: DType, base: int) -> Layout:
    return Layout(levels, (CHIP_STRIDE * 8, dtype.bits), base, dtype)


def sram_layout(levels: tuple[Mapping, ...], dtype: DType, offset: int) -> Layout:
    cluster_unit = RNGD.slices_per_cluster * SLICE_STRIDE
    units = (CHIP_STRIDE * 8, cluster_unit * 8, SLICE_STRIDE * 8, dtype.bits)
    return Layout(levels, units, DM_BASE + offset, dtype)


# ---- DMA --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One DMA command's share of a move: its descriptor's packet and loops (strides in bytes) and where it
    starts, in bytes past the move's source and destination bases."""

    src: int
    dst: int
    packet: int
    loops: list[Loop]


def dma_loops(src: Layout, dst: Layout, what: str, whole: bool = True) -> tuple[int, list[Loop]]:
    """(packet bytes, loops outermost first, strides in bytes) moving every live destination cell from its
    source, in one command (`dma_segments` when a move may need several)."""
    (segment,) = dma_segments(src, dst, what, whole)
    return segment.packet, segment.loops


def dma_segments(src: Layout, dst: Layout, what: str, whole: bool = True) -> list[Segment]:
    """The commands a move takes, each a descriptor over cells both sides hold. One, unless an axis splits
    into sub-digits whose counts over-cover it (`A = 15` as `A / 2, A % 2`: 8 · 2 places for 15 cells, the
    book's heterogeneous segmentation, dma-engine.md Example 6) where a side has no padding to take the
    extra places (an unpadded destination would be written past its live cells, an unpadded source read
    past them): then the full iterations of the outer sub-digit are one command and the boundary
    iteration, its inner count cut to what is left, another (and so on inward), each paying its own start.
    `whole`: the destination is a whole tensor (not a view), so its padding may be written."""
    src_subs, dst_subs = refine(src.factors, dst.factors)
    partner = pairing([(d.key, d.cut) for d in src_subs], [(d.key, d.cut) for d in dst_subs])
    digits: list[tuple[SubDigit, int, int, int]] = []  # (destination sub-digit, count, src, dst bit strides)
    matches: list[SubDigit | None] = []
    for d, i in zip(dst_subs, partner, strict=True):
        match = None if i is None else src_subs[i]
        src_stride = src.bit_stride(match.factor, match.pos) if match else 0
        count = _padded_run(src, dst, match, d) if match and whole else d.count
        digits.append((d, count, src_stride, dst.bit_stride(d.factor, d.pos)))
        matches.append(match)
    segments = []
    for block in _blocks(src, dst, digits, matches, what):
        counts = [block.get(k, (0, count))[1] for k, (_, count, _, _) in enumerate(digits)]
        starts = [block.get(k, (0, 0))[0] for k in range(len(digits))]
        src_shift = sum(start * stride for start, (_, _, stride, _) in zip(starts, digits, strict=True))
        dst_shift = sum(start * stride for start, (_, _, _, stride) in zip(starts, digits, strict=True))
        loops = [(d.pos, Loop(n, s, t)) for (d, _, s, t), n in zip(digits, counts, strict=True)]
        packet, loops = _descriptor(loops, src, dst, what)
        segments.append(Segment(to_bytes(src_shift, dst.dtype, what), to_bytes(dst_shift, dst.dtype, what), packet,
                                loops))  # fmt: skip
    return segments


def _blocks(
    src: Layout,
    dst: Layout,
    digits: list[tuple[SubDigit, int, int, int]],
    matches: list[SubDigit | None],
    what: str,
) -> list[dict[int, tuple[int, int]]]:
    """The rectangular blocks the live cells of the move's one over-covered axis make, each as {digit index:
    (start, count)} for that axis's sub-digits (the others move whole); [{}] when no axis is over-covered.
    An axis is over-covered when its loops reach past its live cells on the destination and a side does
    not hold those places as padding."""
    by_axis: dict[object, list[tuple[int, int, int]]] = {}
    for k, (d, count, _, _) in enumerate(digits):
        by_axis.setdefault(d.key, []).append((d.cut, k, count))
    covered = []
    for subs in by_axis.values():
        subs.sort(reverse=True)  # outermost (largest coordinate cut) first
        outer = subs[0][1]
        reached = 1 + sum(cut * (count - 1) for cut, _, count in subs)
        live, dst_holds = _reach(dst, digits[outer][0])
        src_holds = _reach(src, matches[outer])[1] if matches[outer] else reached
        if reached > live and reached > min(dst_holds, src_holds):
            covered.append((live, subs))
    if not covered:
        return [{}]
    if len(covered) > 1:
        raise VerifyError(
            "dma-segments",
            f"{what}: {len(covered)} axes do not divide over their DMA loops; the move would need a command per "
            "combination of their boundaries",
            notes=("pad all but one of them on both sides of the move, or choose sizes that divide",),
        )
    live, subs = covered[0]

    def split(live: int, inner: list[tuple[int, int, int]]) -> list[dict[int, tuple[int, int]]]:
        """Blocks over the first `live` coordinates of the sub-digits `inner` (outermost first), each of
        which but the outermost covers exactly the next one's cut."""
        (cut, k, _), rest = inner[0], inner[1:]
        if not rest:
            return [{k: (0, -(-live // cut))}]
        full, left = divmod(live, cut)
        blocks = [{k: (0, full), **{j: (0, c) for _, j, c in rest}}] if full else []
        return blocks + ([{k: (full, 1), **b} for b in split(left, rest)] if left else [])

    return split(live, subs)


def _reach(layout: Layout, sub: SubDigit) -> tuple[int, int]:
    """(live, held): how many coordinates of `sub`'s axis the layout's factor holding that sub-digit reaches
    with live cells, and with its padding too (places past them are other cells or none). Only an axis's
    outermost sub-digit asks, so its factor's stride sets the scale; a composite's live cells are its live
    digits."""
    f = layout.factors[sub.factor]
    n = f.atom.n if isinstance(f.atom, SymAtom) else f.m * f.s
    return min(n, f.m * f.s), f.e * f.s


def _descriptor(loops: list[tuple[int, Loop]], src: Layout, dst: Layout, what: str) -> tuple[int, list[Loop]]:
    """(packet bytes, loops in bytes) of one command: the destination's sub-digit loops (by position) and its
    broadcasts, ordered, merged, packeted and spread over DMNs; at most a descriptor's loops inside a slice."""
    position = size(dst.factors)
    for i, f in enumerate(dst.factors):  # destination broadcasts re-read the source
        position //= f.e
        if f.atom == BC and f.m > 1:
            loops.append((position, Loop(f.m, 0, dst.bit_stride(i, position))))
    ordered = [loop for _, loop in sorted(loops, key=lambda item: -item[0])]
    packet, loops = _interleave_dmns(*_packet(_coalesce(ordered), dst.dtype, what), src, dst)
    loops = [
        Loop(loop.size, to_bytes(loop.src, dst.dtype, what), to_bytes(loop.dst, dst.dtype, what)) for loop in loops
    ]
    # A move is split over the DMA engines by chip, cluster and slice (an aggregate: one descriptor per
    # engine, bases apart), so only the loops inside a slice's or chip's memory fill a descriptor.
    inner = [loop for loop in loops if not (src.spatial(loop.src) or dst.spatial(loop.dst))]
    if len(inner) > RNGD.dma_max_loops:
        raise VerifyError(
            "dma-loops",
            f"{what}: the DMA needs {len(inner)} nested loops inside a slice, a descriptor holds {RNGD.dma_max_loops}",
            notes=("keep more axes in the same order on both sides so that loops merge",),
        )
    return to_bytes(packet, dst.dtype, what), loops


def _padded_run(src: Layout, dst: Layout, match: SubDigit, d: SubDigit) -> int:
    """The count a destination sub-digit's loop moves: its live cells, or, when that leaves a 4-bit run
    ending inside a byte (`X # 16` with X = 15), the padded run too, if both sides pad the innermost
    element axis alike: the padding cells are copied along rather than splitting a byte."""
    f, g = dst.factors[d.factor], src.factors[match.factor]
    if d.count * dst.dtype.bits % 8 == 0 or d.pos != 1 or match.pos != 1 or d.cut != 1 or d.count != f.m:
        return d.count
    return f.e if f.padded and (g.m, g.e) == (f.m, f.e) else d.count


def _coalesce(loops: list[Loop]) -> list[Loop]:
    out: list[Loop] = []
    for loop in reversed(loops):  # innermost first
        inner = out[-1] if out else None
        if inner and loop.src == inner.size * inner.src and loop.dst == inner.size * inner.dst:
            out[-1] = Loop(inner.size * loop.size, inner.src, inner.dst)
        else:
            out.append(loop)
    return out[::-1]


def _packet(loops: list[Loop], dtype: DType, what: str) -> tuple[int, list[Loop]]:
    """The innermost contiguous run on both sides becomes the packet (at most 4096 bytes, whole bytes);
    packet and strides in bits."""
    unit = dtype.bits
    packet = unit
    if loops and loops[-1].src == loops[-1].dst == unit:
        run = loops.pop()
        count = run.size
        fits = [d for d in range(1, count + 1) if count % d == 0 and d * unit <= RNGD.dma_max_packet_bytes * 8]
        best = max((d for d in fits if d * unit % 8 == 0), default=1)
        packet = best * unit
        if count // best > 1:
            loops.append(Loop(count // best, packet, packet))
    loops = _split_iterations(loops)
    return packet, loops


def _interleave_dmns(packet: int, loops: list[Loop], src: Layout, dst: Layout) -> tuple[int, list[Loop]]:
    """The loops stepping DM slices (and clusters and chips) moved innermost, inside a loop over the
    packet's 256-byte pieces: consecutive requests then go to other slices, so they take turns between
    DMNs, each of which moves only 128 bytes a cycle (dma-engine.md, Example 2: `stride0 = 256` with the
    slice and DMN loops innermost). Packet and strides in bits; a packet that is not a whole number of
    256-byte pieces (splitting it would make partial writes of whole ones), or a descriptor left without
    room for the piece loop, keeps its packet."""

    def steps_slices(loop: Loop) -> bool:
        sides = ((src, loop.src), (dst, loop.dst))
        return any(len(side.levels) == 4 and side.spatial(stride // 8) for side, stride in sides)

    spread = [loop for loop in loops if steps_slices(loop)]
    if not spread:
        return packet, loops
    inside = [loop for loop in loops if not steps_slices(loop)]
    piece = RNGD.dma_burst_bytes * 8
    if packet > piece and packet % piece == 0 and len(inside) < RNGD.dma_max_loops:
        return piece, [*inside, Loop(packet // piece, piece, piece), *spread]
    return packet, [*inside, *spread]


def _split_iterations(loops: list[Loop]) -> list[Loop]:
    """A loop longer than the hardware's iteration limit becomes two."""
    out = []
    for loop in loops:
        if loop.size <= RNGD.max_entry_iterations:
            out.append(loop)
            continue
        inner = max(d for d in range(1, RNGD.max_entry_iterations + 1) if loop.size % d == 0)
        out += [Loop(loop.size // inner, loop.src * inner, loop.dst * inner), Loop(inner, loop.src, loop.dst)]
    return out


# ---- stream sequencers ------------------------------------------------------------------------------


def _entries(configs, dtype: DType, memory: int, what: str) -> list[list[Entry]]:
    """The configs' entries with the strides in `memory` (DM) in bytes; the other memory (a fetch's
    interleave selector) counts tensors.

    A 4-bit stream is walked a byte at a time, each byte giving two consecutive positions (low nibble
    first): the innermost entry must step one element over an even count, and becomes half as many
    one-byte steps; every other DM stride must be a whole number of bytes."""
    configs = [list(config) for config in configs]
    if dtype.bits < 8:
        per_byte = 8 // dtype.bits
        side = next(c for c in reversed(configs) if c)
        inner = side[-1]
        if inner.memory != memory or inner.stride != 1 or inner.size % per_byte:
            raise VerifyError(
                "subbyte-alignment",
                f"{what}: {dtype} elements are packed {per_byte} per byte and the sequencer reads whole bytes, but "
                f"its innermost loop takes {inner.size} element(s) {inner.stride} apart",
                notes=(f"make the innermost axis of the {dtype} stream an even run of adjacent elements",),
            )
        side[-1] = Entry(inner.size // per_byte, per_byte, memory)
    return [
        [
            Entry(e.size, to_bytes(e.stride * dtype.bits, dtype, what) if e.memory == memory else e.stride, e.memory)
            for e in config
        ]
        for config in configs
    ]


def fetch_sequencer(
    buffer: str,
    base: int,
    dtype: DType,
    in_time: Mapping,
    in_packet: Mapping,
    time: Mapping,
    packet: Mapping,
    context: str,
    interleave: list[int] | None = None,
) -> Sequencer:
    """The fetch unit's loops over one slice's DM (memory 1) and the interleave selector (memory 0: which
    of a pair-mode begin's tensors, whose DM bases are `interleave`)."""
    time_cfg, packet_cfg = sequence([in_time, in_packet], [time, packet], Mode.READ)
    access = max(1, max_access(time_cfg, packet_cfg, packet.size) * dtype.bits // 8)
    legal = [b for b in RNGD.fetch_read_bytes if access % b == 0]
    read = RNGD.sub_access_bytes if context == "sub" else max(legal, default=max(1, dtype.bits // 8))
    entries = _entries((time_cfg, packet_cfg), dtype, 1, "fetch")
    return Sequencer(buffer, base, *entries, read, list(interleave or []))


def commit_sequencer(
    buffer: str, base: int, dtype: DType, time: Mapping, packet: Mapping, element: Mapping, context: str
) -> Sequencer:
    """The commit unit's loops writing one slice's stream into its DM element."""
    time_cfg, packet_cfg = sequence([element], [time, packet], Mode.WRITE)
    valid = packet.size * dtype.bits
    access = max(1, math.gcd(valid, max_access(time_cfg, packet_cfg, packet.size) * dtype.bits) // 8)
    write = RNGD.sub_access_bytes if context == "sub" else access
    return Sequencer(buffer, base, *_entries((time_cfg, packet_cfg), dtype, 0, "commit"), write)


# ---- indirect DMA (gather, scatter) ----------------------------------------------------------------


def _pinned(layout: Layout, names: set[str]) -> Layout:
    """The layout with the digits of `names` held at coordinate 0 (live count 1, extent kept), so a DMA
    walk over it visits the payload of one selected row only."""

    def pin(mapping: Mapping) -> Mapping:
        return Mapping(tuple(replace(f, m=1) if _named(f, names) else f for f in mapping.factors))

    return Layout(tuple(pin(level) for level in layout.levels), layout.units, layout.base, layout.dtype)


def _named(f, names: set[str]) -> bool:
    return isinstance(f.atom, SymAtom) and f.atom.name in names


def _row_stride(layout: Layout, axis: str, what: str) -> int:
    """Bits between consecutive rows of `axis` in `layout`, which must hold the axis as one whole digit:
    the hardware adds `row · stride` to one base address."""
    found = [i for i, f in enumerate(layout.factors) if isinstance(f.atom, SymAtom) and f.atom.name == axis]
    whole = (
        len(found) == 1
        and layout.factors[found[0]].s == 1
        and layout.factors[found[0]].m == layout.factors[found[0]].atom.n
    )
    if not whole or any(isinstance(f.atom, Comp) and axis in symbols(f.atom.k) for f in layout.factors):
        raise VerifyError(
            "indirect-row",
            f"{what}: the selected axis `{axis}` must be one whole digit of its tensor's layout, so a row is "
            "one offset from the base",
        )
    index = found[0]
    return layout.bit_stride(index, size(layout.factors[index + 1 :]))


def indirect(
    indexed: Layout, direct: Layout, index: Layout, axes, gather: bool, divisor: int, what: str
) -> IndirectWalk:
    """The config of a gather (`gather`: the index selects rows of the source) or a scatter (of the
    destination): the payload walk of one row on both sides, and per index cell (in the key's order)
    the byte address of the cell and the direct side's offset to its row."""
    pinned_indexed = _pinned(indexed, {axes.selected[0]})
    pinned_direct = _pinned(direct, {name for name, _ in axes.index})
    src, dst = (pinned_indexed, pinned_direct) if gather else (pinned_direct, pinned_indexed)
    packet, loops = dma_loops(src, dst, what)
    cells = evaluate(index.factors, np.arange(size(index.factors), dtype=np.int64))
    live = np.flatnonzero(cells.live)
    coords = {name: cells.coords[name][live] for name, _ in axes.index}
    order = np.argsort(np.ravel_multi_index(tuple(coords[n] for n, _ in axes.index), [n for _, n in axes.index]))
    live = live[order]
    coords = {name: c[order] for name, c in coords.items()}
    offsets = direct.addresses(position_of(direct.factors, coords, live.shape)) - direct.base
    return IndirectWalk(
        src.base,
        dst.base,
        packet,
        loops,
        "src" if gather else "dst",
        index.addresses(live).tolist(),
        offsets.tolist(),
        divisor,
        axes.selected[1],
        to_bytes(_row_stride(indexed, axes.selected[0], what), indexed.dtype, what),
    )
