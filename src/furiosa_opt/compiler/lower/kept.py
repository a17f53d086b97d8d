"""The kept device loops while stage 2 lowers them, and what their bodies' addresses move by per pass.

A kept loop's body is lowered once (`loops.py` chose which loops are kept), so what differs from pass to
pass becomes a runtime value of the loop's index (docs/lir.md, "Loops"): a command under an `if` gets a
guard; a value the loop carries sits in one of two slots of its buffer, chosen by the pass; a view that
moves per pass (a runtime start, or made from a view that moves) moves by a step times the index. A view
whose steps are not equal cannot be written so: `Unkeepable` says which loop to unroll instead, and the
kernel is lowered again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import takewhile

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import Command
from furiosa_opt.compiler.lower.lifetimes import Loops
from furiosa_opt.compiler.replay import MEMORY_REPLAY, region_end
from furiosa_opt.lang.tensors import TensorView
from furiosa_opt.scalar import Scalar


class Unkeepable(Exception):
    """A kept loop turned out to need unrolling: `loop` is its op index in the kernel, `why` the reason."""

    def __init__(self, loop: int, why: str):
        super().__init__(why)
        self.loop, self.why = loop, why


@dataclass
class _Open:
    """A kept device loop while its body is lowered."""

    index: Scalar
    count: int
    first: int  # the first command of the body
    back: dict[str, str]  # back-edge value → the `carried` value it becomes on the next pass
    origin: int  # the `loop` op's index in the kernel
    guards: list[Scalar] = field(default_factory=list)  # the `if` conditions open here


class KeptLoops:
    """The kept loops of one kernel: the one whose body is being lowered, those found so far, and the
    slots and per-pass views of the values they carry and move. `origins`: the kernel's op behind each
    replayed op, which names a loop to unroll."""

    def __init__(self, origins: list[int]):
        self.origins = origins
        self.open: _Open | None = None
        self.loops: Loops = []  # (first, last command, count, index) of each kept loop with commands
        self.kernel_op: dict[str, int] = {}  # a kept loop's index → its `loop` op in the kernel
        self.slots: dict[str, tuple[Scalar | int, int]] = {}  # carried value → (slot in the loop, slot after)
        self.per_pass: dict[str, list[TensorView]] = {}  # a view that moves per pass → the view on each pass

    # ---- while the ops are lowered ----

    def start(self, ops: Sequence[visa.Op], at: int, first: int) -> None:
        """The kept loop `ops[at]` opens; its body's first command will be command `first`."""
        op, end = ops[at], region_end(ops, at)
        heads = [o.results[0].name for o in takewhile(lambda o: o.opcode == "carried", ops[at + 1 : end])]
        back = dict(zip(ops[end].operands, heads, strict=True))
        index = Scalar("index", (op.results[0].name, op.attr("count")))  # what runtime scalars read
        self.open = _Open(index, op.attr("count"), first, back, self.origins[at])

    def carry(self, value: str, first: str) -> None:
        """`value` is carried from `first`: pass k reads the slot of its buffer where `first` is (slot 0, or
        where an earlier loop left it) on even passes, the other slot on odd ones."""
        start = self.slots.get(first, (0, 0))[1]
        index = self.open.index
        self.slots[value] = ((index + start) % 2 if start else index % 2, start)

    def back_edge(self, value: str) -> str | None:
        """The carried value `value` becomes on the next pass, if it is a back edge of the open loop (it then
        takes the other slot: the one the next pass reads, and after the loop the one the last pass wrote)."""
        if self.open is None or value not in self.open.back:
            return None
        head = self.open.back[value]
        inside, after = self.slots[head]
        self.slots[value] = (1 - inside, (self.open.count + after) % 2)
        return head

    def follow(self, op: visa.Op, objects: dict[str, object]) -> None:
        """Record the view each pass sees if the view op `op` moves per pass (a runtime start, or made from a
        view that moves), made as tracing would with the index bound."""
        operand = op.operands[0]
        if self.open is None or not (
            operand in self.per_pass or any(isinstance(value, Scalar) for _, value in op.attrs)
        ):
            return
        name = self.open.index.args[0]
        sources = self.per_pass.get(operand, [objects[operand]] * self.open.count)
        self.per_pass[op.results[0].name] = [
            MEMORY_REPLAY[op.opcode]([source], {key: _at_pass(value, name, k) for key, value in op.attrs})
            for k, source in enumerate(sources)
        ]

    def guard_on(self, condition: Scalar) -> None:
        """An `if` opens in the loop's body."""
        self.open.guards.append(condition)

    def guard_off(self) -> None:
        """The innermost `if` closes."""
        self.open.guards.pop()

    def guard(self) -> list[int] | None:
        """The runtime program of the condition a command made now runs under (None: every pass)."""
        if self.open is None or not self.open.guards:
            return None
        guard = math.prod(self.open.guards[1:], start=self.open.guards[0])
        return guard.program([self.open.index.args[0]])

    def close(self, commands: list[Command]) -> None:
        """The open loop ends with the last of `commands`; a body that moves nothing needs no loop."""
        loop, self.open = self.open, None
        if len(commands) > loop.first:
            self.loops.append((commands[loop.first], commands[-1], loop.count, loop.index.args[0]))
            self.kernel_op[loop.index.args[0]] = loop.origin

    # ---- once buffers have addresses ----

    def enclosing(self, command: Command) -> str:
        """The index of the kept loop whose body holds `command` ("" for none)."""
        inside = [index for first, last, _, index in self.loops if first.index <= command.index <= last.index]
        return inside[0] if inside else ""

    def slot(self, value: str, index: str) -> Scalar | int:
        """The slot of its buffer `value` is in, for a command in the body of the loop `index` ("" for
        none): in the body of the loop that carries it, a runtime value of the index; anywhere else, the
        slot its loop left it in (a later kept loop reads it there on every pass)."""
        inside, after = self.slots.get(value, (0, 0))
        carried_here = isinstance(inside, Scalar) and index in inside.indices()
        return inside if carried_here else after

    def travel(self, value: str, index: str, address: Callable[[TensorView], int]) -> Scalar | int:
        """The bytes the view bound to `value` moves by per pass of the loop `index`, times the index (0 for
        one that stays put); `address`: where a view starts. A view whose address is not the same step apart
        on every pass makes its loop one to unroll."""
        passes = self.per_pass.get(value)
        if passes is None:
            return 0
        bases = [address(view) for view in passes]
        step = bases[1] - bases[0] if len(bases) > 1 else 0
        if any(base != bases[0] + k * step for k, base in enumerate(bases)):
            raise Unkeepable(
                self.kernel_op[index], f"a view moves by unequal steps from pass to pass ({bases[:4]} … bytes)"
            )
        return Scalar("mul", (Scalar("index", (index, len(bases))), step)) if step else 0


def _at_pass(value: object, index: str, k: int) -> object:
    return value.evaluate({index: k}) if isinstance(value, Scalar) else value
