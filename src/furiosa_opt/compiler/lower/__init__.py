"""Stage 2: vISA → LIR. Buffers are placed, every DMA gets a descriptor, every Tensor Unit pipeline
(begin … commit / to_trf / to_vrf) becomes one exec command with its fetch and commit sequencers and
one config per engine stage, and syncs order commands across contexts (see docs/lowering.md)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path

import numpy as np

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Buffer, Command, DmaWalk, FillWalk, Lir, LoopRegion
from furiosa_opt.compiler.lower.addresses import (
    Layout,
    commit_sequencer,
    dma_loops,
    dram_layout,
    fetch_sequencer,
    indirect,
    sram_layout,
    to_bytes,
)
from furiosa_opt.compiler.lower.coverage import read_unwritten
from furiosa_opt.compiler.lower.engines import ENCODED
from furiosa_opt.compiler.lower.lifetimes import lifetimes
from furiosa_opt.compiler.lower.loops import plan_loops
from furiosa_opt.compiler.lower.opcodes import DMA_OPS, GATHER_OPS, PCOPY_OPS, SCATTER_OPS, VIEW_OPS
from furiosa_opt.compiler.lower.placement import place_in_fitting_order
from furiosa_opt.compiler.lower.syncs import with_syncs
from furiosa_opt.compiler.lower.walks import ChainLayouts
from furiosa_opt.compiler.replay import MEMORY_REPLAY, region_end, replay_objects
from furiosa_opt.configs.records import EngineConfig, config_of
from furiosa_opt.diagnostics import Location, VerifyError
from furiosa_opt.dtypes import fill_pattern
from furiosa_opt.lang.tensors import DmTensor, HbmTensor, Tensor, TensorView, TrfTensor, VrfTensor
from furiosa_opt.mapping import Mapping, m, views
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.scalar import Scalar
from furiosa_opt.stages import ENDS, STAGES, registered
from furiosa_opt.verify import indirect as verify_indirect

TERMINALS = ENDS  # the stages that end a pipeline (the stage table's)
MEMORY = {HbmTensor: "dram", DmTensor: "sram", TrfTensor: "trf", VrfTensor: "vrf"}


@dataclass
class _Pending:
    """What a command still needs once buffers have addresses."""

    op: visa.Op
    source: object = None
    target: object = None
    chain: list[visa.Op] = field(default_factory=list)


@dataclass
class _Loop:
    """A kept device loop while its body is lowered."""

    index: Scalar
    count: int
    first: int  # the first command of the body
    back: dict[str, str]  # back-edge value → the `carried` value it becomes on the next pass
    origin: int  # the `loop` op's index in the kernel
    guards: list[Scalar] = field(default_factory=list)  # the `if` conditions open here


class _Unkeepable(Exception):
    """A kept loop turned out to need unrolling: `loop` is its op index in the kernel, `why` the reason."""

    def __init__(self, loop: int, why: str):
        super().__init__(why)
        self.loop, self.why = loop, why


class _Lowering:
    def __init__(self, kernel: visa.Kernel, root: Path | None, forced: dict[int, str] | None = None):
        keep, self.unrolled = plan_loops(kernel.ops, forced or {})  # loops: kept where the body runs as it is
        self.origins: list[int] = []  # the kernel's op behind each replayed op
        self.ir, self.objects = replay_objects(kernel, unroll=True, keep=keep, origins=self.origins)
        self.per_pass: dict[str, list[TensorView]] = {}  # a view that moves per pass → the view on each pass
        self.loop: _Loop | None = None  # the kept loop being lowered
        self.loops: list[tuple[Command, Command, int, str]] = []  # (first, last command, count, index)
        self.slot: dict[str, tuple[Scalar | int, int]] = {}  # carried value → (slot in the loop, slot after)
        self.looped = False  # the command being filled is in a kept loop's body
        self.looped_index = ""  # … and that loop's index
        self.origin: dict[int, int] = {}  # id(a kept loop's first command) → its `loop` op in the kernel
        self.root = root
        self.buffers: dict[str, Buffer] = {}
        self.of_value: dict[str, str] = {}  # vISA value → buffer name
        self.where: dict[str, Location | None] = {}
        self.commands: list[Command] = []
        self.pending: list[_Pending] = []
        self.chain = ChainLayouts()  # the layouts of the pipeline being filled, as its engines see them
        self.producer = {v.name: op for op in self.ir.ops for v in op.results}
        self.op_index = {id(op): i for i, op in enumerate(self.ir.ops)}
        self._names: dict[int, str] | None = None  # id(object) → value name, for layouts

    # ---- buffers ----

    def buffer(self, value: visa.Value, op: visa.Op | None) -> str:
        if self.loop is not None and value.name in self.loop.back:  # the other slot of the carried value's
            head = self.loop.back[value.name]
            name = self.of_value[value.name] = self.of_value[head]
            self.slot[value.name] = (1 - self.slot[head][0], (self.loop.count + self.slot[head][1]) % 2)
            return name
        tensor = self.objects[value.name]
        name = f"T{len(self.buffers)}"
        if isinstance(tensor, TensorView):  # a view argument: the window the runtime binds at launch
            self.objects[f"{value.name}.base"] = tensor.base
            self.of_value[f"{value.name}.base"] = name
            count = _window_extent(tensor)
            tensor = tensor.base
        else:
            per_slice = tensor.params[-1].size * (tensor.params[3].size if isinstance(tensor, TrfTensor) else 1)
            count = tensor.storage.size if isinstance(tensor, HbmTensor) else per_slice
        memory = MEMORY[type(tensor)]
        self.buffers[name] = Buffer(
            name,
            value.name,
            memory,
            tensor.dtype.name,
            [str(p) for p in tensor.params],
            0,
            tensor.dtype.nbytes(count),  # whole bytes: the language refuses a 4-bit tensor that is not
            -1 if op is None else len(self.commands),
            -1,
            chips=tensor.params[0].size if memory == "dram" else 1,
        )
        self.of_value[value.name] = name
        self.where[name] = _location(op) if op else None
        return name

    def base_of(self, name: str) -> str:
        return self.of_value[name]

    # ---- commands ----

    def command(self, op: visa.Op, context: str, kind: str, inputs: list[str], outputs: list[str]) -> Command:
        loc = _loc_text(op.loc, self.root)
        command = Command(len(self.commands), context, kind, self.op_index[id(op)], op.opcode, loc, inputs, outputs)
        if self.loop is not None and self.loop.guards:
            guard = math.prod(self.loop.guards[1:], start=self.loop.guards[0])
            command.guard = guard.program([self.loop.index.args[0]])
        self.commands.append(command)
        return command

    def run(self) -> Lir:
        args = [self.buffer(v, None) for v in self.ir.args]
        for op in self.ir.ops:
            self.lower_op(op)
        results = [self.base_of(name) for name in self.ir.returns]
        self.clear_unwritten()
        self.place_buffers(results)
        for pending, command in zip(self.pending, [c for c in self.commands if c.kind != "view"], strict=True):
            inside = [index for first, last, _, index in self.loops if first.index <= command.index <= last.index]
            self.looped, self.looped_index = bool(inside), inside[0] if inside else ""
            self.fill(pending, command)
        commands = with_syncs(self.commands, self.buffers)
        lifetimes(self.buffers, commands, self.loops, results)
        lir = Lir(self.ir.identity, self.ir.chip, self.ir.pe, list(self.buffers.values()), commands, args, results)
        lir.axes = [(axis.name, axis.size) for axis in self.ir.axes]
        lir.leaves = [(self.ir.path(i), value.type.kind) for i, value in enumerate(self.ir.args)]
        lir.loops = [LoopRegion(first.index, last.index, count, index) for first, last, count, index in self.loops]
        lir.unrolled = self.unrolled
        return lir

    # ---- placement ----

    def clear_unwritten(self) -> None:
        """A memset of zeros for each fresh DM tensor the kernel reads at a cell nothing wrote
        (`coverage.read_unwritten`), where the CPU backend reads zeros: just before the first command that
        touches the tensor, or before the kept loop that command is in."""
        made = {op.results[0].name: op for op in self.ir.ops if op.opcode == "dm_new"}
        fresh = {self.of_value[value]: self.objects[value] for value in made}
        pending = self.pending_by_command()
        for name in read_unwritten(self.ir.ops, self.objects, self.of_value, self.per_pass, fresh):
            op = made[self.buffers[name].value]
            at = next(c.index for c in self.commands if c.kind != "view" and name in (*c.inputs, *c.outputs))
            at = next((first.index for first, last, _, _ in self.loops if first.index <= at <= last.index), at)
            loc = _loc_text(op.loc, self.root)
            clear = Command(at, "tdma", "memset", self.op_index[id(op)], "memset", loc, [], [name])
            pending[id(clear)] = _Pending(op, target=fresh[name])
            self.arrange([*self.commands[:at], clear, *self.commands[at:]], pending)

    def place_buffers(self, results: list[str]) -> None:
        """Place every buffer, in the written order of the commands or in the nearest one that fits
        (`placement.place_in_fitting_order`), which then becomes the command list."""
        pending = self.pending_by_command()
        order = place_in_fitting_order(self.commands, self.loops, self.buffers, self.where, results)
        if order is not None:
            self.arrange(order, pending)
            self.loops.sort(key=lambda loop: loop[0].index)

    def pending_by_command(self) -> dict[int, _Pending]:
        """What each command still needs once buffers have addresses, by the command's id."""
        return dict(zip((id(c) for c in self.commands if c.kind != "view"), self.pending, strict=True))

    def arrange(self, commands: list[Command], pending: dict[int, _Pending]) -> None:
        """`commands` become the command list: each command's index is its place in it, and the pending
        work follows its command."""
        self.commands = commands
        for index, command in enumerate(commands):
            command.index = index
        self.pending = [pending[id(c)] for c in commands if c.kind != "view"]

    # ---- kept device loops ----

    def open_loop(self, op: visa.Op) -> None:
        end = region_end(self.ir.ops, self.op_index[id(op)])
        body = self.ir.ops[self.op_index[id(op)] + 1 : end]
        heads = [o.results[0].name for o in takewhile(lambda o: o.opcode == "carried", body)]
        back = dict(zip(self.ir.ops[end].operands, heads, strict=True))
        index = Scalar("index", (op.results[0].name, op.attr("count")))  # what runtime scalars read
        self.loop = _Loop(index, op.attr("count"), len(self.commands), back, self.origins[self.op_index[id(op)]])

    def carry(self, op: visa.Op) -> None:
        """A carried value: pass k reads the slot of its first value's buffer where the value before the
        loop is (slot 0, or where an earlier loop left it) on even passes, the other slot on odd ones."""
        name = self.of_value[op.results[0].name] = self.base_of(op.operands[0])
        self.buffers[name].slots = 2
        start = self.slot.get(op.operands[0], (0, 0))[1]
        self.slot[op.results[0].name] = ((self.loop.index + start) % 2 if start else self.loop.index % 2, start)

    def close_loop(self) -> None:
        loop, self.loop = self.loop, None
        if len(self.commands) > loop.first:  # a body that moves nothing needs no loop
            self.loops.append((self.commands[loop.first], self.commands[-1], loop.count, loop.index.args[0]))
            self.origin[id(self.commands[loop.first])] = loop.origin

    def passes_of(self, op: visa.Op) -> None:
        """A view that moves per pass (a runtime start, or made from a view that moves): the view each pass
        sees, made as tracing would with the index bound."""
        loop = self.loop
        name = loop.index.args[0]
        operand = op.operands[0]
        sources = self.per_pass.get(operand, [self.objects[operand]] * loop.count)
        self.per_pass[op.results[0].name] = [
            MEMORY_REPLAY[op.opcode]([source], {key: _at_pass(value, name, k) for key, value in op.attrs})
            for k, source in enumerate(sources)
        ]

    def travel(self, obj: object) -> Scalar | int:
        """The bytes a view moves by per pass, times the index (0 for one that stays put); a view whose
        address is not the same step apart on every pass makes its loop one to unroll."""
        passes = self.per_pass.get(self._value_of(obj)) if isinstance(obj, TensorView) else None
        if passes is None:
            return 0
        bases = [self.layout(view).base for view in passes]
        step = bases[1] - bases[0] if len(bases) > 1 else 0
        if any(base != bases[0] + k * step for k, base in enumerate(bases)):
            first = next(loop[0] for loop in self.loops if loop[3] == self.looped_index)
            raise _Unkeepable(
                self.origin[id(first)], f"a view moves by unequal steps from pass to pass ({bases[:4]} … bytes)"
            )
        return Scalar("mul", (Scalar("index", (self.looped_index, len(bases))), step)) if step else 0

    def shift(self, obj: object) -> Scalar | int:
        """The bytes past its buffer's address where `obj` (a tensor or a view of one) starts: its slot, a
        runtime value in the body of the loop that carries it."""
        tensor = obj.base if isinstance(obj, TensorView) else obj
        inside, after = self.slot.get(self._value_of(tensor), (0, 0))
        return (inside if self.looped else after) * self.buffers[self.of_value[self._value_of(tensor)]].bytes

    def moving(self, command: Command, path: str, obj: object) -> None:
        """Record the runtime part of the address at `path` of the command's config, if `obj` has one."""
        parts = [part for part in (self.shift(obj), self.travel(obj)) if isinstance(part, Scalar) or part]
        shift = parts[0] + parts[1] if len(parts) == 2 else parts[0] if parts else 0
        if isinstance(shift, Scalar):
            command.offsets.append((path, shift.program([self.looped_index])))

    def lower_op(self, op: visa.Op) -> None:
        if op.opcode in VIEW_OPS:
            if self.loop is not None and (
                op.operands[0] in self.per_pass or any(isinstance(value, Scalar) for _, value in op.attrs)
            ):
                self.passes_of(op)
            base = self.base_of(op.operands[0])
            for value in op.results:
                self.of_value[value.name] = base
            self.command(op, "none", "view", [base], [])
        elif op.opcode in ("hbm_new", "dm_new"):
            self.buffer(op.results[0], op)
        elif op.opcode in DMA_OPS:
            self.lower_dma(op)
        elif op.opcode in GATHER_OPS:
            inputs = [self.base_of(name) for name in op.operands]
            self.command(op, "tdma", "indirect", inputs, [self.buffer(op.results[0], op)])
            self.pending.append(_Pending(op))
        elif op.opcode in SCATTER_OPS:
            output = self.base_of(op.operands[2])
            self.command(op, "tdma", "indirect", [self.base_of(n) for n in op.operands], [output])
            self.pending.append(_Pending(op))
        elif op.opcode == "memset":
            self.command(op, op.attr("ctx").name, "memset", [], [self.base_of(op.operands[0])])
            self.pending.append(_Pending(op, target=self.objects[op.operands[0]]))
        elif op.opcode in TERMINALS:
            self.lower_pipeline(op)
        elif op.opcode == "loop":
            self.open_loop(op)
        elif op.opcode == "carried":
            self.carry(op)
        elif op.opcode == "end_loop":
            self.close_loop()
        elif op.opcode == "if":
            self.loop.guards.append(op.attr("cond"))
        elif op.opcode == "end_if":
            self.loop.guards.pop()

    def lower_dma(self, op: visa.Op) -> None:
        source = self.objects[op.operands[0]]
        if not op.results:  # a move into a view (`to_dm_view`, `to_hbm_view`, `to_dm_view_pcopy`)
            target = self.objects[op.operands[1]]
            output = self.base_of(op.operands[1])
        else:
            target = self.objects[op.results[0].name]
            output = self.buffer(op.results[0], op)
        context = op.attr("ctx").name
        kind = "pcopy" if op.opcode in PCOPY_OPS else "dma"
        self.command(op, context, kind, [self.base_of(op.operands[0])], [output])
        self.pending.append(_Pending(op, source, target))

    def lower_pipeline(self, terminal: visa.Op) -> None:
        chain = [terminal]
        while chain[-1].opcode not in ("begin", "begin_interleaved"):
            chain.append(self.producer[chain[-1].operands[0]])
        chain.reverse()
        begin = chain[0]
        inputs = list(dict.fromkeys(self.base_of(name) for name in begin.operands))
        for op in chain[1:]:
            inputs += [self.base_of(name) for name in op.operands[1:] if name in self.of_value]
        if terminal.opcode == "commit_view":
            output = self.base_of(terminal.operands[1])
        else:
            output = self.buffer(terminal.results[0], terminal)
        self.command(terminal, begin.attr("ctx").name, "exec", inputs, [output])
        self.pending.append(_Pending(terminal, chain=chain))

    # ---- after placement ----

    def layout(self, obj: object) -> Layout:
        if isinstance(obj, TensorView):
            base = self.layout(obj.base)
            digits = np.unravel_index(obj.window, [level.size for level in obj.base.params])  # one per level
            shift = sum(int(d) * unit for d, unit in zip(digits, base.units, strict=True))
            shift = to_bytes(shift, obj.dtype, "the view's window")
            return Layout((*obj.outer, obj.element), base.units, base.base + shift, obj.dtype)
        tensor: Tensor = obj
        buffer = self.buffers[self.of_value[self._value_of(tensor)]]
        shift = self.shift(tensor)
        address = buffer.address + (shift if isinstance(shift, int) else 0)  # a runtime slot: `moving`
        if isinstance(tensor, HbmTensor):
            return dram_layout(tensor.params, tensor.dtype, address)
        return sram_layout(tensor.params, tensor.dtype, address)

    def _value_of(self, obj: object) -> str:
        """The first value name bound to `obj` (asked once buffers are made, so the map is built once)."""
        if self._names is None:
            self._names = {}
            for name, candidate in self.objects.items():
                self._names.setdefault(id(candidate), name)
        return self._names[id(obj)]

    def fill(self, pending: _Pending, command: Command) -> None:
        if command.kind == "indirect":
            with _at(pending.op):
                command.indirect = self.indirect(pending.op)
        elif command.kind == "memset":  # the DMA walk of the tensor's live cells, with no source
            with _at(pending.op):
                target = self.layout(pending.target)
                packet, loops = dma_loops(target, target, "memset")
                code = pending.op.attr("code") if pending.op.opcode == "memset" else 0  # 0: a fresh tensor's clear
                pattern = fill_pattern(code, target.dtype)
                command.fill = FillWalk(target.base, packet, loops, pattern)
                self.moving(command, "fill.base", pending.target)
        elif command.kind in ("dma", "pcopy"):
            with _at(pending.op):
                src, dst = self.layout(pending.source), self.layout(pending.target)
                whole = not isinstance(pending.target, TensorView)
                packet, loops = dma_loops(src, dst, pending.op.opcode, whole)
                command.dma = DmaWalk(src.base, dst.base, packet, loops)
                self.moving(command, "dma.src_base", pending.source)
                self.moving(command, "dma.dst_base", pending.target)
        else:
            self.fill_exec(pending.chain, command)

    def indirect(self, op: visa.Op) -> dict:
        """A gather's or scatter's config: the row walk and the index cells (`addresses.indirect`)."""
        gather = op.opcode in GATHER_OPS
        moved, index = self.objects[op.operands[0]], self.objects[op.operands[1]]
        if gather:
            result = self.objects[op.results[0].name]
            axes = verify_indirect.gather(moved.storage, index.storage, result.storage)
            indexed, direct = self.layout(moved), self.layout(result)
        else:
            output = self.objects[op.operands[2]]
            spatial = pair(moved.params[2], moved.params[3])
            axes = verify_indirect.scatter(moved.storage, spatial, op.attr("key"), index.storage, output.storage)
            indexed, direct = self.layout(output), self.layout(moved)
        scaled = not op.opcode.endswith("unscaled")
        divisor = axes.row * moved.dtype.bits // 8 if scaled else 1
        return indirect(indexed, direct, self.layout(index), axes, gather, divisor, op.opcode)

    def fill_exec(self, chain: list[visa.Op], command: Command) -> None:
        begin, fetch, terminal = chain[0], chain[1], chain[-1]
        view = self.objects[begin.operands[0]]
        pair_mode = begin.opcode == "begin_interleaved"  # the selector picks one of two DM tensors
        with _at(fetch):  # a fetch the sequencer cannot walk is the fetch line's fault
            command.fetch = fetch_sequencer(
                self.base_of(begin.operands[0]),
                self.layout(view).base,
                view.dtype,
                begin.attr("axis") if pair_mode else m["1"],
                view.element,
                fetch.attr("time"),
                fetch.attr("packet"),
                command.context,
                [self.layout(self.objects[name]).base for name in begin.operands] if pair_mode else None,
            )
            self.moving(command, "fetch.base", view)
            for k, name in enumerate(begin.operands if pair_mode else ()):
                self.moving(command, f"fetch.interleave.{k}", self.objects[name])
        with _at(terminal):
            self.chain = ChainLayouts()
            command.engines = [self.engine(op, command) for op in chain[1:]]
            if terminal.opcode in ("commit", "commit_view"):
                self.fill_commit(terminal, command)

    def fill_commit(self, terminal: visa.Op, command: Command) -> None:
        stream = self.objects[terminal.operands[0]]
        view = terminal.opcode == "commit_view"
        target = self.objects[terminal.operands[1]] if view else self.objects[terminal.results[0].name]
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

    def engine(self, op: visa.Op, command: Command) -> EngineConfig:
        """A stage's config (`configs.records`): its attributes as numbers (`ENCODED`), what the engine
        needs beyond them (its stage's `lowering` handler), its layouts (`walks.py`) and, when it reads a
        register file (a TRF for `contract_outer`, a VRF for a Vector Engine operand), which of the
        command's inputs that is."""
        config: dict = {"stage": op.opcode}
        for key, value in op.attrs:
            if not isinstance(value, Mapping):  # layouts reach the engines as numbers (walks.py)
                config.update(ENCODED[key](value, self.objects[op.operands[0]]))
        operands = [self.base_of(name) for name in op.operands[1:] if name in self.of_value]
        if STAGES[op.opcode].rf is not None:
            config["rf"] = command.inputs.index(operands[0]) if operands else -1
        if op.opcode in registered("lowering"):  # what the engine needs beyond its attributes (switch routing…)
            config.update(STAGES[op.opcode].handler("lowering")(self.objects[op.operands[0]], op))
        config.update(self.chain.fields(op, self.objects, self.objects[op.operands[1]] if operands else None))
        return config_of(config)


