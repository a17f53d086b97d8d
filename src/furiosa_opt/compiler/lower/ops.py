"""The command list: each vISA op lowered to the command it becomes, in the order the kernel is written;
then a clear for each fresh tensor read before it is written, and the order placement settles on.

A view aliases its base's buffer (a `view` command, which costs nothing); a DMA, a memset, a gather or a
scatter is one command on its context; a Tensor Unit pipeline (`begin` … its terminal) is one `exec`
command on the context of its `begin`. What a command holds beyond its buffers is filled in once they are
placed (`fill.py`, from the `Pending` noted here per command).
"""

from __future__ import annotations

from pathlib import Path

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Command
from furiosa_opt.compiler.lower.buffers import BufferTable
from furiosa_opt.compiler.lower.coverage import read_unwritten
from furiosa_opt.compiler.lower.fill import Pending
from furiosa_opt.compiler.lower.kept import KeptLoops
from furiosa_opt.compiler.lower.opcodes import DMA_OPS, GATHER_OPS, PCOPY_OPS, SCATTER_OPS, VIEW_OPS
from furiosa_opt.compiler.lower.placement import place_in_fitting_order
from furiosa_opt.compiler.lower.sites import loc_text
from furiosa_opt.stages import ENDS

TERMINALS = ENDS  # the stages that end a pipeline (the stage table's)


