"""Runtime programs: how an EDF holds the values a kept device loop computes per pass (a command's guard, its
runtime address offsets) — numbers the reader checks and the simulator runs, never text to parse.

A program is postfix code, a flat list of integers: each opcode of `OPCODES` (the one table) followed by its
immediates. Run on a stack, an opcode takes `pops` values off and pushes one; a valid program never takes
more than the stack holds and leaves exactly one value, its result. Loop level k is the k-th kept loop
around the command, outermost first (kept loops do not nest today, so a command reads level 0 at most).
Values are int64; `div` and `mod` floor as Python's `//` and `%` do, as `scalar.Scalar` has them. The
compiler encodes a `Scalar` with `Scalar.program`; this module imports nothing of the package.

    [1, 0, 0, 16, 4]      # index 0, const 16, mul: `i0 * 16`
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

MAX_LENGTH = 256  # reader bounds: integers in one program (the compiler's hold a few dozen), and values on its
MAX_DEPTH = 32  # stack at once (each an array over up to 2^20 passes while it runs)
INT64 = (-(1 << 63), (1 << 63) - 1)  # what a constant, and every value, fits


@dataclass(frozen=True, slots=True)
class Opcode:
    """One instruction: its code in a program, its name (the `Scalar` operation it encodes), how many
    integers follow it, how many values it takes off the stack (it pushes one) and what it computes, `b`
    being the value on top of the stack and `a` the one below it."""

    code: int
    name: str
    immediates: int
    pops: int
    meaning: str
    symbol: str = ""  # the infix operator `describe` prints; "" for a term or `sel`
    precedence: int = 4  # how tightly `symbol` binds, as in Python: comparisons 1, + - 2, * // % 3, terms 4
    apply: Callable[..., np.ndarray] | None = None  # the result from the popped values (int64), for an operation
    divides: bool = False  # a zero second operand is a ZeroDivisionError


def _compare(ufunc: np.ufunc) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda a, b: ufunc(a, b).astype(np.int64)  # 1 where it holds, else 0


def _select(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(c != 0, a, b)


OPCODES: tuple[Opcode, ...] = (
    Opcode(0, "const", 1, 0, "push the signed 64-bit constant that follows"),
    Opcode(1, "index", 1, 0, "push the index of loop level k (k follows): 0, 1, … on its passes"),
    Opcode(2, "add", 0, 2, "a + b", "+", 2, np.add),
    Opcode(3, "sub", 0, 2, "a - b", "-", 2, np.subtract),
    Opcode(4, "mul", 0, 2, "a · b", "*", 3, np.multiply),
    Opcode(5, "div", 0, 2, "a // b, rounded toward minus infinity", "//", 3, np.floor_divide, True),
    Opcode(6, "mod", 0, 2, "a % b, with the sign of b (a - b · (a // b))", "%", 3, np.mod, True),
    Opcode(7, "eq", 0, 2, "1 if a == b, else 0", "==", 1, _compare(np.equal)),
    Opcode(8, "ne", 0, 2, "1 if a != b, else 0", "!=", 1, _compare(np.not_equal)),
    Opcode(9, "lt", 0, 2, "1 if a < b, else 0", "<", 1, _compare(np.less)),
    Opcode(10, "le", 0, 2, "1 if a <= b, else 0", "<=", 1, _compare(np.less_equal)),
    Opcode(11, "gt", 0, 2, "1 if a > b, else 0", ">", 1, _compare(np.greater)),
    Opcode(12, "ge", 0, 2, "1 if a >= b, else 0", ">=", 1, _compare(np.greater_equal)),
    Opcode(13, "sel", 0, 3, "a if c != 0, else b (c pushed first)", apply=_select),
)
BY_CODE = {op.code: op for op in OPCODES}
BY_NAME = {op.name: op for op in OPCODES}


def problem(program: object, levels: int) -> str | None:
    """Why `program` is not a valid program for a command inside `levels` kept loops (one line), or None:
    a list of at most MAX_LENGTH integers, each opcode known and followed by its immediates, constants in
    int64, loop levels below `levels`, the stack never short nor past MAX_DEPTH, and left with one value."""
    if not isinstance(program, list | tuple):
        return f"a program is a list of integers, not {type(program).__name__}"
    if len(program) > MAX_LENGTH:
        return f"{len(program)} integers; a program holds at most {MAX_LENGTH}"
    for at, value in enumerate(program):
        if not isinstance(value, int) or isinstance(value, bool):
            return f"holds {value!r} at {at}, not an integer"
    depth = at = 0
    while at < len(program):
        op = BY_CODE.get(program[at])
        if op is None:
            return f"unknown opcode {program[at]} at {at}"
        immediates = program[at + 1 : at + 1 + op.immediates]
        if len(immediates) < op.immediates:
            return f"`{op.name}` at {at} needs {op.immediates} integer after it; the program ends"
        if op.name == "const" and not INT64[0] <= immediates[0] <= INT64[1]:
            return f"constant {immediates[0]} at {at + 1} does not fit in 64 signed bits"
        if op.name == "index" and not 0 <= immediates[0] < levels:
            return f"`index` at {at} reads loop level {immediates[0]}; the command is inside {levels} kept loop(s)"
        if depth < op.pops:
            return f"`{op.name}` at {at} takes {op.pops} values; the stack holds {depth}"
        depth += 1 - op.pops
        if depth > MAX_DEPTH:
            return f"`{op.name}` at {at} makes {depth} values on the stack; a program holds at most {MAX_DEPTH}"
        at += 1 + op.immediates
    return None if depth == 1 else f"leaves {depth} values on the stack, not one"


def _steps(program: Sequence[int]) -> Iterator[tuple[Opcode, Sequence[int]]]:
    """Each (opcode, its immediates) of a valid program, in order."""
    at = 0
    while at < len(program):
        op = BY_CODE[program[at]]
        yield op, program[at + 1 : at + 1 + op.immediates]
        at += 1 + op.immediates


def reads(program: Sequence[int]) -> set[int]:
    """The loop levels a valid program reads."""
    return {immediates[0] for op, immediates in _steps(program) if op.name == "index"}


def evaluate(program: Sequence[int], levels: Sequence[np.ndarray]) -> np.ndarray:
    """A valid program's value (int64) at every point of its loop levels' index arrays, broadcast together:
    for one loop of n passes `[np.arange(n)]`, all passes at once. ZeroDivisionError if a point divides by
    zero (in either arm of a `sel` too: every operation runs on every point)."""
    shape = np.broadcast_shapes(*(np.shape(level) for level in levels))
    stack: list[np.ndarray] = []
    for op, immediates in _steps(program):
        if op.name == "const":
            stack.append(np.asarray(immediates[0], dtype=np.int64))
        elif op.name == "index":
            stack.append(np.asarray(levels[immediates[0]], dtype=np.int64))
        else:
            operands = stack[len(stack) - op.pops :]
            del stack[len(stack) - op.pops :]
            if op.divides and np.any(operands[1] == 0):
                raise ZeroDivisionError(f"{describe(program)} divides by zero")
            stack.append(np.asarray(op.apply(*operands), dtype=np.int64))
    (value,) = stack
    return np.broadcast_to(value, shape).astype(np.int64)


def describe(program: Sequence[int], names: Sequence[str] = ()) -> str:
    """A valid program as Python-like infix text (`%3 * 16`, `select(%3 == 0, 0, 16)`), loop level k named
    `names[k]` (else `i<k>`): what dumps and messages print. Parentheses appear where Python needs them."""
    stack: list[tuple[str, int]] = []  # (text, precedence)
    for op, immediates in _steps(program):
        if op.name == "const":
            stack.append((str(immediates[0]), 4))
        elif op.name == "index":
            k = immediates[0]
            stack.append((names[k] if k < len(names) else f"i{k}", 4))
        elif not op.symbol:
            args = [text for text, _ in stack[len(stack) - op.pops :]]
            del stack[len(stack) - op.pops :]
            stack.append((f"select({', '.join(args)})", 4))
        else:
            (left, lp), (right, rp) = stack[-2:]
            del stack[-2:]
            left = f"({left})" if lp < op.precedence or (lp == op.precedence == 1) else left  # no chained compare
            right = f"({right})" if rp <= op.precedence else right  # operations group from the left
            stack.append((f"{left} {op.symbol} {right}", op.precedence))
    ((text, _),) = stack
    return text
