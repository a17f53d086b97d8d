"""LIR: stage 2's output — placed buffers and per-context command lists (documented in docs/lir.md).

Addresses are bytes in one virtual space per memory: DRAM from 0 (each chip at `CHIP_STRIDE`), SRAM
(DM) at `DM_BASE` with slice `s` of cluster `c` at `(c·256 + s)·SLICE_STRIDE`, and the per-slice TRF and
VRF files from 0. Every command keeps the vISA op it implements and the user's source line.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import msgpack
import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.configs.records import EngineConfig

DM_BASE = 0x1000_0000
SLICE_STRIDE = RNGD.dm_slice_stride  # the virtual span of one slice's DM partition
CHIP_STRIDE = 1 << 40


@dataclass
class Buffer:
    name: str  # T<n>
    value: str  # the vISA value that defines it (%n)
    memory: str  # dram | sram | trf | vrf
    dtype: str
    levels: list[str]  # the mapping of each level, outermost first
    address: int  # dram: byte address; sram: per-slice offset (the same in every slice); trf/vrf: offset
    bytes: int  # dram: total; sram/trf/vrf: per slice
    first: int  # index of the command that first writes it (-1: a kernel argument)
    last: int  # index of the last command that uses it
    region: str = ""  # trf: full | first_half | second_half
    slots: int = 1  # 2: a value a kept device loop carries, in two places used in turn (docs/lir.md, "Loops")
    chips: int = 1  # dram: the chips its chip level spans, each chip's part at CHIP_STRIDE; 1 elsewhere

    @property
    def span(self) -> int:
        """Bytes it occupies (per slice in DM, VRF and TRF): every slot."""
        return self.bytes * self.slots

    @property
    def footprint(self) -> tuple[str, int, int]:
        """(memory, address, bytes): the place it occupies, shared by buffers that reuse one place."""
        return self.memory, self.address, self.span


@dataclass
class Loop:
    size: int
    src: int  # byte stride on the source side (0 = re-read)
    dst: int  # byte stride on the destination side


@dataclass
class DmaWalk:
    """A DMA descriptor: `loops` (outermost first) around one contiguous `packet` of bytes, read from
    `src_base` and written from `dst_base`, each loop stepping both by its own byte strides."""

    src_base: int
    dst_base: int
    packet: int
    loops: list[Loop]

    @classmethod
    def from_dict(cls, config: dict) -> DmaWalk:
        """A walk as decoded from msgpack (an EDF or `--dump-ir`)."""
        return cls(config["src_base"], config["dst_base"], config["packet"], [Loop(**x) for x in config["loops"]])


@dataclass
class FillWalk:
    """A memset: the destination walk of a DMA descriptor (`loops` use their `dst` strides) with `pattern`,
    the bytes that repeat through the filled memory, as its source."""

    base: int
    packet: int
    loops: list[Loop]
    pattern: list[int]

    @classmethod
    def from_dict(cls, config: dict) -> FillWalk:
        return cls(config["base"], config["packet"], [Loop(**x) for x in config["loops"]], list(config["pattern"]))


@dataclass
class IndirectWalk:
    """A gather or scatter (docs/lir.md, "Indirect DMA"): the row walk of a descriptor, on the side named
    `indexed` (`src` for a gather, `dst` for a scatter) shifted per index cell: the cells at `entries` hold
    an offset each, divided by `divisor` into a row of `rows`, `row_stride` bytes apart; `offsets` shift
    the other side per cell."""

    src_base: int
    dst_base: int
    packet: int
    loops: list[Loop]
    indexed: str
    entries: list[int]
    offsets: list[int]
    divisor: int
    rows: int
    row_stride: int

    @classmethod
    def from_dict(cls, config: dict) -> IndirectWalk:
        loops = [Loop(**x) for x in config["loops"]]
        return cls(**{**config, "loops": loops, "entries": list(config["entries"]), "offsets": list(config["offsets"])})


@dataclass
class Entry:
    size: int
    stride: int  # bytes (0 = broadcast)
    memory: int = 0  # fetch: 0 = the time memory (interleave), 1 = DM packet memory


@dataclass
class Sequencer:
    buffer: str
    base: int  # byte address of the first element (view windows included)
    time: list[Entry]
    packet: list[Entry]
    access: int  # bytes per hardware access (read_size / write_size)
    interleave: list[int] = field(default_factory=list)  # a pair-mode fetch: the base the selector picks

    @classmethod
    def from_dict(cls, config: dict) -> Sequencer:
        """A sequencer as decoded from msgpack (an EDF or `--dump-ir`)."""
        entries = {side: [Entry(**e) for e in config[side]] for side in ("time", "packet")}
        return cls(
            config["buffer"], config["base"], entries["time"], entries["packet"], config["access"], config["interleave"]
        )


# ---- what a config walks (the simulator takes its loops; tests and the cost model its addresses) --


def walk_dma(src_base: int, dst_base: int, packet: int, loops: list[Loop], unit: int) -> tuple[np.ndarray, ...]:
    """(source, destination) byte address of every element the descriptor moves, in order."""
    src, dst = np.array([src_base], dtype=np.int64), np.array([dst_base], dtype=np.int64)
    for loop in [*loops, Loop(packet // unit, unit, unit)]:
        steps = np.arange(loop.size, dtype=np.int64)
        src = (src[:, None] + steps * loop.src).ravel()
        dst = (dst[:, None] + steps * loop.dst).ravel()
    return src, dst


def sequencer_loops(sequencer: Sequencer, memory: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sizes, byte strides in `memory`) of the sequencer's nested loops, time then packet, outermost
    first: an entry of another memory stays at the same address there (stride 0)."""
    entries = [*sequencer.time, *sequencer.packet]
    return tuple(e.size for e in entries), tuple(e.stride if e.memory == memory else 0 for e in entries)


