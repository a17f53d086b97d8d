"""Stage 2: vISA → LIR. Buffers are placed, every DMA gets a descriptor, every Tensor Unit pipeline
(begin … commit / to_trf / to_vrf) becomes one exec command with its fetch and commit sequencers and
one config per engine stage, and syncs order commands across contexts (see docs/lowering.md).

This module wires the steps, each a module of its own: which loops to keep (`loops.py`), the buffer
table (`buffers.py`), the kept loops' runtime state (`kept.py`), the command list (`ops.py`), placement
(`placement.py`), filling each command once placed (`fill.py`), then syncs and lifetimes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Command, Lir, LoopRegion
from furiosa_opt.compiler.lower.buffers import BufferTable
from furiosa_opt.compiler.lower.fill import Filler, Pending
from furiosa_opt.compiler.lower.kept import KeptLoops, Unkeepable
from furiosa_opt.compiler.lower.lifetimes import lifetimes
from furiosa_opt.compiler.lower.loops import plan_loops
from furiosa_opt.compiler.lower.ops import OpLowering
from furiosa_opt.compiler.lower.syncs import with_syncs
from furiosa_opt.compiler.replay import replay_objects


class Lowering:
    """One attempt at lowering `kernel`, with the loops in `forced` (by op index) unrolled for the reason
    given: the kernel replayed with the other loops kept where their bodies run as they are, and the
    steps that make its LIR (`run`)."""

    def __init__(self, kernel: visa.Kernel, root: Path | None = None, forced: dict[int, str] | None = None):
        keep, self.unrolled = plan_loops(kernel.ops, forced or {})
        origins: list[int] = []  # the kernel's op behind each replayed op
        self.ir, objects = replay_objects(kernel, unroll=True, keep=keep, origins=origins)
        self.table = BufferTable(objects)
        self.kept = KeptLoops(origins)
        self.ops = OpLowering(self.ir, self.table, self.kept, root)

    def run(self) -> Lir:
        """The LIR; `Unkeepable` if a kept loop turns out to need unrolling."""
        ir, table, kept, ops = self.ir, self.table, self.kept, self.ops
        args = [ops.buffer(value, None) for value in ir.args]
        for op in ir.ops:
            ops.lower(op)
        results = [table.base_of(name) for name in ir.returns]
        ops.clear_unwritten()
        ops.place(results)
        for command in ops.commands:
            if command.kind != "view":
                Filler(table, kept, kept.enclosing(command)).fill(ops.pending[id(command)], command)
        ops.arrange([part for command in ops.commands for part in _segmented(command, ops.pending.get(id(command)))])
        commands = with_syncs(ops.commands, table.buffers)
        lifetimes(table.buffers, commands, kept.loops, results)
        lir = Lir(ir.identity, ir.chip, ir.pe, list(table.buffers.values()), commands, args, results)
        lir.axes = [(axis.name, axis.size) for axis in ir.axes]
        lir.leaves = [(ir.path(i), value.type.kind) for i, value in enumerate(ir.args)]
        lir.loops = [LoopRegion(first.index, last.index, count, index) for first, last, count, index in kept.loops]
        lir.unrolled = self.unrolled
        return lir


def _segmented(command: Command, pending: Pending | None) -> list[Command]:
    """A DMA command, followed by one command per further segment of a move that needed several
    (`addresses.dma_segments`): the same op, buffers and guard, each with its own descriptor."""
    later = pending.segments if pending is not None else []
    return [command, *(replace(command, dma=walk, inputs=list(command.inputs), outputs=list(command.outputs))
                       for walk in later)]  # fmt: skip


def lower(kernel: visa.Kernel, root: Path | None = None) -> Lir:
    """The LIR of `kernel`; a device loop found unkeepable while it is lowered is unrolled, and the kernel
    lowered again (at most once per loop)."""
    forced: dict[int, str] = {}
    while True:
        try:
            return Lowering(kernel, root, forced).run()
        except Unkeepable as error:
            forced[error.loop] = error.why
