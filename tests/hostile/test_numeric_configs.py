"""The EDF reader checks every field `configs/vector.py` declares: a config of each stage put in place of
the good EDF's `vector_fxp` config reads, and the same config with one field out of its width, or holding a
code that names nothing its stage runs, is refused with that field's path."""

import numpy as np
import pytest
from hostile.support import good_edf, rewrite

from furiosa_opt.compiler.edf import EdfError, read_edf
from furiosa_opt.configs.records import RECORDS as DECLARED
from furiosa_opt.configs.vector import RECORDS
from furiosa_opt.dtypes import DTYPE_CODES, bf16
from furiosa_opt.switch import KINDS as SWITCH_KINDS
from furiosa_opt.switch import SwitchConfig, fields
from furiosa_opt.vector import codes
from furiosa_opt.vector.ops import (
    BinaryArgMode,
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
    IntraSliceReduceOpI32,
    LaneMode,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TagGuard,
    TagMode,
    TernaryArgMode,
)

STAGE = 4  # the good EDF's `vector_fxp`, whose config the tests replace
F32 = np.dtype(np.float32)
_DTYPE = {"dtype": DTYPE_CODES.code(bf16)}
_BRANCHED = Branched.imm(TagGuard.group(1), 2.0).rf(TagGuard.all(), None)
_TAG = TagMode.Comparison((Cmp.Less(-1.5), Cmp.Equal(3), Cmp.True_, Cmp.False_))
_ZIPS = {
    "logic": LogicBinaryOpF32.BitXor,
    "fxp": FxpBinaryOp.AddFxp,
    "fp": FpBinaryOp.AddF,
    "clip": ClipBinaryOpF32.Max,
}
_BINARY = {"logic": LogicBinaryOpI32.BitAnd, "fxp": FxpBinaryOp.MulInt, "fp_binary": FpBinaryOp.MulF(FpMulAlu.Fma),
           "fp_div": FpDivBinaryOp.DivF, "clip": ClipBinaryOpI32.AbsMax}  # fmt: skip
_SAMPLES = {
    "fetch_table_lookup": _DTYPE,
    "fetch_cast": _DTYPE,
    "fetch_zero_point_sub": {"zero_point": -128, **_DTYPE},
    "switch": fields(SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4)),
    "contract_lane": {"mode": codes.MODES.code(LaneMode.Sequential)},
    "vector_intra_slice_tag": codes.encode_tag(_TAG),
    **{f"vector_{c}_zip": {"op": codes.OPS.code(op), "mode": codes.MODES.code(BinaryArgMode.Mode10)}
       for c, op in _ZIPS.items()},
    **{f"vector_{c}": {"op": codes.OPS.code(op), "mode": codes.MODES.code(BinaryArgMode.Mode01),
                       **codes.encode_operand(_BRANCHED, F32)} for c, op in _BINARY.items()},
    "vector_fp_ternary": {"op": codes.OPS.code(FpTernaryOp.FmaF), "mode": codes.MODES.code(TernaryArgMode.Mode102),
                          **codes.encode_operand((None, 0.5), F32)},
    "vector_fp_unary": {"op": codes.OPS.code(FpUnaryOp.Exp), "guard": codes.encode_guard(TagGuard.group(0))},
    "vector_fxp_to_fp": {"int_width": 31},
    "vector_fp_to_fxp": {"int_width": 0},
    "vector_intra_slice_reduce": {"op": codes.OPS.code(IntraSliceReduceOpI32.Max)},
    "vector_inter_slice_reduce": {"op": codes.OPS.code(InterSliceReduceOpF32.Mul)},
    "vector_reinterpret": _DTYPE,
    "cast": _DTYPE,
    "commit_cast": _DTYPE,
    "commit_cast_relu": _DTYPE,
}  # fmt: skip
# A code within the field's width that names nothing the stage runs, per field that holds codes.
_WRONG = {"dtype": len(DTYPE_CODES.values), "config": len(SWITCH_KINDS.values), "cmp": len(codes.CMPS.values),
          "cmp_kind": codes.KINDS.code("rf"), "operand": len(codes.KINDS.values), "operand_guard": 0x10,
          "guard": 0x10, "op": codes.OPS.code(FpUnaryOp.Sin),
          "mode": codes.MODES.code(TernaryArgMode.Mode020)}  # fmt: skip
_WRONG_IN = {("vector_fp_ternary", "mode"): codes.MODES.code(BinaryArgMode.Mode01),
             ("vector_intra_slice_tag", "mode"): len(codes.TAG_MODES.values),
             ("vector_fp_unary", "op"): codes.OPS.code(FxpBinaryOp.AddFxp)}  # fmt: skip


def _others(stage: str) -> dict:
    """The stage's other fields (layouts, derived counts, the register-file port) at values that read; their
    own reader tests are test_edf_reader's."""
    coded = {f.name for f in RECORDS[stage].fields}
    fields = [f for f in DECLARED[stage].fields if f.name not in coded]
    return {f.name: [] if f.repeat > 1 else 0 if f.name == "rf" else 1 for f in fields}


def _with(stage: str, **changed) -> bytes:
    config = {"stage": stage, **_others(stage), **_SAMPLES[stage], **changed}

    def edit(body: dict) -> None:
        next(c for c in body["streams"]["main"] if c["kind"] == "exec")["engines"][STAGE] = config

    return rewrite(GOOD, edit)


def _refused(data: bytes, field: str, fragment: str) -> None:
    with pytest.raises(EdfError) as caught:
        read_edf(data)
    assert f".engines[{STAGE}].{field}: " in str(caught.value) and fragment in str(caught.value), str(caught.value)


GOOD = good_edf()
CASES = [(stage, f) for stage, record in RECORDS.items() for f in record.fields]


def test_every_stage_with_a_record_has_a_sample_that_reads():
    assert set(_SAMPLES) == set(RECORDS)
    for stage in RECORDS:
        read_edf(_with(stage))


@pytest.mark.parametrize(("stage", "field"), CASES, ids=[f"{s}.{f.name}" for s, f in CASES])
def test_a_value_outside_the_width_is_refused(stage, field):
    beyond = 1 << (field.bits - 1 if field.signed else field.bits)
    value = [beyond] * len(_SAMPLES[stage][field.name]) if field.repeat > 1 else beyond
    _refused(_with(stage, **{field.name: value}), field.name, "range")


@pytest.mark.parametrize(("stage", "field"), [c for c in CASES if c[1].name in _WRONG],
                         ids=[f"{s}.{f.name}" for s, f in CASES if f.name in _WRONG])  # fmt: skip
def test_a_code_naming_nothing_the_stage_runs_is_refused(stage, field):
    wrong = _WRONG_IN.get((stage, field.name), _WRONG[field.name])
    value = [wrong] * len(_SAMPLES[stage][field.name]) if field.repeat > 1 else wrong
    _refused(_with(stage, **{field.name: value}), field.name, "")
