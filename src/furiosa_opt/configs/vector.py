"""The numbers of the Tensor Unit's config fields that are not layouts: Vector Engine ops, modes, operands
and tag modes, the Switch Engine's config, the dtypes of the fetch, cast and commit adapters, the zero
point and the fixed-point width — each field declared once, with the code table its values name.

The layouts of the same stages (boxes and walks) are declared in `configs/layouts.py`; the derived counts
of `switch`, `transpose` and `vector_inter_slice_reduce` (`ring`, `in_steps`, `flits`, `moved`, `sources`,
`ratio`, the transpose's sizes), like `rf` (a buffer's name), are checked by the EDF reader on their own.
"""

from __future__ import annotations

from furiosa_opt.configs.codes import CodeTable
from furiosa_opt.configs.fields import Field, Record
from furiosa_opt.dtypes import DTYPE_CODES
from furiosa_opt.switch import KINDS as SWITCH_KINDS
from furiosa_opt.vector import codes
from furiosa_opt.vector.ops import (
    BinaryArgMode,
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
    LaneMode,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TernaryArgMode,
)

_SLOTS = 4  # a Branched operand: three immediates and the register-file port
_DTYPE = Field("dtype", DTYPE_CODES.bits, "the element type after the stage: its code in `dtypes.DTYPE_CODES`")
_OP = Field("op", codes.OPS.bits, "the ALU operation: its code in `vector.codes.OPS`")
_MODE = Field("mode", codes.MODES.bits, "the argument mode: its code in `vector.codes.MODES`")
_OPERAND = (
    Field("operand", codes.KINDS.bits, "each slot's two operand parts: kind codes (`vector.codes.KINDS`)",
          repeat=2 * _SLOTS),
    Field("operand_bits", 32, "each part's raw bits: an i32's two's complement, an f32's u32 pattern; else 0",
          repeat=2 * _SLOTS),
    Field("operand_guard", codes.GUARD_BITS, "each slot's tag guard (`vector.codes.encode_guard`)", repeat=_SLOTS),
)  # fmt: skip
_TAG = (
    Field("mode", codes.TAG_MODES.bits, "the TagMode's kind: its code in `vector.codes.TAG_MODES`"),
    Field("cmp", codes.CMPS.bits, "a Comparison's four comparisons: codes in `vector.codes.CMPS`", repeat=4),
    Field("cmp_kind", codes.KINDS.bits, "each boundary's kind: `none`, `i32` or `f32`", repeat=4),
    Field("cmp_bits", 32, "each boundary's raw bits (0 for none)", repeat=4),
)
_INT_WIDTH = Field("int_width", 5, "the fixed-point integer bits, 0 to 31")
_SWITCH = (
    Field("config", SWITCH_KINDS.bits, "the SwitchConfig variant: its code in `switch.KINDS`"),
    Field("slice1", 9, "the input Slice's second innermost sub-dimension (0: not in the variant)"),
    Field("slice0", 9, "the input Slice's innermost sub-dimension (0: not in the variant)"),
    Field("time0", 16, "the input Time's innermost sub-dimension (0: not in the variant)"),
    Field("ring_size", 9, "CustomBroadcast's slices per sub-ring (0: not in the variant)"),
)

_BINARY = (_OP, _MODE, *_OPERAND)
_ZIP = (_OP, _MODE)
RECORDS: dict[str, Record] = {
    r.stage: r
    for r in (
        Record("fetch_table_lookup", (_DTYPE,), "the Fetch Adapter's table lookup"),
        Record("fetch_cast", (_DTYPE,), "the Fetch Adapter's cast"),
        Record(
            "fetch_zero_point_sub",
            (Field("zero_point", 9, "subtracted from every element", signed=True), _DTYPE),
            "the Fetch Adapter's zero-point subtraction",
        ),
        Record("switch", _SWITCH, "the Switch Engine's topology"),
        Record("contract_lane", (Field("mode", codes.MODES.bits, "the LaneMode: its code in `vector.codes.MODES`"),)),
        Record("vector_intra_slice_tag", _TAG, "the tag unit"),
        *(
            Record(f"vector_{c}_zip", _ZIP, "a pair-mode op of group 0 and group 1")
            for c in ("logic", "fxp", "fp", "clip")
        ),
        *(Record(f"vector_{c}", _BINARY) for c in ("logic", "fxp", "fp_binary", "fp_ternary", "fp_div", "clip")),
        Record("vector_fp_unary", (_OP, Field("guard", codes.GUARD_BITS, "the elements it applies to"))),
        Record("vector_fxp_to_fp", (_INT_WIDTH,)),
        Record("vector_fp_to_fxp", (_INT_WIDTH,)),
        Record("vector_intra_slice_reduce", (_OP,)),
        Record("vector_inter_slice_reduce", (_OP,)),
        Record("vector_reinterpret", (_DTYPE,)),
        Record("cast", (_DTYPE,), "the Cast Engine"),
        Record("commit_cast", (_DTYPE,), "the Commit Adapter's cast"),
        Record("commit_cast_relu", (_DTYPE,), "the Commit Adapter's cast with ReLU"),
    )
}

