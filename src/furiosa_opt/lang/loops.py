"""Device loops and runtime conditions: a loop the kernel keeps (upstream's `for i in 0..n` inside a
`#[device]` function), not one Python unrolls while tracing.

    for i in device_range(2):
        for _ in when(i == 0):          # upstream: `if i == 0 { … }`
            add(ctx, x, 1, out_then.view_mut())
        for _ in when(i != 0):          # … `else { … }`
            add(ctx, x, 2, out_else.view_mut())
        half = x.view().tile(select(i == 0, 0, 16), m["B"], 16, m["B = 16 # 32"])   # a runtime view index

On the CPU backend `device_range` is `range` and `when` runs its body when the condition holds, so the
kernel executes as the loop it is. While tracing, the body is traced twice and kept once (what the second
pass read of the first is carried from pass to pass: `x = step(x)`): the loop index is a `Scalar`,
a runtime value, and arithmetic and comparisons on it build runtime expressions. A runtime scalar may be
a view index (`tile`'s start); it has no truth value and no constant value while tracing, so a Python
`if`/`assert` on it and an instruction immediate that depends on it are refused with their line, as
upstream refuses them. The vISA keeps the loop as a region (`loop` … `end_loop`, `if` … `end_if`);
stage 2 unrolls it (the LIR records that it did).
"""

from __future__ import annotations

import copy
import itertools
import operator
from collections.abc import Callable, Iterator
from typing import Any

from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError

# operator name → (Python operator, text); `sel` is `select`
_BINARY: dict[str, Callable[[int, int], int]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.floordiv,
    "mod": operator.mod,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
MAX_COMBINATIONS = 1 << 16  # index values a runtime view index is checked at, at most


def _refused(what: str) -> VerifyError:
    return VerifyError(
        "runtime-scalar",
        f"{what}: this value depends on a device loop index and is only known at run time",
        notes=(
            "branch with `for _ in when(cond):`, choose a value with `select(cond, a, b)`, and use a Python "
            "`range` loop (unrolled while tracing) where a compile-time constant is needed",
        ),
    )


class Scalar:
    """A runtime scalar: a device loop index or an expression over indices (`i * 16`, `i == 0`).

    Examples:
        >>> i = Scalar("index", ("%0", 4))              # what tracing hands a kernel for `device_range(4)`
        >>> offset = select(i == 0, 0, i * 8)
        >>> sorted(set(offset.values()))
        [0, 8, 16, 24]
    """

    def __init__(self, op: str, args: tuple):
        self.op, self.args = op, args

    # ---- building expressions (constants fold) ----

    def _binary(self, op: str, other: object, swapped: bool = False) -> Scalar:
        if isinstance(other, bool) or not isinstance(other, int | Scalar):
            return NotImplemented
        return Scalar(op, (other, self) if swapped else (self, other))

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, True)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __rsub__(self, other):
        return self._binary("sub", other, True)

    def __mul__(self, other):
        return self._binary("mul", other)

    def __rmul__(self, other):
        return self._binary("mul", other, True)

    def __floordiv__(self, other):
        return self._binary("div", other)

    def __mod__(self, other):
        return self._binary("mod", other)

    def __eq__(self, other):  # type: ignore[override]
        return self._binary("eq", other)

    def __ne__(self, other):  # type: ignore[override]
        return self._binary("ne", other)

    def __lt__(self, other):
        return self._binary("lt", other)

    def __le__(self, other):
        return self._binary("le", other)

    def __gt__(self, other):
        return self._binary("gt", other)

    def __ge__(self, other):
        return self._binary("ge", other)

    __hash__ = object.__hash__

    # ---- what a runtime value cannot be ----

    def __bool__(self) -> bool:
        raise _refused("a Python `if`, `assert` or `and`/`or` needs a truth value while tracing")

    def __index__(self) -> int:
        raise _refused("a compile-time integer is needed here")

    __int__ = __index__

    def __float__(self) -> float:
        raise _refused("a compile-time number is needed here")

    # ---- reading it ----

    def indices(self) -> dict[str, int]:
        """The loop indices it reads, name → trip count."""
        if self.op == "index":
            return {self.args[0]: self.args[1]}
        found: dict[str, int] = {}
        for arg in self.args:
            if isinstance(arg, Scalar):
                found.update(arg.indices())
        return found

    def evaluate(self, env: dict[str, Any]) -> Any:
        """The value with each index bound by `env` (name → int, or → a Scalar to rename it)."""
        if self.op == "index":
            return env[self.args[0]]
        values = [arg.evaluate(env) if isinstance(arg, Scalar) else arg for arg in self.args]
        if self.op == "sel":
            cond, then, other = values
            if isinstance(cond, Scalar):
                return Scalar("sel", tuple(values))
            return then if cond else other
        if any(isinstance(v, Scalar) for v in values):
            return Scalar(self.op, tuple(values))
        return int(_BINARY[self.op](*values))

    def values(self) -> list[int]:
        """Every value it takes over its loops' ranges (refused past MAX_COMBINATIONS index tuples)."""
        loops = self.indices()
        if _combinations(loops.values()) > MAX_COMBINATIONS:
            raise _refused(f"a runtime view index over {_combinations(loops.values())} index combinations")
        return [self.evaluate(dict(zip(loops, point, strict=True))) for point in _points(loops.values())]

    def __str__(self) -> str:
        if self.op == "index":
            return f"{self.args[0]}@{self.args[1]}"
        return f"({self.op} " + " ".join(map(str, self.args)) + ")"

    def __repr__(self) -> str:
        """The vISA text: `scalar(mul %3@2 16)`, where `%3@2` is loop index %3 of 2 trips."""
        return f"scalar{self}" if self.op != "index" else f"scalar({self})"


