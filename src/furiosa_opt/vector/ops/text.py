"""Op values read back from their printed text, as vISA attributes carry them (EDF configs carry codes).

The text comes from files, so it is never evaluated. It is parsed as a Python expression and its tree is
read node by node: the value is built from the nodes ``repr`` of an op value writes, and any other node is
refused with a ``ValueError`` naming it. The grammar:

    op      := member | call | "Stash"
    member  := CLASS "." NAME                 FpUnaryOp.Exp, Cmp.True_, TagMode.Zero
    call    := callee "(" [arg ("," arg)*] ")"  FpBinaryOp.MulF(FpMulAlu.Mul0), Cmp.Less(-1.5), TagGuard.all()
    callee  := CLASS "." NAME                 a constructor: Cmp.Less, TagGuard.matches, Branched.imm
             | call "." NAME                  a builder step: Branched.imm(g, 2.0).rf(g, RF)
    arg     := op | "RF" | number | "(" [arg ("," arg)*] ")"
    number  := real | "np." SCALAR "(" real ")"
    real    := ["-"] (INT | FLOAT | "inf" | "nan")

CLASS is a class of the vocabulary, NAME a public attribute (no leading underscore), SCALAR one of numpy's
sized integer and float types (``int8`` … ``uint64``, ``float16`` … ``float64``). Every op, each member and
each call's result, must be a value of one of those classes; RF marks the register-file port inside an
operand and is no op.

``inf`` and ``nan`` are how ``repr`` writes a float's special values (``-inf`` with the minus), and
``np.float32(0.5)`` how it writes a numpy scalar, which a ``Cmp`` boundary may be. A constructor's own
refusal (``Cmp.Less(True)``, a fourth ``Branched.imm``) comes back as a ``ValueError`` with its message.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

import numpy as np

from furiosa_opt.vector.ops.alus import Alu, FpMulAlu
from furiosa_opt.vector.ops.branch import RF, BitReq, Branched, Stash, TagGuard
from furiosa_opt.vector.ops.families import (
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
)
from furiosa_opt.vector.ops.modes import BinaryArgMode, LaneMode, TernaryArgMode
from furiosa_opt.vector.ops.tags import Cmp, TagMode

CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Alu,
        BinaryArgMode,
        BitReq,
        Branched,
        ClipBinaryOpF32,
        ClipBinaryOpI32,
        Cmp,
        FpBinaryOp,
        FpDivBinaryOp,
        FpMulAlu,
        FpTernaryOp,
        FpUnaryOp,
        FxpBinaryOp,
        InterSliceReduceOpF32,
        InterSliceReduceOpI32,
        IntraSliceReduceOpF32,
        IntraSliceReduceOpI32,
        LaneMode,
        LogicBinaryOpF32,
        LogicBinaryOpI32,
        TagGuard,
        TagMode,
        TernaryArgMode,
    )
}
_VALUES = tuple(CLASSES.values())
_SPECIAL_FLOATS = {"inf": math.inf, "nan": math.nan}
_NUMPY_INTEGERS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
_NUMPY_SCALARS = {scalar.__name__: scalar for scalar in (*_NUMPY_INTEGERS, np.float16, np.float32, np.float64)}
_NAMES = {name: "a class is no value: name one of its members or call a constructor" for name in CLASSES}
_NAMES["RF"] = "RF marks the register-file port inside an operand and is no op value"


class _Refused(Exception):
    """A node outside the grammar, and why."""

    def __init__(self, node: ast.AST, why: str):
        self.node, self.why = node, why


def parse_op(text: str) -> object:
    """An op value from its printed form (`FxpBinaryOp.AddFxp`, `FpBinaryOp.MulF(FpMulAlu.Mul0)`), as
    vISA text carries it; ValueError for any text outside the grammar above.

    >>> parse_op("TagMode.Comparison((Cmp.Less(-inf), Cmp.Equal(3), Cmp.False_, Cmp.False_))")
    TagMode.Comparison((Cmp.Less(-inf), Cmp.Equal(3), Cmp.False_, Cmp.False_))
    """
    if not isinstance(text, str):
        raise TypeError(f"an op value is read from its text, got {type(text).__name__} {text!r}")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError):  # ValueError: a null byte; RecursionError: deep nesting
        raise ValueError(f"`{text}` is not a Vector Engine op value") from None
    try:
        return _Reader(text).op(tree.body)
    except _Refused as refused:
        part = ast.get_source_segment(text, refused.node)
        raise ValueError(f"`{text}` is not a Vector Engine op value (`{part}` is not allowed: {refused.why})") from None
    except RecursionError:
        raise ValueError(f"`{text}` is not a Vector Engine op value (it nests too deeply)") from None


class _Reader:
    """The walk over one text's tree; `built` runs the vocabulary's own constructors."""

    def __init__(self, text: str):
        self.text = text

    def op(self, node: ast.expr) -> object:
        if isinstance(node, ast.Name) and node.id == "Stash":
            return Stash
        if isinstance(node, ast.Attribute):
            value = self.attribute(node, step=False)
        elif isinstance(node, ast.Call):
            value = self.call(node)
        elif isinstance(node, ast.Name):
            raise _Refused(node, _NAMES.get(node.id, "no name of the vocabulary (its classes, RF, Stash, inf, nan)"))
        else:
            raise _Refused(node, "an op value is a member, a constructor's call or Stash")
        if not isinstance(value, _VALUES):
            raise _Refused(node, f"it gives a {type(value).__name__}, not a Vector Engine op value")
        return value

    def attribute(self, node: ast.Attribute, step: bool) -> object:
        """`CLASS.NAME`, or with `step` also `call.NAME`: a builder step of the op value a call gave."""
        if node.attr.startswith("_"):
            raise _Refused(node, "a private attribute")
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in CLASSES:
            target = CLASSES[owner.id]
        elif step and isinstance(owner, ast.Call):
            target = self.op(owner)
        else:
            raise _Refused(owner, "attributes are read of the vocabulary's classes, and called on a call's op value")
        return self.built(lambda: getattr(target, node.attr))

    def call(self, node: ast.Call) -> object:
        if node.keywords:
            raise _Refused(node.keywords[0], "arguments are positional")
        if not isinstance(node.func, ast.Attribute):
            raise _Refused(node.func, "a call's callee is CLASS.NAME or a builder step of an op value")
        callee = self.attribute(node.func, step=True)
        args = [self.arg(arg) for arg in node.args]
        return self.built(lambda: callee(*args))

    def arg(self, node: ast.expr) -> object:
        if isinstance(node, ast.Tuple):
            return tuple(self.arg(element) for element in node.elts)
        if isinstance(node, ast.Name) and node.id == "RF":
            return RF
        if _is_number(node):
            return self.number(node)
        return self.op(node)

    def number(self, node: ast.expr) -> object:
        if isinstance(node, ast.UnaryOp):
            return -self.unsigned(node.operand)
        if isinstance(node, ast.Call):
            scalar = _NUMPY_SCALARS.get(node.func.attr)
            if scalar is None:
                raise _Refused(node.func, "not a sized numpy integer or float type")
            if node.keywords or len(node.args) != 1 or not _is_number(node.args[0], numpy=False):
                raise _Refused(node, "a numpy scalar is written with one number")
            value = self.number(node.args[0])
            return self.built(lambda: scalar(value))
        return self.unsigned(node)

    def unsigned(self, node: ast.expr) -> int | float:
        if isinstance(node, ast.Name) and node.id in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[node.id]
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        raise _Refused(node, "not a number (an int, a float, inf or nan)")

    def built(self, make: Callable[[], object]) -> object:
        """What a constructor, builder step or attribute gives; its refusal is this text's ValueError."""
        try:
            return make()
        except Exception as error:
            raise ValueError(f"unknown Vector Engine op value `{self.text}`: {error}") from None


def _is_number(node: ast.expr, numpy: bool = True) -> bool:
    """Whether `node` has a number's shape (its parts are checked as it is read)."""
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub)
    if isinstance(node, ast.Name):
        return node.id in _SPECIAL_FLOATS
    if isinstance(node, ast.Call):
        func = node.func
        return numpy and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "np"
    return isinstance(node, ast.Constant)