def _window_extent(view: TensorView) -> int:
    """Positions a view argument spans: every outer block of the base, up to the view's last live cell."""
    outer = math.prod(level.size for level in view.outer)
    cells = views.live_cells(view.element.factors)
    if cells is not None:
        extent = cells.extent
    else:  # composite atoms: find the last live cell one by one
        live = np.flatnonzero(evaluate(view.element.factors, np.arange(view.element.size, dtype=np.int64)).live)
        extent = int(live[-1]) + 1 if len(live) else 0
    return (outer - 1) * view.base.params[-1].size + extent


@contextmanager
def _at(op: visa.Op | None) -> Iterator[None]:
    """Refusals raised inside point at `op`'s line."""
    try:
        yield
    except VerifyError as error:
        error.location = _location(op)
        raise


def _location(op: visa.Op | None) -> Location | None:
    if op is None or op.loc is None:
        return None
    return Location(op.loc.file, op.loc.line, op.opcode, op.loc.column)


def _loc_text(loc: visa.Loc | None, root: Path | None) -> str | None:
    if loc is None:
        return None
    path = Path(loc.file)
    if root is not None and path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
        path = path.resolve().relative_to(root.resolve())
    return f"{path.as_posix()}:{loc.line}"


def _at_pass(value: object, index: str, k: int) -> object:
    return value.evaluate({index: k}) if isinstance(value, Scalar) else value


def lower(kernel: visa.Kernel, root: Path | None = None) -> Lir:
    """The LIR of `kernel`; a device loop found unkeepable while it is lowered is unrolled, and the kernel
    lowered again (at most once per loop)."""
    forced: dict[int, str] = {}
    while True:
        try:
            return _Lowering(kernel, root, forced).run()
        except _Unkeepable as error:
            forced[error.loop] = error.why