def _combinations(counts) -> int:
    total = 1
    for count in counts:
        total *= count
    return total


def _points(counts) -> Iterator[tuple[int, ...]]:
    return itertools.product(*(range(count) for count in counts))


def parse_scalar(text: str) -> Scalar:
    """The Scalar `repr` prints (`scalar(eq %3@2 0)`); ValueError for anything else."""
    tokens = text[len("scalar") :].replace("(", " ( ").replace(")", " ) ").split()

    def expression(at: int) -> tuple[object, int]:
        token = tokens[at]
        if token != "(":
            if token.lstrip("-").isdigit():
                return int(token), at + 1
            name, sep, count = token.partition("@")
            if not (name.startswith("%") and sep and count.isdigit()):
                raise ValueError(f"unknown runtime scalar term `{token}`")
            return Scalar("index", (name, int(count))), at + 1
        if tokens[at + 1] in _BINARY or tokens[at + 1] == "sel":
            op, at, args = tokens[at + 1], at + 2, []
            while tokens[at] != ")":
                arg, at = expression(at)
                args.append(arg)
            return Scalar(op, tuple(args)), at + 1
        inner, at = expression(at + 1)  # a parenthesised index `(%3@2)`
        return inner, at + 1

    try:
        value, end = expression(0)
    except IndexError:
        raise ValueError(f"unbalanced runtime scalar `{text}`") from None
    if end != len(tokens) or not isinstance(value, Scalar):
        raise ValueError(f"unknown runtime scalar `{text}`")
    return value


# ---- the kernel-language names ----------------------------------------------------------------------


def _tracing() -> bool:
    return hasattr(active(), "ops")


def device_range(count: int) -> Iterator[int | Scalar]:
    """A loop the kernel keeps: the CPU backend runs it; tracing records a `loop` region once, with the
    index as a runtime `Scalar`.

        for i in device_range(4):
            rows = table.view().tile(i * 64, m["R"], 64, m["R = 64 # 256"])

    Examples:
        >>> [i * 16 for i in device_range(4)]       # the CPU backend runs the loop; a kernel keeps it
        [0, 16, 32, 48]
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise VerifyError("device-loop", f"device_range takes a positive trip count, got {count!r}")
    if not _tracing():
        yield from range(count)
        return
    tracer = active()
    start = len(tracer.ops)
    index = begin_loop(count)
    first = len(tracer.ops)
    yield index  # the body, traced once …
    second = len(tracer.ops)
    yield index  # … and again: what the second pass reads of the first is carried from pass to pass
    end_loop(*tracer.fold_loop(start, first, second))


def begin_loop(count: int) -> Scalar:
    """Record a `loop` op; its index (what `device_range` yields while tracing)."""
    marker = LoopMarker()
    active().record("loop", (), (marker,), count=count)
    return Scalar("index", (active().names[id(marker)].name, count))


def carried(value: object) -> object:
    """Record a `carried` op: the value a loop body reads in place of `value` (a stand-in object: the
    first pass reads `value`, later passes what the `end_loop` names)."""
    stand_in = copy.copy(value)
    active().record("carried", (value,), (stand_in,))
    return stand_in


def end_loop(*back_edges: object) -> None:
    """Record the `end_loop` op; its operands are the values each `carried` op takes on the next pass."""
    active().record("end_loop", back_edges, ())


def when(condition: bool | Scalar) -> Iterator[None]:
    """A runtime branch: its body runs when `condition` holds (upstream's `if cond { … }`); the CPU
    backend decides as it runs, tracing records an `if` region around the body.

        for _ in when(i == 0):
            first_pass(ctx, x)

    Examples:
        >>> taken = []
        >>> for i in device_range(4):
        ...     for _ in when(i % 2 == 0):
        ...         taken.append(i)
        >>> taken
        [0, 2]
    """
    if not isinstance(condition, Scalar):
        if condition:
            yield None
        return
    begin_if(condition)
    yield None
    end_if()


def begin_if(condition: Scalar) -> None:
    active().record("if", (), (), cond=condition)


def end_if() -> None:
    active().record("end_if", (), ())


def select(condition: bool | Scalar, then: int | Scalar, otherwise: int | Scalar) -> int | Scalar:
    """A runtime value chosen by a condition (upstream's `if cond { a } else { b }` as an expression).

    offset = select(i == 0, 0, 16)

    Examples:
        >>> [select(i == 0, 0, 16 - i) for i in device_range(3)]
        [0, 15, 14]
    """
    if isinstance(condition, Scalar):
        return Scalar("sel", (condition, then, otherwise))
    return then if condition else otherwise


class LoopMarker:
    """What the tracer names as a `loop` op's result: the index's SSA value (type `scalar<i32>`)."""
