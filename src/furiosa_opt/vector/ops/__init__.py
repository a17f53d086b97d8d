"""The op vocabulary of the Vector Engine (VE): op enums, argument modes, tag modes and ALU classes.

Names follow the upstream Rust crate (``furiosa-opt-std``, ``engine/vector``) so that kernels copied
from the upstream book read the same in Python: ``FxpBinaryOp.AddFxpSat``, ``FpBinaryOp.MulF(FpMulAlu.Mul0)``,
``TagMode.Comparison((Cmp.Less(0.0), Cmp.Greater(0.0), Cmp.False_, Cmp.False_))``.

Two spellings differ from Rust because Python forbids them: ``Cmp::True`` / ``Cmp::False`` are
``Cmp.True_`` / ``Cmp.False_``.

Exact CPU semantics live in :mod:`furiosa_opt.vector.arithmetic`; this package only names things and
answers two static questions per op: which ALU it occupies (:func:`alu_of`, each ALU is usable once
per VE pass) and which value starts a reduction (:func:`reduce_identity`).

Every name is importable from here (``from furiosa_opt.vector.ops import Cmp``). Where each lives, each
module importing only those above it:

* ``spelling.py``: ``_RustEnum``, the base of every enum here (Python ``repr``, Rust ``str``);
* ``alus.py``: ``Alu`` and ``FpMulAlu``;
* ``families.py``: the op enums, one per cluster and scalar (``LogicBinaryOpI32`` … ``InterSliceReduceOpF32``,
  ``FpBinaryOp``);
* ``modes.py``: ``BinaryArgMode``, ``TernaryArgMode``, ``LaneMode``;
* ``tags.py``: ``Cmp`` and ``TagMode``, how the tag unit tags each element;
* ``branch.py``: ``BitReq``, ``TagGuard``, ``Branched``, and the port operands ``RF`` and ``Stash``;
* ``tables.py``: ``alu_of``, ``reduce_identity``, ``scalar_dtype``, ``all_ops``;
* ``text.py``: ``parse_op``, an op value from its printed text (vISA), read without evaluating it.
"""

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
from furiosa_opt.vector.ops.tables import all_ops, alu_of, reduce_identity, scalar_dtype
from furiosa_opt.vector.ops.tags import Cmp, TagMode
from furiosa_opt.vector.ops.text import parse_op as parse_op  # for the vISA reader, not for kernels

__all__ = [
    "RF",
    "Alu",
    "BinaryArgMode",
    "BitReq",
    "Branched",
    "ClipBinaryOpF32",
    "ClipBinaryOpI32",
    "Cmp",
    "FpBinaryOp",
    "FpDivBinaryOp",
    "FpMulAlu",
    "FpTernaryOp",
    "FpUnaryOp",
    "FxpBinaryOp",
    "InterSliceReduceOpF32",
    "InterSliceReduceOpI32",
    "IntraSliceReduceOpF32",
    "IntraSliceReduceOpI32",
    "LaneMode",
    "LogicBinaryOpF32",
    "LogicBinaryOpI32",
    "Stash",
    "TagGuard",
    "TagMode",
    "TernaryArgMode",
    "all_ops",
    "alu_of",
    "reduce_identity",
    "scalar_dtype",
]