class OpLowering:
    """The commands of the replayed kernel `ir`, each with what it still needs once placed (`pending`, by
    the command's id; views need nothing); buffers are named in `table`, kept loops followed in `kept`."""

    def __init__(self, ir: visa.Kernel, table: BufferTable, kept: KeptLoops, root: Path | None):
        self.ir, self.table, self.kept, self.root = ir, table, kept, root
        self.commands: list[Command] = []
        self.pending: dict[int, Pending] = {}
        self.op_index = {id(op): i for i, op in enumerate(ir.ops)}
        self.producer = {v.name: op for op in ir.ops for v in op.results}

    def buffer(self, value: visa.Value, op: visa.Op | None) -> str:
        """The buffer of `value`, which `op` makes (None: a kernel argument): a fresh one or, for a back edge
        of the kept loop being lowered, the buffer of the carried value it becomes."""
        head = self.kept.back_edge(value.name)
        if head is not None:
            return self.table.alias(value.name, head)
        return self.table.fresh(value, op, len(self.commands))

    def command(self, op: visa.Op, context: str, kind: str, inputs: list[str], outputs: list[str]) -> Command:
        """A new command at the end of the list, under the `if`s open in the kept loop being lowered."""
        loc = loc_text(op.loc, self.root)
        command = Command(len(self.commands), context, kind, self.op_index[id(op)], op.opcode, loc, inputs, outputs)
        command.guard = self.kept.guard()
        self.commands.append(command)
        return command

    def lower(self, op: visa.Op) -> None:
        """The command `op` becomes, if any: `hbm_new` and `dm_new` only name a buffer, a pipeline's stages
        become the exec command of its terminal, and loop and `if` markers open and close what the body's
        commands run under."""
        if op.opcode in VIEW_OPS:
            self.lower_view(op)
        elif op.opcode in ("hbm_new", "dm_new"):
            self.buffer(op.results[0], op)
        elif op.opcode in DMA_OPS:
            self.lower_dma(op)
        elif op.opcode in GATHER_OPS | SCATTER_OPS:
            self.lower_indirect(op)
        elif op.opcode == "memset":
            self.lower_memset(op)
        elif op.opcode in TERMINALS:
            self.lower_pipeline(op)
        else:
            self.lower_control(op)

    def lower_view(self, op: visa.Op) -> None:
        """A view aliases its operand's buffer; one that moves per pass has its passes recorded."""
        self.kept.follow(op, self.table.objects)
        base = self.table.base_of(op.operands[0])
        for value in op.results:
            self.table.alias(value.name, op.operands[0])
        self.command(op, "none", "view", [base], [])

    def lower_dma(self, op: visa.Op) -> None:
        """A DMA (or a parallel copy) from its first operand into a new tensor or, for a `*_view` move,
        into its second operand."""
        source = self.table.objects[op.operands[0]]
        if not op.results:  # a move into a view (`to_dm_view`, `to_hbm_view`, `to_dm_view_pcopy`)
            target = self.table.objects[op.operands[1]]
            output = self.table.base_of(op.operands[1])
        else:
            target = self.table.objects[op.results[0].name]
            output = self.buffer(op.results[0], op)
        kind = "pcopy" if op.opcode in PCOPY_OPS else "dma"
        command = self.command(op, op.attr("ctx").name, kind, [self.table.base_of(op.operands[0])], [output])
        self.pending[id(command)] = Pending(op, source, target)

    def lower_indirect(self, op: visa.Op) -> None:
        """A gather into a new tensor, or a scatter into its third operand, on the tensor DMA."""
        inputs = [self.table.base_of(name) for name in op.operands]
        output = self.buffer(op.results[0], op) if op.opcode in GATHER_OPS else self.table.base_of(op.operands[2])
        self.pending[id(self.command(op, "tdma", "indirect", inputs, [output]))] = Pending(op)

    def lower_memset(self, op: visa.Op) -> None:
        """A fill of the tensor (or view) it names, on the context it names."""
        command = self.command(op, op.attr("ctx").name, "memset", [], [self.table.base_of(op.operands[0])])
        self.pending[id(command)] = Pending(op, target=self.table.objects[op.operands[0]])

    def lower_pipeline(self, terminal: visa.Op) -> None:
        """The pipeline `terminal` ends, back to its `begin`, as one exec command reading every buffer its
        stages read."""
        chain = [terminal]
        while chain[-1].opcode not in ("begin", "begin_interleaved"):
            chain.append(self.producer[chain[-1].operands[0]])
        chain.reverse()
        begin = chain[0]
        inputs = list(dict.fromkeys(self.table.base_of(name) for name in begin.operands))
        for op in chain[1:]:
            inputs += self.table.operand_buffers(op)
        if terminal.opcode == "commit_view":
            output = self.table.base_of(terminal.operands[1])
        else:
            output = self.buffer(terminal.results[0], terminal)
        command = self.command(terminal, begin.attr("ctx").name, "exec", inputs, [output])
        self.pending[id(command)] = Pending(terminal, chain=chain)

    def lower_control(self, op: visa.Op) -> None:
        """A kept loop's markers (`loop`, `carried`, `end_loop`) and its `if`s; any other op is a pipeline
        stage, lowered with its terminal."""
        if op.opcode == "loop":
            self.kept.start(self.ir.ops, self.op_index[id(op)], len(self.commands))
        elif op.opcode == "carried":
            self.table.carry(op.results[0].name, op.operands[0])
            self.kept.carry(op.results[0].name, op.operands[0])
        elif op.opcode == "end_loop":
            self.kept.close(self.commands)
        elif op.opcode == "if":
            self.kept.guard_on(op.attr("cond"))
        elif op.opcode == "end_if":
            self.kept.guard_off()

    # ---- once every op is lowered ----

    def clear_unwritten(self) -> None:
        """A memset of zeros for each fresh DM tensor the kernel reads at a cell nothing wrote
        (`coverage.read_unwritten`), where the CPU backend reads zeros: just before the first command that
        touches the tensor, or before the kept loop that command is in."""
        table = self.table
        made = {op.results[0].name: op for op in self.ir.ops if op.opcode == "dm_new"}
        fresh = {table.of_value[value]: table.objects[value] for value in made}
        for name in read_unwritten(self.ir.ops, table.objects, table.of_value, self.kept.per_pass, fresh):
            op = made[table.buffers[name].value]
            at = next(c.index for c in self.commands if c.kind != "view" and name in (*c.inputs, *c.outputs))
            at = next((first.index for first, last, _, _ in self.kept.loops if first.index <= at <= last.index), at)
            loc = loc_text(op.loc, self.root)
            clear = Command(at, "tdma", "memset", self.op_index[id(op)], "memset", loc, [], [name])
            self.pending[id(clear)] = Pending(op, target=fresh[name])
            self.arrange([*self.commands[:at], clear, *self.commands[at:]])

    def place(self, results: list[str]) -> None:
        """Place every buffer, in the written order of the commands or in the nearest one that fits
        (`placement.place_in_fitting_order`), which then becomes the command list."""
        table = self.table
        order = place_in_fitting_order(self.commands, self.kept.loops, table.buffers, table.where, results)
        if order is not None:
            self.arrange(order)
            self.kept.loops.sort(key=lambda loop: loop[0].index)

    def arrange(self, commands: list[Command]) -> None:
        """`commands` become the command list, each command's index its place in it."""
        self.commands = commands
        for index, command in enumerate(commands):
            command.index = index
