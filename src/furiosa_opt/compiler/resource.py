"""ResourceLir: each LIR command with the resources it occupies and its cost in cycles.

Every number comes from `arch.RNGD`; every formula is written out in docs/cost-model.md. A Tensor DMA is
priced by the memory model from its own address streams (`memsys.dma`: its engines, DMNs, DM slices and
HBM channels, which reproduces the book's DMA examples: HBM→HBM 628, HBM→DM 66,036, DM→DM 131,572, the row
conflicts of Example 4, the missing stack bit of Example 5); a Tensor Unit pipeline from its fetch, flit
and commit counts and the DM banks its fetch and commit hold. A command's cycles are its latency plus
the largest of these loads, which is its time alone; `shared` keeps the loads for the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import (
    CHIP_STRIDE,
    DM_BASE,
    SLICE_STRIDE,
    Buffer,
    Command,
    Lir,
    Sequencer,
    walk_dma,
    walk_sequencer,
)
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.dtypes import dtype_by_name
from furiosa_opt.memsys.dm import SLICES
from furiosa_opt.memsys.dma import DmaCost, Side, dma_cost
from furiosa_opt.memsys.stats import bank_runs, starves_dma
from furiosa_opt.stages import VECTOR

# Tensor Unit pipelines: cycles to fill the fetch → compute → commit pipe once (not documented upstream).
PIPELINE_FILL = 32
LANE_CONTEXTS = {"main": "MainContext", "sub": "SubContext", "tdma": "DmaEngine", "pdma": "PcieDma"}
LANE_TYPES = {"main": "Main", "sub": "Sub", "tdma": "Dma", "pdma": "DmaPcie"}  # schedule-JSON instruction types
ROUTE_NAMES = {
    ("dram", "sram"): "HBM→DM",
    ("sram", "dram"): "DM→HBM",
    ("dram", "dram"): "HBM→HBM",
    ("sram", "sram"): "DM→DM",
}


@dataclass
class Costed:
    command: Command
    cycles: int
    resources: tuple[str, ...]  # main, sub, ve, tdma, pdma
    contexts: tuple[str, ...]  # schedule-JSON context names
    tpe: str  # schedule-JSON instruction type
    route: str = ""  # DMA route, for the summary
    moved: int = 0  # bytes a DMA moves
    notes: list[str] = field(default_factory=list)
    price: DmaCost | None = None  # a Tensor DMA's memory-model price, which `cycles` is
    latency: int = 0  # cycles before the command's work starts (DMA startup, pipeline fill)
    # Cycles each shared unit spends on the command alone, by kind ("dma engine", "hbm channel" chip-major;
    # "dm bank": the 16 banks of a slice). `cycles` is the latency plus the work, which is at least each of
    # these; the simulator shares them between commands that run at once (`sim.timing`).
    shared: dict[str, np.ndarray] = field(default_factory=dict)
    # A Tensor Unit command's longest run of consecutive accesses holding each DM bank of a slice (the
    # 64-access rule: `compiler.hazards`); None for other commands.
    runs: np.ndarray | None = None

    @property
    def work(self) -> int:
        """Cycles after the latency, alone: the slowest of the command's stages and shared units."""
        return self.cycles - self.latency


def memory_side(buffer: Buffer, addresses: np.ndarray) -> Side:
    """A DMA side as the memory model reads it: HBM addresses per chip, DM addresses from the DM base."""
    if buffer.memory == "dram":
        chip, local = np.divmod(addresses, CHIP_STRIDE)
        return Side("hbm", chip, local)
    chip, local = np.divmod(addresses - DM_BASE, SLICE_STRIDE * SLICES)
    return Side("dm", chip, local)


def dma_cost_of(command: Command, source: Buffer, target: Buffer) -> DmaCost:
    """The memory model's price of a DMA command (`memsys.dma`), from every packet's two addresses."""
    dma = command.dma
    src, dst = walk_dma(dma.src_base, dma.dst_base, dma.packet, dma.loops, dma.packet)
    return dma_cost(memory_side(source, src), memory_side(target, dst), dma.packet)


