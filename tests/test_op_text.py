"""`parse_op` reads back every op value the printer writes (`repr`, as vISA attributes and EDF engine configs
carry them) as that same value, and refuses every other text with a ValueError naming what it refused.

The printed values are the vocabulary's members, the constructors over boundary values (negative, signed
zero, infinite, NaN, numpy scalars, past i32), every guard pattern, and `Branched` operands of every shape,
plus every value the kernels of tests/upstream record when traced.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import struct
import sys
from enum import Enum
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler.visa import format_attr
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.vector import ops
from furiosa_opt.vector.ops import RF, BitReq, Branched, Cmp, Stash, TagGuard, TagMode, parse_op
from furiosa_opt.vector.ops.text import CLASSES

UPSTREAM = Path(__file__).resolve().parent / "upstream"
BOUNDARIES = [
    0, 1, -1, 7, 2**31 - 1, -(2**31), 2**40, -(2**63), 0.0, -0.0, 0.5, -2.5, 1e-05, 1e30, 3.4028234663852886e38,
    5e-324, -5e-324, math.inf, -math.inf, math.nan, np.float32(0.1), np.float32(-0.0), np.float32(math.inf),
    np.float32(-math.inf), np.float32(math.nan), np.int32(-3), np.int64(2**40), np.uint8(255), np.float64(1e-7),
]  # fmt: skip
CMP_KINDS = ("Equal", "Less", "Greater", "LessUnsigned", "GreaterUnsigned")


def _same(a: object, b: object) -> bool:
    """Equal values of equal types, floats by their bits (so NaN is itself and -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float | np.floating):
        return struct.pack("<d", float(a)) == struct.pack("<d", float(b))
    if isinstance(a, Cmp):
        return a.kind == b.kind and _same(a.value, b.value)
    if isinstance(a, TagMode):
        return a.kind == b.kind and _same(a.cmps, b.cmps) and a.axis == b.axis
    if isinstance(a, Branched):
        return _same(a.imms, b.imms) and _same(a.port, b.port)
    return a == b


def printed_values() -> list[object]:
    values: list[object] = [Stash, *ops.all_ops()]
    values += [member for cls in CLASSES.values() if issubclass(cls, Enum) for member in cls]
    cmps = [Cmp.True_, Cmp.False_] + [getattr(Cmp, kind)(v) for kind in CMP_KINDS for v in BOUNDARIES]
    values += cmps
    n = len(cmps)  # every comparison in every one of the four places
    values += [TagMode.Zero, *(TagMode.Comparison(tuple(cmps[(i + 37 * k) % n] for k in range(4))) for i in range(n))]
    guards = [TagGuard.all(), TagGuard.group(0), TagGuard.group(1)]
    for bits in itertools.product(BitReq, repeat=4):
        guards += [TagGuard.matches(bits), TagGuard.not_matches(bits)]
    values += guards
    live = [g for g in guards if not g.dead]
    imms = [3, -1, -0.0, 2.5, -math.inf, math.nan, (1.0, -2.0), (-0.0, math.inf)]
    ports = [RF, Stash, (RF, 2.0), (Stash, -1.0), (1.0, RF)]
    for count in range(4):
        for i, (port, imm) in enumerate(itertools.product([None, *ports], imms)):
            operand = Branched
            for k in range(count):
                operand = operand.imm(live[(7 * i + 13 * k) % (len(live) - 1) + 1], imm)  # conditional guards
            if port is not None or count == 0:
                operand = operand.rf(live[i % len(live)], port if port is not None else RF)
            values.append(operand)
    return values


def upstream_kernels() -> list[DeviceFunction]:
    kernels = []
    for path in sorted(UPSTREAM.glob("test_*.py")):
        name = f"op_text.{path.stem}"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, path)
            sys.modules[name] = module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        found = vars(sys.modules[name]).values()
        kernels += [k for k in found if isinstance(k, DeviceFunction) and k.__module__ == name]
    return kernels


def recorded_values() -> dict[str, object]:
    """Every op value (and each inside a tuple) among the attributes of the traced kernels, by its text."""
    found: dict[str, object] = {}

    def collect(value: object) -> None:
        if isinstance(value, tuple):
            for element in value:
                collect(element)
        elif isinstance(value, tuple(CLASSES.values())) or value is Stash:
            found[format_attr(value)] = value

    for kernel in upstream_kernels():
        try:
            ir, _errors = trace(kernel)
        except Exception:  # a kernel refused while it is traced (its own test checks how) records nothing
            continue
        for op in ir.ops if ir is not None else ():
            for _key, value in op.attrs:
                collect(value)
    return found