# What an `op` or `mode` code may name in each stage: the op families and modes its engine runs.
_LOGIC, _CLIP = (LogicBinaryOpI32, LogicBinaryOpF32), (ClipBinaryOpI32, ClipBinaryOpF32)
OP_FAMILIES: dict[str, tuple[type, ...]] = {
    "vector_logic": _LOGIC,
    "vector_logic_zip": _LOGIC,
    "vector_fxp": (FxpBinaryOp,),
    "vector_fxp_zip": (FxpBinaryOp,),
    "vector_fp_binary": (FpBinaryOp,),
    "vector_fp_zip": (FpBinaryOp,),
    "vector_fp_ternary": (FpTernaryOp,),
    "vector_fp_div": (FpDivBinaryOp,),
    "vector_clip": _CLIP,
    "vector_clip_zip": _CLIP,
    "vector_fp_unary": (FpUnaryOp,),
    "vector_intra_slice_reduce": (IntraSliceReduceOpI32, IntraSliceReduceOpF32),
    "vector_inter_slice_reduce": (InterSliceReduceOpI32, InterSliceReduceOpF32),
}
MODE_FAMILIES: dict[str, type] = {
    **{r.stage: BinaryArgMode for r in RECORDS.values() if _MODE in r.fields},
    "vector_fp_ternary": TernaryArgMode,
    "contract_lane": LaneMode,
}
_TABLES: dict[str, CodeTable] = {"dtype": DTYPE_CODES, "config": SWITCH_KINDS, "cmp": codes.CMPS}


def problem(config: object) -> tuple[str, str] | None:
    """(field, why) for the first code of a typed config (`records.EngineConfig`, each field's width checked
    already) naming nothing its stage runs; None for a stage without a record here."""
    stage = config.stage
    record = RECORDS.get(stage)
    if record is None:
        return None
    declared = {f.name for f in record.fields}
    for name, table in _TABLES.items():
        for code in _listed(getattr(config, name, [])) if name in declared else ():
            if table.problem(code) is not None:
                return name, table.problem(code)
    if stage in OP_FAMILIES and not isinstance(_decoded(codes.OPS, config.op), OP_FAMILIES[stage]):
        return "op", f"{codes.OPS.describe(config.op)} is not an op of `{stage}`"
    if stage in MODE_FAMILIES and "mode" in declared and not isinstance(_decoded(codes.MODES, config.mode),
                                                                       MODE_FAMILIES[stage]):  # fmt: skip
        return "mode", f"{codes.MODES.describe(config.mode)} is not a mode of `{stage}`"
    if stage == "vector_intra_slice_tag":
        return _tag_problem(config)
    if "operand" in declared:
        return _operand_problem(config)
    if "guard" in declared:
        why = codes.guard_problem(config.guard)
        return None if why is None else ("guard", why)
    return None


def _tag_problem(config: object) -> tuple[str, str] | None:
    if codes.TAG_MODES.problem(config.mode) is not None:
        return "mode", codes.TAG_MODES.problem(config.mode)
    count = 4 if codes.TAG_MODES.value(config.mode) == "Comparison" else 0
    for name in ("cmp", "cmp_kind", "cmp_bits"):
        if len(getattr(config, name)) != count:
            return name, f"holds {len(getattr(config, name))} entries, its TagMode has {count} comparisons"
    for cmp, kind in zip(config.cmp, config.cmp_kind, strict=True):
        constant = codes.CMPS.value(cmp) in ("True", "False")
        if codes.KINDS.problem(kind) is not None or (codes.KINDS.value(kind) == "none") != constant:
            return (
                "cmp_kind",
                f"{codes.KINDS.describe(kind)} is not the boundary of a {codes.CMPS.value(cmp)} comparison",
            )
    return None


def _operand_problem(config: object) -> tuple[str, str] | None:
    kinds, guards, bits = config.operand, config.operand_guard, config.operand_bits
    if not guards or len(kinds) != 2 * len(guards) or len(bits) != len(kinds):
        return "operand", f"{len(kinds)} parts and {len(bits)} raw values for {len(guards)} slot(s)"
    for kind in kinds:
        if codes.KINDS.problem(kind) is not None:
            return "operand", codes.KINDS.problem(kind)
    if any(codes.KINDS.value(kind) == "none" for kind in kinds[::2]):
        return "operand", "a slot's first part is `none`"
    for guard in guards:
        why = codes.guard_problem(guard)
        if why is not None:
            return "operand_guard", why
    return None


def _decoded(table: CodeTable, code: int) -> object:
    return table.values[code] if table.problem(code) is None else None


def _listed(value: object) -> list:
    return value if isinstance(value, list) else [value]
