"""Runtime programs (`furiosa_opt.programs`): what the compiler encodes from a `Scalar` evaluates, on every
point of its loops at once, to what the Scalar is on each point by itself (Python integers, negative values,
floor division and modulo included); `describe` prints text that Python's own grammar reads back to the
same value; and the validator refuses every damaged program with a one-line reason."""

from __future__ import annotations

import ast
import itertools
import operator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt.programs import BY_CODE, BY_NAME, MAX_DEPTH, MAX_LENGTH, OPCODES, describe, evaluate, problem, reads
from furiosa_opt.scalar import Scalar, parse_scalar

NAMES = ("%3", "%7", "%11")  # loop levels 0, 1, 2
COUNTS = (4, 3, 5)
OPERATIONS = ("add", "sub", "mul", "div", "mod", "eq", "ne", "lt", "le", "gt", "ge")


def code(*items: str | int) -> list[int]:
    """A program from opcode names and immediates: `code("index", 0, "const", 16, "mul")`."""
    return [BY_NAME[item].code if isinstance(item, str) else item for item in items]


def _node(children: st.SearchStrategy) -> st.SearchStrategy:
    binary = st.builds(lambda op, a, b: Scalar(op, (a, b)), st.sampled_from(OPERATIONS), children, children)
    return binary | st.builds(lambda c, a, b: Scalar("sel", (c, a, b)), children, children, children)


def _leaves(levels: int) -> st.SearchStrategy:
    index = st.integers(0, levels - 1).map(lambda k: Scalar("index", (NAMES[k], COUNTS[k])))
    return index | st.integers(-9, 9)  # small enough that no product of 12 leaves leaves int64


def scalars(levels: int) -> st.SearchStrategy[Scalar]:
    """Scalar expressions over the indices of the first `levels` loops, with an index somewhere."""
    tree = st.recursive(_leaves(levels), _node, max_leaves=12)
    return tree.filter(lambda s: isinstance(s, Scalar))


def oracle(scalar: Scalar, levels: int) -> np.ndarray | None:
    """The Scalar's value at each point of its levels' grid, one point at a time in Python integers (None if a
    point divides by zero)."""
    grid = np.zeros(COUNTS[:levels], dtype=np.int64)
    for point in itertools.product(*(range(count) for count in COUNTS[:levels])):
        try:
            grid[point] = scalar.evaluate(dict(zip(NAMES[:levels], point, strict=True)))
        except ZeroDivisionError:
            return None
    return grid


def axes(levels: int) -> list[np.ndarray]:
    """Level k's index array, along axis k of the grid (the levels broadcast together)."""
    return list(np.ix_(*(np.arange(count) for count in COUNTS[:levels])))


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(1, 3).flatmap(lambda levels: st.tuples(st.just(levels), scalars(levels))))
@example((1, parse_scalar("scalar(div (sub -7 %3@4) 2)")))  # floor division of negatives rounds down
@example((1, parse_scalar("scalar(mod (sub 1 %3@4) -3)")))  # a modulo takes the divisor's sign
@example((1, parse_scalar("scalar(sel (eq %3@4 2) 1 (div 5 (sub %3@4 2)))")))  # the untaken arm divides by 0
def test_an_encoded_scalar_evaluates_to_the_scalar_on_every_point(case):
    levels, scalar = case
    program = scalar.program(NAMES[:levels])
    assert problem(program, levels) is None
    assert reads(program) == {NAMES.index(name) for name in scalar.indices()}
    expected = oracle(scalar, levels)
    if expected is None:
        with pytest.raises(ZeroDivisionError, match="divides by zero"):
            evaluate(program, axes(levels))
        return
    got = evaluate(program, axes(levels))
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    if set(scalar.indices()) == {NAMES[0]}:  # the per-pass form the simulator reads: one loop, all passes
        assert np.array_equal(evaluate(program, [np.arange(COUNTS[0])]), scalar.on_passes(NAMES[0], COUNTS[0]))


_PYTHON = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
           ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}  # fmt: skip