def _indirect_cycles(command: Command) -> tuple[int, int]:
    """(cycles, bytes) of a gather or scatter: every index cell's row in 256-byte bursts, plus startup."""
    config = command.indirect
    packets = len(config.entries) * math.prod(loop.size for loop in config.loops)
    return packets * -(-config.packet // RNGD.dma_burst_bytes) + RNGD.dma_startup_cycles, packets * config.packet


def _pcie_cycles(command: Command) -> tuple[int, int]:
    moved = math.prod(loop.size for loop in command.dma.loops) * command.dma.packet
    return -(-moved // RNGD.pcie_bytes_per_cycle) + RNGD.dma_startup_cycles, moved


def _steps(sequencer: Sequencer) -> tuple[int, int]:
    """(stream time steps, packet elements) a sequencer walks."""
    time = math.prod(e.size for e in sequencer.time)
    packet = math.prod(e.size for e in sequencer.packet)
    return time, packet


def switch_cycles(config: EngineConfig) -> int:
    """The book's Switch Engine estimate: `ring_size × Time::SIZE × flits_per_packet` (input time; all
    sub-rings run in parallel)."""
    return config.ring * config.in_steps * config.flits


def transpose_cycles(config: EngineConfig) -> int:
    """The book's Transpose Engine latency: `n` matrices of `in_rows × packets_per_col` input flits and
    `out_rows` output flits; double buffering (in_cols fits one buffer) overlaps input with output."""
    in_flits, out_rows, n = config.in_rows * config.packets_per_col, config.out_rows, config.iterations
    if config.in_cols <= RNGD.transpose_buffer_cols:
        return in_flits + (n - 1) * max(in_flits, out_rows) + out_rows
    return n * (in_flits + out_rows)


def inter_slice_reduce_cycles(config: EngineConfig) -> int:
    """The book's inter-slice reducer: the input streams through (one flit a step), then a tail of about
    one ring traversal of the reduction group (`ratio` slices)."""
    return config.in_steps + config.ratio


ENGINE_CYCLES = {  # engines with a latency of their own
    "switch": switch_cycles,
    "transpose": transpose_cycles,
    "vector_inter_slice_reduce": inter_slice_reduce_cycles,
}


def _accesses(sequencer: Sequencer, element_bytes: int) -> int:
    """How many accesses a fetch or commit stream makes: its time steps times the accesses of a packet."""
    time, packet = _steps(sequencer)
    return time * max(1, -(-packet * element_bytes // sequencer.access))


def _streams(command: Command) -> list[tuple[Sequencer, int]]:
    """An exec command's DM streams with their walk's memory: the fetch (1) and the commit (0), if any."""
    return [(command.fetch, 1)] + ([(command.commit, 0)] if command.commit is not None else [])


def _pipeline_cycles(command: Command, element_bytes: int) -> int:
    """max(fetch, flits, commit, switch, transpose): the stages stream concurrently."""
    time, packet = _steps(command.fetch)
    flits = time * max(1, -(-packet * element_bytes // RNGD.flit_bytes))
    streams = [_accesses(sequencer, element_bytes) for sequencer, _ in _streams(command)]
    engines = [ENGINE_CYCLES[e.stage](e) for e in command.engines if e.stage in ENGINE_CYCLES]
    return max(flits, *streams, *engines)


def held_banks(sequencer: Sequencer, memory: int, element_bytes: int, sample: int = 4096) -> np.ndarray:
    """Which of a slice's 16 DM banks each of a fetch or commit stream's first `sample` accesses holds
    (access × bank; every slice runs the same stream): an access holds each bank its bytes fall in."""
    step = max(1, sequencer.access // element_bytes)
    word = walk_sequencer(sequencer, memory, sample * step)[::step] // RNGD.dm_bank_width_bytes
    words = -(-sequencer.access // RNGD.dm_bank_width_bytes)
    return (np.arange(RNGD.dm_banks_per_slice) - word[:, None]) % RNGD.dm_banks_per_slice < words


def exec_banks(command: Command, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """What an exec command's fetch and commit streams do to each DM bank of a slice, from each stream's
    first 4096 accesses: the cycles it is held (an access holds its banks for a cycle, scaled to the whole
    stream) and the longest run of consecutive accesses holding it (the larger of the fetch's and the
    commit's: one pipeline, each held back by the other)."""
    cycles, runs = np.zeros(RNGD.dm_banks_per_slice), np.zeros(RNGD.dm_banks_per_slice, np.int64)
    for sequencer, memory in _streams(command):
        held = held_banks(sequencer, memory, element_bytes)
        cycles = cycles + held.sum(axis=0) * (_accesses(sequencer, element_bytes) / max(len(held), 1))
        runs = np.maximum(runs, bank_runs(held, np.zeros(len(held), np.int64)))
    return cycles, runs


def cost(lir: Lir) -> list[Costed]:
    """ResourceLir: every non-view command with its resources and cycles (views and syncs cost 0)."""
    buffers = {b.name: b for b in lir.buffers}
    out = []
    for command in lir.commands:
        if command.kind in ("view", "sync"):
            contexts = ("Noop",)
            out.append(Costed(command, 0, (), contexts, "Noop"))
            continue
        if command.kind == "dma":
            source, target = buffers[command.inputs[0]], buffers[command.outputs[0]]
            route = ROUTE_NAMES.get((source.memory, target.memory), f"{source.memory}→{target.memory}")
            if command.context == "pdma":
                cycles, moved = _pcie_cycles(command)
                out.append(Costed(command, cycles, ("pdma",), ("PcieDma",), "DmaPcie", route, moved))
                continue
            price = dma_cost_of(command, source, target)
            moved = math.prod(loop.size for loop in command.dma.loops) * command.dma.packet
            tpe = {"HBM→DM": "DmaLoad", "DM→HBM": "DmaStore"}.get(route, "Dma")
            shared = {
                "dma engine": price.engine_cycles,
                "hbm channel": price.channel_cycles,
                "dm bank": np.full(RNGD.dm_banks_per_slice, price.slice_cycles),  # a DMA request holds all 16
            }
            out.append(Costed(command, price.cycles, ("tdma",), ("DmaEngine",), tpe, route, moved, price=price,
                              latency=RNGD.dma_startup_cycles, shared=shared))  # fmt: skip
            continue
        if command.kind == "indirect":  # one row move per index cell, on the DMA engines
            cycles, moved = _indirect_cycles(command)
            source, target = buffers[command.inputs[0]], buffers[command.outputs[0]]
            route = ROUTE_NAMES.get((source.memory, target.memory), f"{source.memory}→{target.memory}")
            out.append(Costed(command, cycles, ("tdma",), ("DmaEngine",), "Dma", f"{route} indirect", moved))
            continue
        if command.kind == "pcopy":  # every slice copies its part at the sub context's access width
            cycles = -(-buffers[command.outputs[0]].bytes // RNGD.sub_access_bytes) + PIPELINE_FILL
            moved = math.prod(loop.size for loop in command.dma.loops) * command.dma.packet
            out.append(Costed(command, cycles, ("sub",), ("SubContext",), "Sub", "DM→DM parallel copy", moved))
            continue
        if command.kind == "memset":  # every slice writes its region at the sub context's write width
            cycles = -(-buffers[command.outputs[0]].bytes // RNGD.sub_access_bytes) + PIPELINE_FILL
            lane = command.context  # the queue the binary issues it in (stage 2's zero fills: tdma)
            out.append(Costed(command, cycles, (lane,), (LANE_CONTEXTS[lane],), LANE_TYPES[lane]))
            continue
        element_bytes = max(1, dtype_by_name(buffers[command.inputs[0]].dtype).bits // 8)
        banks, runs = exec_banks(command, element_bytes)
        cycles = PIPELINE_FILL + max(_pipeline_cycles(command, element_bytes), math.ceil(banks.max()))
        uses_ve = any(e.stage in VECTOR for e in command.engines)  # the stage table's Vector Engine stages
        resources = [command.context] + (["ve"] if uses_ve else [])
        contexts = [LANE_CONTEXTS[command.context]] + (["VectorEngine"] if uses_ve else [])
        costed = Costed(command, cycles, tuple(resources), tuple(contexts), LANE_TYPES[command.context],
                        latency=PIPELINE_FILL, shared={"dm bank": banks}, runs=runs)  # fmt: skip
        run = int(runs.max())
        if starves_dma(run):  # the 64-access rule: no DMA may run beside it
            costed.resources += ("tdma",)
            costed.contexts += ("DmaEngine",)
            costed.notes.append(f"{run} consecutive accesses to one DM bank: scheduled as occupying DMA")
        out.append(costed)
    return out
