"""Byte addresses of tensors and the loops that walk them: DMA descriptors and stream sequencers.

A tensor's buffer is its levels paired (`[Chip, Cluster, Slice, Element]`); each level has a byte unit
(element: the dtype's size; slice: the 4 MB slice stride; …), so a position's address is the sum of
its level positions times their units. DMA loops come from the joint refinement of the source and
destination levels (without merging digits across levels), one loop per live destination sub-digit;
fetch and commit sequencers come from the matcher of mapping/sequencer.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import CHIP_STRIDE, DM_BASE, SLICE_STRIDE, Entry, Loop, Sequencer
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.factors import BC, concat, size
from furiosa_opt.mapping.refine import refine
from furiosa_opt.mapping.sequencer import Mode, max_access, sequence

MAX_DMA_LOOPS = 6  # limits per side of the external DMA descriptor


@dataclass(frozen=True)
class Layout:
    """A buffer seen through some levels: the levels' mappings, their byte units, and a base address."""

    levels: tuple[Mapping, ...]
    units: tuple[int, ...]  # bytes per position of each level
    base: int
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

    def byte_stride(self, factor_index: int, position_stride: int) -> int:
        level = self.level_of(factor_index)
        return position_stride // self.inner_size(level) * self.units[level]

    def addresses(self, positions: np.ndarray) -> np.ndarray:
        """Byte address of each flat position of the paired levels."""
        out = np.full(positions.shape, self.base, dtype=np.int64)
        rest = positions.astype(np.int64)
        for level, unit in zip(reversed(self.levels), reversed(self.units), strict=True):
            out += rest % level.size * unit
            rest //= level.size
        return out


def element_bytes(dtype: DType) -> int:
    if dtype.bits % 8:
        raise VerifyError("lower-subbyte", f"stage 2 does not lay out {dtype} (sub-byte) tensors yet")
    return dtype.bits // 8


def dram_layout(levels: tuple[Mapping, ...], dtype: DType, base: int) -> Layout:
    return Layout(levels, (CHIP_STRIDE, element_bytes(dtype)), base, dtype)


def sram_layout(levels: tuple[Mapping, ...], dtype: DType, offset: int) -> Layout:
    cluster_unit = RNGD.slices_per_cluster * SLICE_STRIDE
    units = (CHIP_STRIDE, cluster_unit, SLICE_STRIDE, element_bytes(dtype))
    return Layout(levels, units, DM_BASE + offset, dtype)


# ---- DMA --------------------------------------------------------------------------------------------


def dma_loops(src: Layout, dst: Layout, what: str) -> tuple[int, list[Loop]]:
    """(packet bytes, loops outermost first) moving every live destination cell from its source."""
    src_subs, dst_subs = refine(src.factors, dst.factors)
    held = {(d.key, d.cut): d for d in src_subs}
    loops: list[tuple[int, Loop]] = []  # (destination position stride, loop)
    for d in dst_subs:
        match = held.get((d.key, d.cut))
        src_stride = src.byte_stride(match.factor, match.pos) if match else 0
        loops.append((d.pos, Loop(d.count, src_stride, dst.byte_stride(d.factor, d.pos))))
    position = size(dst.factors)
    for i, f in enumerate(dst.factors):  # destination broadcasts re-read the source
        position //= f.e
        if f.atom == BC and f.m > 1:
            loops.append((position, Loop(f.m, 0, dst.byte_stride(i, position))))
    ordered = [loop for _, loop in sorted(loops, key=lambda item: -item[0])]
    return _packet(_coalesce(ordered), element_bytes(dst.dtype), what)


def _coalesce(loops: list[Loop]) -> list[Loop]:
    out: list[Loop] = []
    for loop in reversed(loops):  # innermost first
        inner = out[-1] if out else None
        if inner and loop.src == inner.size * inner.src and loop.dst == inner.size * inner.dst:
            out[-1] = Loop(inner.size * loop.size, inner.src, inner.dst)
        else:
            out.append(loop)
    return out[::-1]


def _packet(loops: list[Loop], unit: int, what: str) -> tuple[int, list[Loop]]:
    """The innermost contiguous run on both sides becomes the packet (at most 4096 bytes)."""
    packet = unit
    if loops and loops[-1].src == loops[-1].dst == unit:
        run = loops.pop()
        count = run.size
        best = max(d for d in range(1, count + 1) if count % d == 0 and d * unit <= RNGD.dma_max_packet_bytes)
        packet = best * unit
        if count // best > 1:
            loops.append(Loop(count // best, packet, packet))
    loops = _split_iterations(loops)
    if len(loops) > MAX_DMA_LOOPS:
        raise VerifyError(
            "dma-loops",
            f"{what}: the DMA needs {len(loops)} nested loops, a descriptor holds {MAX_DMA_LOOPS}",
            notes=("keep more axes in the same order on both sides so that loops merge",),
        )
    return packet, loops


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


def _entries(config, unit: int, scaled: tuple[int, ...] = (0, 1)) -> list[Entry]:
    """Entries with the strides of the `scaled` memories in bytes (a fetch's selector counts tensors)."""
    return [Entry(e.size, e.stride * unit if e.memory in scaled else e.stride, e.memory) for e in config]


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
    unit = element_bytes(dtype)
    time_cfg, packet_cfg = sequence([in_time, in_packet], [time, packet], Mode.READ)
    access = max_access(time_cfg, packet_cfg, packet.size) * unit
    legal = [b for b in RNGD.fetch_read_bytes if access % b == 0]
    read = RNGD.sub_access_bytes if context == "sub" else max(legal, default=unit)
    entries = [_entries(config, unit, scaled=(1,)) for config in (time_cfg, packet_cfg)]
    return Sequencer(buffer, base, *entries, read, list(interleave or []))


def commit_sequencer(
    buffer: str, base: int, dtype: DType, time: Mapping, packet: Mapping, element: Mapping, context: str
) -> Sequencer:
    """The commit unit's loops writing one slice's stream into its DM element."""
    unit = element_bytes(dtype)
    time_cfg, packet_cfg = sequence([element], [time, packet], Mode.WRITE)
    valid = packet.size * unit
    access = math.gcd(valid, max_access(time_cfg, packet_cfg, packet.size) * unit)
    write = RNGD.sub_access_bytes if context == "sub" else access
    return Sequencer(buffer, base, _entries(time_cfg, unit), _entries(packet_cfg, unit), write)