def python_value(node: ast.expr, env: dict[str, int]) -> int:
    """The value of `describe`'s text as Python's grammar groups it (names `a`, `b`, `c` for the levels)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -python_value(node.operand, env)
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _PYTHON[type(node.op)](python_value(node.left, env), python_value(node.right, env))
    if isinstance(node, ast.Compare):
        (op,), (right,) = node.ops, node.comparators  # a chained comparison would be a grouping bug
        return int(_PYTHON[type(op)](python_value(node.left, env), python_value(right, env)))
    assert isinstance(node, ast.Call) and node.func.id == "select" and len(node.args) == 3, ast.dump(node)
    cond, then, other = (python_value(arg, env) for arg in node.args)
    return then if cond else other


@settings(max_examples=examples(200), deadline=None)
@given(scalars(3))
def test_the_described_text_reads_back_to_the_same_value(scalar):
    program = scalar.program(NAMES)
    text = describe(program, ["a", "b", "c"])
    tree = ast.parse(text, mode="eval").body
    for point in itertools.product(range(3), range(2), range(2)):
        try:
            expected = scalar.evaluate(dict(zip(NAMES, point, strict=True)))
        except ZeroDivisionError:
            continue
        assert python_value(tree, dict(zip("abc", point, strict=True))) == expected, text


def test_the_described_text_of_the_compilers_programs():
    assert describe(code("index", 0, "const", 16, "mul"), ["%4"]) == "%4 * 16"
    assert describe(code("const", 1, "index", 0, "const", 2, "mod", "sub", "const", 64, "mul")) == "(1 - i0 % 2) * 64"
    guard = code("index", 0, "const", 0, "eq", "index", 0, "const", 3, "lt", "mul")
    assert describe(guard, ["%5"]) == "(%5 == 0) * (%5 < 3)"
    assert describe(code("index", 0, "const", 0, "eq", "const", 0, "const", -16, "sel")) == "select(i0 == 0, 0, -16)"
    assert describe(code("index", 0, "index", 0, "index", 0, "sub", "sub")) == "i0 - (i0 - i0)"


def test_the_opcode_table_is_one_table():
    assert [op.code for op in OPCODES] == list(range(len(OPCODES)))  # codes are dense, each declared once
    assert len(BY_NAME) == len(BY_CODE) == len(OPCODES)
    assert {op.name for op in OPCODES} == {"const", "index", "sel", *OPERATIONS}  # every Scalar operation
    assert all(op.meaning and (op.apply is None) == (op.immediates == 1) for op in OPCODES)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "edf.md").read_text()
    for op in OPCODES:  # docs/edf.md, "Runtime programs", says what the table says
        assert f"| {op.code} | `{op.name}` | {op.immediates} | {op.pops} | {op.meaning} |" in doc, op


@pytest.mark.parametrize(
    ("program", "levels", "reason"),
    [
        (code("index", 0, 99), 1, "unknown opcode 99 at 2"),
        (code("index", 0, -1), 1, "unknown opcode -1 at 2"),
        (code("index", 0, "add"), 1, "`add` at 2 takes 2 values; the stack holds 1"),
        (code("sel"), 1, "`sel` at 0 takes 3 values; the stack holds 0"),
        (code("index", 0, "index", 0), 1, "leaves 2 values on the stack, not one"),
        ([], 1, "leaves 0 values on the stack, not one"),
        (code("index", 1), 1, "`index` at 0 reads loop level 1; the command is inside 1 kept loop(s)"),
        (code("index", -1), 3, "`index` at 0 reads loop level -1"),
        (code("index", 0), 0, "reads loop level 0; the command is inside 0 kept loop(s)"),
        (code("index", 0, "const"), 1, "`const` at 2 needs 1 integer after it; the program ends"),
        (code("index"), 1, "`index` at 0 needs 1 integer after it"),
        (code("const", 1 << 63), 1, "constant 9223372036854775808 at 1 does not fit in 64 signed bits"),
        (code("const", -(1 << 63) - 1), 1, "does not fit in 64 signed bits"),
        ([1, 0, True, 5], 1, "holds True at 2, not an integer"),
        ([1, "0"], 1, "holds '0' at 1, not an integer"),
        ("scalar(%3@4)", 1, "a program is a list of integers, not str"),
        (code("index", 0, *["const", 1, "add"] * 85), 1, f"257 integers; a program holds at most {MAX_LENGTH}"),
        (
            code(*["index", 0] * (MAX_DEPTH + 1)),
            1,
            f"makes {MAX_DEPTH + 1} values on the stack",
        ),
    ],
)
def test_the_validator_refuses_a_damaged_program_with_its_reason(program, levels, reason):
    found = problem(program, levels)
    assert found is not None and reason in found and "\n" not in found, found


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(-2, len(OPCODES) + 1) | st.integers(-(1 << 64), 1 << 64), max_size=24))
def test_any_list_of_integers_is_refused_with_a_line_or_runs(program):
    """Whatever integers a damaged file holds, the validator answers without raising, and what it accepts
    runs: one int64 value per pass (or a division by zero, which the reader reports)."""
    found = problem(program, 2)
    if found is not None:
        assert isinstance(found, str) and found and "\n" not in found
        return
    assert reads(program) <= {0, 1}
    try:
        values = evaluate(program, axes(2))
    except ZeroDivisionError:
        return
    assert values.shape == COUNTS[:2] and values.dtype == np.int64
    assert describe(program)