def test_the_grammar_names_every_class_of_the_vocabulary():
    public = {getattr(ops, name) for name in ops.__all__ if isinstance(getattr(ops, name), type)}
    assert set(CLASSES.values()) == public


def test_every_printed_value_reads_back_as_itself():
    values = printed_values()
    assert len(values) > 800
    for value in values:
        text = format_attr(value)
        parsed = parse_op(text)
        assert _same(parsed, value), (text, parsed)
        assert format_attr(parsed) == text


def test_every_value_the_kernels_record_reads_back_as_itself():
    found = recorded_values()
    kinds = {type(value).__name__ for value in found.values()}
    assert {"Branched", "TagMode", "FpBinaryOp", "_StashOperand", "TernaryArgMode"} <= kinds, kinds
    for text, value in found.items():
        parsed = parse_op(text)
        assert _same(parsed, value) and format_attr(parsed) == text, (text, parsed)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("__import__('os').system('true')", "`__import__` is not allowed: a call's callee is CLASS.NAME"),
        ("Cmp.__class__", "`Cmp.__class__` is not allowed: a private attribute"),
        ("FpBinaryOp.MulF(FpMulAlu.Mul0).__class__", "a private attribute"),
        ("Cmp.Less('a')", "`'a'` is not allowed: not a number"),
        ("Cmp.Less(True)", "`True` is not allowed: not a number"),
        ("Cmp.Less(None)", "`None` is not allowed"),
        ("Cmp.Less(1j)", "`1j` is not allowed"),
        ("Cmp.Less(1 + 1)", "`1 + 1` is not allowed"),
        ("Cmp.Less(--1)", "`-1` is not allowed: not a number"),
        ("Cmp.Less(-Cmp.True_)", "`Cmp.True_` is not allowed: not a number"),
        ("Cmp.Less([1])", "`[1]` is not allowed"),
        ("Cmp.Less(x)", "`x` is not allowed: no name of the vocabulary"),
        ("Cmp.Less(value=1)", "`value=1` is not allowed: arguments are positional"),
        ("Cmp.Less(*(1,))", "`*(1,)` is not allowed"),
        ("Cmp.Less(1)(2)", "`Cmp.Less(1)` is not allowed"),
        ("Cmp.Less(np.float32('1'))", "`'1'` is not allowed: not a number"),
        ("Cmp.Less(np.float32(np.float32(1)))", "a numpy scalar is written with one number"),
        ("Cmp.Less(np.bool_(1))", "`np.bool_` is not allowed: not a sized numpy integer or float type"),
        ("Cmp.Less(np.load(1))", "`np.load` is not allowed"),
        ("np.float32(1)", "`np` is not allowed"),
        ("FpBinaryOp.MulF", "it gives a function, not a Vector Engine op value"),
        ("FpBinaryOp.variants()", "it gives a tuple"),
        ("TagGuard.all().admits(3)", "it gives a ndarray"),
        ("FpMulAlu.Mul0.alu", "`FpMulAlu.Mul0` is not allowed"),
        ("Alu", "`Alu` is not allowed: a class is no value"),
        ("RF", "`RF` is not allowed: RF marks the register-file port"),
        ("all_ops()", "`all_ops` is not allowed"),
        ("3", "`3` is not allowed"),
        ("(FpUnaryOp.Exp,)", "is not allowed"),
        ("lambda: FpUnaryOp.Exp", "is not allowed"),
        ("FpUnaryOp.Exp if 1 else 2", "is not allowed"),
        ("FpUnaryOp.Nope", "unknown Vector Engine op value `FpUnaryOp.Nope`: Nope"),
        ("Cmp.Less()", "unknown Vector Engine op value `Cmp.Less()`: "),
        ("TagGuard.group(2)", "a pair-mode group is 0 or 1, got 2"),
        ("Cmp.Less(np.int8(300))", "unknown Vector Engine op value"),
        ("Branched.rf(TagGuard.all(), RF).rf(TagGuard.all(), RF)", "the register-file port is already filled"),
        ("FpUnaryOp.", "is not a Vector Engine op value"),
        ("", "is not a Vector Engine op value"),
        ("Stash\x00", "is not a Vector Engine op value"),
        ("Branched" + ".imm(TagGuard.all(), 1)" * 5000, "is not a Vector Engine op value"),
    ],
)
def test_text_outside_the_grammar_is_refused(text, refused):
    with pytest.raises(ValueError) as error:
        parse_op(text)
    assert refused in str(error.value)


def test_only_text_is_read():
    with pytest.raises(TypeError, match="an op value is read from its text, got int 7"):
        parse_op(7)