def walk_sequencer(sequencer: Sequencer, memory: int, count: int | None = None) -> np.ndarray:
    """Byte address in `memory` of every stream position the sequencer visits (fetch: DM is memory 1,
    the interleave selector memory 0; commit: DM is memory 0), or of the first `count` of them."""
    sizes, strides = sequencer_loops(sequencer, memory)
    total = math.prod(sizes)
    positions = np.arange(total if count is None else min(count, total), dtype=np.int64)
    digits = np.unravel_index(positions, sizes) if sizes else ()
    return sequencer.base + sum((d * s for d, s in zip(digits, strides, strict=True)), np.zeros_like(positions))


def overlapping(places: set[tuple[str, int, int]]) -> dict[tuple, list[tuple]]:
    """Each footprint (`Buffer.footprint`) with the footprints it shares a byte with (itself always included):
    a sweep over the footprints sorted by memory and address."""
    near: dict[tuple, list[tuple]] = {place: [place] for place in places}
    ordered = sorted(places, key=lambda p: (p[0], p[1]))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b[0] != a[0] or b[1] >= a[1] + a[2]:
                break
            if b[2] and a[2]:
                near[a].append(b)
                near[b].append(a)
    return near


@dataclass
class Command:
    index: int
    context: str  # main | sub | tdma | pdma | none (views)
    kind: str  # dma | exec | memset | indirect | view | sync
    op: int  # index of the vISA op (-1 for syncs)
    opcode: str
    loc: str | None
    inputs: list[str] = field(default_factory=list)  # buffer names read
    outputs: list[str] = field(default_factory=list)  # buffer names written
    dma: DmaWalk | None = None
    fetch: Sequencer | None = None
    engines: list[EngineConfig] = field(default_factory=list)  # one config per stage, in pipeline order
    commit: Sequencer | None = None
    waits: list[int] = field(default_factory=list)  # sync: the commands (other contexts) waited for
    fill: FillWalk | None = None  # memset
    indirect: IndirectWalk | None = None  # gather / scatter
    # In a kept loop, runtime programs (`furiosa_opt.programs`, over the loop's index as level 0): the condition
    # under which a pass runs it, and (config path, byte offset) added per pass to an address of its configs.
    guard: list[int] | None = None
    offsets: list[tuple[str, list[int]]] = field(default_factory=list)


@dataclass
class LoopRegion:
    """A device loop the LIR keeps: commands `first` … `last` run `count` times, the index named `index`
    reading 0, 1, … in turn. Each pass starts once everything before it has ended (docs/lir.md, "Loops")."""

    first: int
    last: int
    count: int
    index: str  # the loop index as runtime scalars name it (`%3`)


@dataclass
class Lir:
    kernel: str
    chip: int
    pe: int
    buffers: list[Buffer]
    commands: list[Command]
    arguments: list[str]
    results: list[str]
    axes: list[tuple[str, int]] = field(default_factory=list)  # (name, size) of every axis the mappings name
    leaves: list[tuple[str, str]] = field(default_factory=list)  # (parameter path, hbm|view|view_mut) per argument
    loops: list[LoopRegion] = field(default_factory=list)  # the device loops kept, in command order
    unrolled: list[list] = field(default_factory=list)  # [vISA op index, trip count, why] of each loop unrolled
    format: str = "furiosa-opt-lir"
    version: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


def dump(lir: Lir) -> bytes:
    return msgpack.packb(lir.to_dict(), use_bin_type=True)


def load(data: bytes) -> dict:
    return msgpack.unpackb(data, raw=False)


def graph(lir: Lir) -> dict:
    """The IR graph viewer's input: LIR commands and placed tensors as nodes; data edges between them,
    order edges for each context's sequence and for syncs (docs/lir.md)."""
    nodes: list[dict] = [
        {
            "id": b.name,
            "kind": "tensor",
            "label": f"{b.name} {b.dtype}",
            "memory": b.memory,
            "address": b.address,
            "bytes": b.bytes,
            "region": b.region,
            "levels": b.levels,
            "value": b.value,
        }
        for b in lir.buffers
    ]
    edges: list[dict] = []
    last_on: dict[str, str] = {}
    for c in lir.commands:
        node = f"C{c.index}"
        nodes.append(
            {
                "id": node,
                "kind": "command",
                "label": f"{c.opcode} ({c.context})",
                "command": c.kind,
                "context": c.context,
                "op": c.op,
                "loc": c.loc,
            }
        )
        edges += [{"from": b, "to": node, "kind": "data"} for b in c.inputs]
        edges += [{"from": node, "to": b, "kind": "data"} for b in c.outputs]
        edges += [{"from": f"C{w}", "to": node, "kind": "sync"} for w in c.waits]
        if c.context != "none":
            if c.context in last_on:
                edges.append({"from": last_on[c.context], "to": node, "kind": "order"})
            last_on[c.context] = node
    return {"format": "furiosa-opt-lir-graph", "version": 1, "kernel": lir.kernel, "nodes": nodes, "edges": edges}
