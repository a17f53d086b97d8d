"""Runtime scalars: a device loop's index and the expressions kernels build on it (`i * 16`, `i == 0`),
as the kernel language traces them and the vISA prints them (`scalar(eq %3@2 0)`). Stage 2 encodes one into
the runtime program the LIR and the EDF hold (`Scalar.program`, `furiosa_opt.programs`), which the EDF reader
and the simulator run without this module. The bottom layer: the language and the compiler read it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.programs import BY_NAME

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

    def on_passes(self, index: str, count: int) -> np.ndarray:
        """Its value on each pass 0 … count-1 of the loop whose index is `index` (the only index it may
        read), as int64, all passes at once; ZeroDivisionError if a pass divides by zero."""
        if self.op == "index":
            return np.arange(count, dtype=np.int64)
        values = [arg.on_passes(index, count) if isinstance(arg, Scalar) else np.int64(arg) for arg in self.args]
        if self.op == "sel":
            return np.broadcast_to(np.where(values[0] != 0, values[1], values[2]), (count,)).astype(np.int64)
        if self.op in ("div", "mod") and np.any(values[1] == 0):
            raise ZeroDivisionError(f"{self!r} divides by zero")
        return np.broadcast_to(_BINARY[self.op](*values), (count,)).astype(np.int64)

    def program(self, levels: Sequence[str]) -> list[int]:
        """Its runtime program (`furiosa_opt.programs`: how the EDF holds it), loop level k being the loop
        whose index is `levels[k]`; ValueError if it reads another index."""
        if self.op == "index":
            if self.args[0] not in levels:
                raise ValueError(f"{self!r} reads {self.args[0]}, not an index of the loops {list(levels)}")
            return [BY_NAME["index"].code, list(levels).index(self.args[0])]
        code = []
        for arg in self.args:
            code += arg.program(levels) if isinstance(arg, Scalar) else [BY_NAME["const"].code, int(arg)]
        return [*code, BY_NAME[self.op].code]

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
            if token.lstrip("-").isascii() and token.lstrip("-").isdigit():
                return int(token), at + 1
            name, sep, count = token.partition("@")
            if not (name.startswith("%") and sep and count.isascii() and count.isdigit()):
                raise ValueError(f"unknown runtime scalar term `{token}`")
            return Scalar("index", (name, int(count))), at + 1
        if tokens[at + 1] in _BINARY or tokens[at + 1] == "sel":
            op, at, args = tokens[at + 1], at + 2, []
            while tokens[at] != ")":
                arg, at = expression(at)
                args.append(arg)
            if len(args) != (3 if op == "sel" else 2):
                raise ValueError(f"`{op}` takes {3 if op == 'sel' else 2} operands, got {len(args)}")
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
