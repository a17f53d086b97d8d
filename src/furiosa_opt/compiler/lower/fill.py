"""What each command holds once placement has given every buffer its address: a DMA's or a memset's walk,
a gather's or scatter's indirect walk, and an exec command's fetch and commit sequencers and one config
per engine stage.

Lowering an op makes its command and notes what the command still needs (`Pending`); this is filled in
only after placement, which may reorder the commands. In a kept loop's body, the part of an address that
moves per pass is recorded as a runtime offset of the command's config (`KeptLoops`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Command, DmaWalk, FillWalk
from furiosa_opt.compiler.lower.addresses import (
    Layout,
    commit_sequencer,
    dma_loops,
    dma_segments,
    dram_layout,
    fetch_sequencer,
    indirect,
    sram_layout,
    to_bytes,
)
from furiosa_opt.compiler.lower.buffers import BufferTable
from furiosa_opt.compiler.lower.engines import ENCODED
from furiosa_opt.compiler.lower.kept import KeptLoops
from furiosa_opt.compiler.lower.opcodes import GATHER_OPS
from furiosa_opt.compiler.lower.sites import at
from furiosa_opt.compiler.lower.walks import ChainLayouts
from furiosa_opt.configs.records import EngineConfig, config_of
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import fill_pattern
from furiosa_opt.lang.tensors import HbmTensor, Tensor, TensorView
from furiosa_opt.mapping import Mapping, m
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.scalar import Scalar
from furiosa_opt.stages import STAGES, registered
from furiosa_opt.verify import indirect as verify_indirect


@dataclass
class Pending:
    """What a command still needs once buffers have addresses: the op it lowers, and what it moves from and
    to (a DMA; a memset's target) or its pipeline's ops (an exec command)."""

    op: visa.Op
    source: object = None
    target: object = None
    chain: list[visa.Op] = field(default_factory=list)
    segments: list[DmaWalk] = field(default_factory=list)  # a split move's later commands (`dma_segments`)


@dataclass(frozen=True)
class Filler:
    """Fills one command with the placed buffers of `table`; `index` names the kept loop whose body holds
    the command ("" for none), in which carried slots and moving views are runtime offsets."""

    table: BufferTable
    kept: KeptLoops
    index: str = ""

    def fill(self, pending: Pending, command: Command) -> None:
        """Fill `command` with what `pending` says it needs; a refusal points at the op's line."""
        if command.kind == "indirect":
            with at(pending.op):
                command.indirect = self.indirect(pending.op)
        elif command.kind == "memset":
            with at(pending.op):
                self.fill_memset(pending, command)
        elif command.kind in ("dma", "pcopy"):
            with at(pending.op):
                self.fill_dma(pending, command)
        else:
            self.fill_exec(pending.chain, command)

    # ---- addresses ----

    def layout(self, obj: object) -> Layout:
        """Where `obj` (a tensor or a view of one) lies, with the address a command outside any loop sees
        (in a loop's body, what moves per pass is an offset: `moving`)."""
        if isinstance(obj, TensorView):
            base = self.layout(obj.base)
            digits = np.unravel_index(obj.window, [level.size for level in obj.base.params])  # one per level
            shift = sum(int(d) * unit for d, unit in zip(digits, base.units, strict=True))
            shift = to_bytes(shift, obj.dtype, "the view's window")
            return Layout((*obj.outer, obj.element), base.units, base.base + shift, obj.dtype)
        tensor: Tensor = obj
        shift = self.shift(tensor)
        address = self.table.buffer_of(tensor).address + (shift if isinstance(shift, int) else 0)
        if isinstance(tensor, HbmTensor):
            return dram_layout(tensor.params, tensor.dtype, address)
        return sram_layout(tensor.params, tensor.dtype, address)

    def shift(self, obj: object) -> Scalar | int:
        """The bytes past its buffer's address where `obj` (a tensor or a view of one) starts: its slot, a
        runtime value in the body of the loop that carries it."""
        tensor = obj.base if isinstance(obj, TensorView) else obj
        return self.kept.slot(self.table.value_of(tensor), self.index) * self.table.buffer_of(tensor).bytes

    def travel(self, obj: object) -> Scalar | int:
        """The bytes a view moves by per pass, times the index (`KeptLoops.travel`; 0 for a tensor)."""
        if not isinstance(obj, TensorView):
            return 0
        return self.kept.travel(self.table.value_of(obj), self.index, lambda view: self.layout(view).base)

    def moving(self, command: Command, path: str, obj: object) -> None:
        """Record the runtime part of the address at `path` of the command's config, if `obj` has one."""
        parts = [part for part in (self.shift(obj), self.travel(obj)) if isinstance(part, Scalar) or part]
        shift = parts[0] + parts[1] if len(parts) == 2 else parts[0] if parts else 0
        if isinstance(shift, Scalar):
            command.offsets.append((path, shift.program([self.index])))

    # ---- by kind of command ----

    def fill_memset(self, pending: Pending, command: Command) -> None:
        """The DMA walk of the target's live cells, with no source."""
        target = self.layout(pending.target)
        packet, loops = dma_loops(target, target, "memset")
        code = pending.op.attr("code") if pending.op.opcode == "memset" else 0  # 0: a fresh tensor's clear
        command.fill = FillWalk(target.base, packet, loops, fill_pattern(code, target.dtype))
        self.moving(command, "fill.base", pending.target)

    def fill_dma(self, pending: Pending, command: Command) -> None:
        """The DMA descriptor moving the source's live cells into the target (`addresses.dma_loops`)."""
        src, dst = self.layout(pending.source), self.layout(pending.target)
        whole = not isinstance(pending.target, TensorView)
        walks = [DmaWalk(src.base + g.src, dst.base + g.dst, g.packet, g.loops)
                 for g in dma_segments(src, dst, pending.op.opcode, whole)]  # fmt: skip
        if len(walks) > 1 and self.index:
            raise VerifyError(
                "dma-segments",
                f"{pending.op.opcode}: the move needs {len(walks)} DMA commands (an axis does not divide over its "
                "loops), which a kept device loop's body cannot hold",
                notes=("pad the axis on both sides of the move, or loop with Python's `range` (unrolled when traced)",),
            )
        command.dma, pending.segments = walks[0], walks[1:]
        self.moving(command, "dma.src_base", pending.source)
        self.moving(command, "dma.dst_base", pending.target)

    def indirect(self, op: visa.Op) -> dict:
        """A gather's or scatter's config: the row walk and the index cells (`addresses.indirect`)."""
        objects = self.table.objects
        gather = op.opcode in GATHER_OPS
        moved, index = objects[op.operands[0]], objects[op.operands[1]]
        if gather:
            result = objects[op.results[0].name]
            axes = verify_indirect.gather(moved.storage, index.storage, result.storage)
            indexed, direct = self.layout(moved), self.layout(result)
        else:
            output = objects[op.operands[2]]
            spatial = pair(moved.params[2], moved.params[3])
            axes = verify_indirect.scatter(moved.storage, spatial, op.attr("key"), index.storage, output.storage)
            indexed, direct = self.layout(output), self.layout(moved)
        scaled = not op.opcode.endswith("unscaled")
        divisor = axes.row * moved.dtype.bits // 8 if scaled else 1
        return indirect(indexed, direct, self.layout(index), axes, gather, divisor, op.opcode)

    def fill_exec(self, chain: list[visa.Op], command: Command) -> None:
        """A pipeline's fetch sequencer, one config per stage after it, and its commit sequencer."""
        objects = self.table.objects
        begin, fetch, terminal = chain[0], chain[1], chain[-1]
        view = objects[begin.operands[0]]
        pair_mode = begin.opcode == "begin_interleaved"  # the selector picks one of two DM tensors
        with at(fetch):  # a fetch the sequencer cannot walk is the fetch line's fault
            command.fetch = fetch_sequencer(
                self.table.base_of(begin.operands[0]),
                self.layout(view).base,
                view.dtype,
                begin.attr("axis") if pair_mode else m["1"],
                view.element,
                fetch.attr("time"),
                fetch.attr("packet"),
                command.context,
                [self.layout(objects[name]).base for name in begin.operands] if pair_mode else None,
            )
            self.moving(command, "fetch.base", view)
            for k, name in enumerate(begin.operands if pair_mode else ()):
                self.moving(command, f"fetch.interleave.{k}", objects[name])
        with at(terminal):
            layouts = ChainLayouts()  # the layouts of this pipeline, as its engines see them
            command.engines = [self.engine(op, command, layouts) for op in chain[1:]]
            if terminal.opcode in ("commit", "commit_view"):
                self.fill_commit(terminal, command)

    def fill_commit(self, terminal: visa.Op, command: Command) -> None:
        """The commit sequencer writing the stream into its target."""
        objects = self.table.objects
        stream = objects[terminal.operands[0]]
        view = terminal.opcode == "commit_view"
        target = objects[terminal.operands[1]] if view else objects[terminal.results[0].name]
        element = target.element if isinstance(target, TensorView) else target.params[3]
        command.commit = commit_sequencer(
            command.outputs[0],
            self.layout(target).base,
            stream.dtype,
            stream.time,
            stream.packet,
            element,
            command.context,
        )
        self.moving(command, "commit.base", target)

    def engine(self, op: visa.Op, command: Command, layouts: ChainLayouts) -> EngineConfig:
        """A stage's config (`configs.records`): its attributes as numbers (`ENCODED`), what the engine
        needs beyond them (its stage's `lowering` handler), its layouts (`walks.py`) and, when it reads a
        register file (a TRF for `contract_outer`, a VRF for a Vector Engine operand), which of the
        command's inputs that is."""
        objects = self.table.objects
        config: dict = {"stage": op.opcode}
        for key, value in op.attrs:
            if not isinstance(value, Mapping):  # layouts reach the engines as numbers (walks.py)
                config.update(ENCODED[key](value, objects[op.operands[0]]))
        operands = self.table.operand_buffers(op)
        if STAGES[op.opcode].rf is not None:
            config["rf"] = command.inputs.index(operands[0]) if operands else -1
        if op.opcode in registered("lowering"):  # what the engine needs beyond its attributes (switch routing…)
            config.update(STAGES[op.opcode].handler("lowering")(objects[op.operands[0]], op))
        config.update(layouts.fields(op, objects, objects[op.operands[1]] if operands else None))
        return config_of(config)
