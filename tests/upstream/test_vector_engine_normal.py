"""Port of upstream `furiosa-opt-examples/src/vector_engine/normal.rs` (axes from `vector_engine.rs`) and its
tests, `furiosa-opt-examples/tests/vector_engine/normal.rs`.

Single-stream Vector Engine chains on `A = 512` elements (one `A % 2` pair per slice, padded to a flit):
constants, VRF operands, the stash, reinterprets and every `*_with_mode` form. Differences from upstream:

* Upstream's test file also checks `ve_elementwise_ternary` and `ve_elementwise_ternary_stash`, which live in
  upstream's `vector_engine/zip.rs`; they are ported here next to the tests that use them.
* Upstream's `test_ve_elementwise_fxp_chain` launches the refused kernel `negative/vector_engine.rs`; that
  kernel lives in `tests/negative/upstream_vector_engine.py` (a refused fixture), and the test here launches it
  from there and expects the ALU conflict to be refused.
* Upstream has no test for `ve_elementwise_neg_offset_f32`, `ve_elementwise_fp_unary`, the eight `*_with_mode`
  kernels or `ve_group_pair_fp_zip_with_mode`; ours check each against a numpy oracle.
* Upstream compares with `SmallRng::seed_from_u64(42)` inputs; ours are numpy's `default_rng(42)` (upstream's
  distributions: i32 over every value, f32 in [0, 1)).

Every oracle is computed on the host with numpy, independently of the library's Vector Engine arithmetic.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.diagnostics import VerifyError

# The axes of upstream `vector_engine.rs` these kernels use (the others serve the reduce/branch/zip modules).
A, B, I = axes(A=512, B=256, I=2)

Chip = m["1"]
Cluster = m["1 # 2"]

# =============================================================================
# Kernels of upstream `vector_engine/normal.rs`
# =============================================================================


@device(chip=1)
def ve_elementwise_fxp_const(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 100)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_full_pipeline(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 100)
        .vector_fxp_to_fp(31)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 2.5)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_fp_to_fxp(31)
        .vector_clip(ClipBinaryOpI32.Max, 0)
        .vector_clip(ClipBinaryOpI32.Min, 1000)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_neg_offset_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """`x - 100.0` written as `AddF` of a negated named constant. Upstream pins its Rust lowering of the
    scalar `Neg` (a const-folded immediate); in Python the negation is plain host arithmetic."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    offset = 100.0
    neg_offset = -offset
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary(FpBinaryOp.AddF, neg_offset)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_reinterpret_abs_f32(
    ctx: Context, input: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """`|x|` by clearing the sign bit on the i32 view of the stream; the reinterprets use no ALU."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_reinterpret(i32)
        .vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFF_FFFF)
        .vector_reinterpret(f32)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_reinterpret_chain_f32(
    ctx: Context, input: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """`min(|x| * 2, 100.0)`, the doubling as `exponent += 1` on the bits; the f32 round trip in the middle
    is redundant on purpose (consecutive reinterprets cost nothing)."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_reinterpret(i32)
        .vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFF_FFFF)
        .vector_reinterpret(f32)
        .vector_reinterpret(i32)
        .vector_fxp(FxpBinaryOp.AddFxp, 1 << 23)
        .vector_reinterpret(f32)
        .vector_clip(ClipBinaryOpF32.Min, 100.0)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_stash_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_stash()
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 2.0)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_clip(ClipBinaryOpF32.Max, Stash)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_stash_i32(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    """Stash the input, multiply by 2, then max with the stashed value."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_stash()
        .vector_fxp(FxpBinaryOp.MulInt, 2)
        .vector_clip(ClipBinaryOpI32.Max, Stash)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_fp_unary(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_unary(FpUnaryOp.Exp)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_fp_binary_with_mode(
    ctx: Context, input: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10, 2.0)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_fp_ternary_with_mode(
    ctx: Context, input: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode120, (2.0, 1.0))
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_logic_with_mode(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_logic_with_mode(LogicBinaryOpI32.BitXor, BinaryArgMode.Mode11, 0xFF)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_fxp_with_mode(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 7)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_fp_div_with_mode(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_div_with_mode(BinaryArgMode.Mode10, 2.0)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_clip_with_mode(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip_with_mode(ClipBinaryOpI32.AddFxp, BinaryArgMode.Mode11, 3)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_fp_zip_with_mode(
    ctx: Context, lhs: HbmTensor[f32, Chip, m["A"]], rhs: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """Pair mode (issue 18, not built yet): group 0 = lhs, group 1 = rhs, `SubF` in `Mode10` = rhs - lhs."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_narrow_split(m["1 # 2"], m["A % 2 # 4"])
        .vector_fp_zip_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10)
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_stash_fxp_fxp(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    """Stash written before the fxp stage, read at the clip stage: `max(2x, x)` on i32."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_stash()
        .vector_fxp(FxpBinaryOp.MulInt, 2)
        .vector_clip(ClipBinaryOpI32.Max, Stash)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_stash_after_reinterpret_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """`2|x|`: the stash is written after the reinterpret back to f32, so the f32 clip can read it; reading
    with `Add` (not `Max`) makes the point of capture observable."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_reinterpret(i32)
        .vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFF_FFFF)  # |x|, masked on the i32 view
        .vector_reinterpret(f32)
        .vector_stash()  # stashes the f32 the stream carries here
        .vector_clip(ClipBinaryOpF32.Add, Stash)  # |x| + |x|
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_stash_after_widen_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """A 4-way result reaches the stash after the widen: `2 * max(2x, 0)`."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 2.0)
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_clip(ClipBinaryOpF32.Max, 0.0)
        .vector_stash()
        .vector_clip(ClipBinaryOpF32.Add, Stash)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_logic(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_logic(LogicBinaryOpI32.BitAnd, 0xFF)
        .vector_logic(LogicBinaryOpI32.BitOr, 0x100)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_vrf(
    ctx: Context, input: HbmTensor[i32, Chip, m["A, B"]], vrf_data: HbmTensor[i32, Chip, m["B"]]
) -> HbmTensor[i32, Chip, m["A, B"]]:
    input_intermediate = input.to_hbm(ctx.tdma, m["B, A"])
    input_dm = input_intermediate.to_dm(ctx.tdma, Cluster, m["A / 2"], m["B, A % 2"])
    vrf_dm = vrf_data.to_dm(ctx.tdma, Cluster, m["A / 2"], m["B"])
    vrf = (
        ctx.sub.begin(vrf_dm.view())
        .fetch(m["1"], m["B"])
        .fetch_cast(i32)
        .collect(m["B / 8"], m["B % 8"])
        .to_vrf(m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["B"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["B"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, vrf)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["B, A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def ve_elementwise_multi_vrf(
    ctx: Context,
    input: HbmTensor[i32, Chip, m["A, B"]],
    vrf_data1: HbmTensor[i32, Chip, m["B"]],
    vrf_data2: HbmTensor[i32, Chip, m["B"]],
) -> HbmTensor[i32, Chip, m["A, B"]]:
    input_intermediate = input.to_hbm(ctx.tdma, m["B, A"])
    input_dm = input_intermediate.to_dm(ctx.tdma, Cluster, m["A / 2"], m["B, A % 2"])
    vrf_dm1 = vrf_data1.to_dm(ctx.tdma, Cluster, m["A / 2"], m["B"])
    vrf_dm2 = vrf_data2.to_dm(ctx.tdma, Cluster, m["A / 2"], m["B"])
    vrf1 = (
        ctx.sub.begin(vrf_dm1.view())
        .fetch(m["1"], m["B"])
        .fetch_cast(i32)
        .collect(m["B / 8"], m["B % 8"])
        .to_vrf(m["B"])
    )
    vrf2 = (
        ctx.sub.begin(vrf_dm2.view())
        .fetch(m["1"], m["B"])
        .fetch_cast(i32)
        .collect(m["B / 8"], m["B % 8"])
        .to_vrf(m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["B"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["B"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, vrf1)
        .vector_fxp(FxpBinaryOp.MulInt, vrf2)
        .vector_clip(ClipBinaryOpI32.AddFxp, vrf1)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["B, A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A, B"])


# =============================================================================
# From upstream `vector_engine/zip.rs`: the two ternary kernels upstream's normal.rs tests check
# =============================================================================


@device(chip=1)
def ve_elementwise_ternary(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """`FmaF` with operands `(2.0, 3.0)`: `x * 2.0 + 3.0`, rounded once."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 3.0))
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_elementwise_ternary_stash(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """The stash written in the 4-way region and read as the ternary's first operand: `x * x + 1.0`."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_stash()
        .vector_fp_ternary(FpTernaryOp.FmaF, (Stash, 1.0))
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


# =============================================================================
# Host side and oracles
# =============================================================================

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
F32_MIN_POSITIVE = np.float32(np.finfo(np.float32).tiny)  # Rust f32::MIN_POSITIVE, 2^-126


def run(kernel, *inputs: np.ndarray, mappings: tuple[str, ...] | None = None) -> np.ndarray:
    """Launch `kernel` on the CPU backend with `inputs` (by default all over `A`); the output as numpy."""
    mappings = mappings or ("A",) * len(inputs)
    with Context.acquire() as ctx:
        args = [
            HostTensor.from_numpy(x, i32 if x.dtype == np.int32 else f32, m[s]).to_hbm(ctx.pdma)
            for x, s in zip(inputs, mappings, strict=True)
        ]
        out = launch(kernel, ctx, *args)
        return out.to_host(ctx.pdma).to_numpy()


def rand_i32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(I32_MIN, I32_MAX, size=shape, dtype=np.int32, endpoint=True)


def rand_f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape, dtype=np.float32)


def wrap_i32(values: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of exact (int64 or Python int) results, like Rust's `wrapping_*`."""
    return ((np.asarray(values, dtype=object) - I32_MIN) % 2**32 + I32_MIN).astype(np.int32)


def round_half_away_saturating(x: np.ndarray) -> np.ndarray:
    """Rust's `f32::round` (ties away from zero) then `as i32` (saturating), on f32 values."""
    v = x.astype(np.float64)  # exact; adding 0.5 below stays exact for every f32 magnitude that matters
    r = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.clip(r, I32_MIN, I32_MAX).astype(np.int32)


def fma_exact(a: np.ndarray, b, c) -> np.ndarray:
    """`a.mul_add(b, c)` on f32: `a * b + c` in float64, rounded once to f32, asserting (TwoSum error zero)
    that float64 held the exact value, so the one rounding is the fused one."""
    product = a.astype(np.float64) * np.asarray(b, dtype=np.float64)  # exact: 24 + 24 bits
    addend = np.asarray(c, dtype=np.float64)
    total = product + addend
    back = total - product
    error = (product - (total - back)) + (addend - back)
    assert not error.any(), "float64 did not hold a * b + c exactly"
    return total.astype(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def assert_f32_values_equal(expected: np.ndarray, actual: np.ndarray) -> None:
    """Upstream `assert_f32_vec_eq`: equal by value, NaN equal to NaN (so +0.0 == -0.0)."""
    assert actual.dtype == np.float32
    np.testing.assert_array_equal(actual, expected)


def assert_f32_bits_equal(expected: np.ndarray, actual: np.ndarray) -> None:
    """Upstream `assert_f32_bits_eq`: equal bit patterns, so a stray `-0.0` fails."""
    assert actual.dtype == np.float32
    np.testing.assert_array_equal(bits(actual), bits(expected))


# =============================================================================
# Tests of upstream `tests/vector_engine/normal.rs`
# =============================================================================


def test_ve_elementwise_fxp_const():
    x = rand_i32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_fxp_const, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, wrap_i32(x.astype(np.int64) + 100))  # x.wrapping_add(100)


def load_negative_fixture():
    path = Path(__file__).resolve().parent.parent / "negative" / "upstream_vector_engine.py"
    name = "upstream_negative_vector_engine"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_ve_elementwise_fxp_chain():
    """AddFxp and SubFxp both need the FxpAdd ALU; upstream expects the launch to panic, ours refuses it."""
    kernel = load_negative_fixture().ve_elementwise_fxp_chain
    x = rand_i32(np.random.default_rng(42), A.size)
    with pytest.raises(VerifyError) as error:
        run(kernel, x)
    assert error.value.rule == "vector-alu"
    assert "FxpAdd" in error.value.message


def test_ve_elementwise_full_pipeline():
    x = rand_i32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_full_pipeline, x)
    # clamp(round((x + 100) as f32 * 2.5) as i32, 0, 1000), every step as upstream's host computes it
    shifted = wrap_i32(x.astype(np.int64) + 100)
    scaled = shifted.astype(np.float32) * np.float32(2.5)  # i32 → f32 rounds to nearest even, then one f32 mul
    expected = np.clip(round_half_away_saturating(scaled), 0, 1000)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_ve_elementwise_full_pipeline_inside_the_clip():
    """Ours: random i32 nearly always clamps to 0 or 1000, so also run inputs that land inside the clip,
    where odd `x + 100` makes `* 2.5` a tie that must round away from zero."""
    x = np.arange(-300, 212, dtype=np.int32)
    got = run(ve_elementwise_full_pipeline, x)
    scaled = (x.astype(np.float64) + 100) * 2.5  # exact in float64 for these inputs
    expected = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), 0, 1000).astype(np.int32)
    assert np.count_nonzero((expected > 0) & (expected < 1000)) > 300
    assert expected[x == -99][0] == 3  # 2.5 rounds away from zero, not to even
    np.testing.assert_array_equal(got, expected)


def test_ve_elementwise_stash_f32():
    x = rand_f32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_stash_f32, x)
    assert_f32_values_equal(np.fmax(x * np.float32(2.0), x), got)  # f32::max(x * 2.0, x)


def test_ve_elementwise_stash_i32():
    x = rand_i32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_stash_i32, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.maximum(wrap_i32(x.astype(np.int64) * 2), x))  # max(x.wrapping_mul(2), x)


def test_ve_stash_fxp_fxp():
    x = rand_i32(np.random.default_rng(42), A.size)
    got = run(ve_stash_fxp_fxp, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.maximum(wrap_i32(x.astype(np.int64) * 2), x))


# Upstream's corner cases for the reinterpret kernels: both signed zeros, the smallest normal, values the
# clip cuts and values it keeps.
REINTERPRET_CORNERS = np.array([0.0, -0.0, -1.0, 1.0, -0.5, 3.25, -80.0, 120.0, F32_MIN_POSITIVE], dtype=np.float32)

# `min(|x| with exponent + 1, 100.0)` per corner, from the bit layout: ±0.0 get exponent field 1, i.e.
# f32::MIN_POSITIVE, and MIN_POSITIVE doubles.
REINTERPRET_CHAIN_EXPECTED = np.array(
    [F32_MIN_POSITIVE, F32_MIN_POSITIVE, 2.0, 2.0, 1.0, 6.5, 100.0, 100.0, 2 * F32_MIN_POSITIVE], dtype=np.float32
)


def cycled(values: np.ndarray) -> np.ndarray:
    return values[np.arange(A.size) % values.size]


def test_ve_elementwise_reinterpret_abs_f32():
    x = cycled(REINTERPRET_CORNERS)
    got = run(ve_elementwise_reinterpret_abs_f32, x)
    assert_f32_bits_equal(np.abs(x), got)  # bitwise: a `-0.0` in the output fails


def test_ve_elementwise_reinterpret_chain_f32():
    got = run(ve_elementwise_reinterpret_chain_f32, cycled(REINTERPRET_CORNERS))
    assert_f32_bits_equal(cycled(REINTERPRET_CHAIN_EXPECTED), got)


def test_ve_stash_after_reinterpret_f32():
    x = cycled(REINTERPRET_CORNERS)
    got = run(ve_stash_after_reinterpret_f32, x)
    assert_f32_bits_equal(np.float32(2.0) * np.abs(x), got)


def test_ve_stash_after_widen_f32():
    x = rand_f32(np.random.default_rng(42), A.size)
    got = run(ve_stash_after_widen_f32, x)
    assert_f32_values_equal(np.float32(2.0) * np.fmax(x * np.float32(2.0), np.float32(0.0)), got)


def test_ve_elementwise_logic():
    x = rand_i32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_logic, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (x & 0xFF) | 0x100)


# Upstream marks this test `#[ignore = "Failing on cpu"]`; ours runs and passes on the CPU backend. The oracle
# adds with wraparound (AddFxp wraps), where upstream's host `x + y` would overflow on random i32.
def test_ve_elementwise_vrf():
    rng = np.random.default_rng(42)
    lhs, rhs = rand_i32(rng, A.size, B.size), rand_i32(rng, B.size)
    got = run(ve_elementwise_vrf, lhs, rhs, mappings=("A, B", "B"))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, wrap_i32(lhs.astype(np.int64) + rhs[None, :]))


def test_ve_elementwise_multi_vrf():
    rng = np.random.default_rng(42)
    x, vrf1, vrf2 = rand_i32(rng, A.size, B.size), rand_i32(rng, B.size), rand_i32(rng, B.size)
    got = run(ve_elementwise_multi_vrf, x, vrf1, vrf2, mappings=("A, B", "B", "B"))
    # ((x + vrf1) * vrf2) + vrf1, each step wrapping, vrf broadcast over A
    step = wrap_i32(x.astype(np.int64) + vrf1[None, :])
    step = wrap_i32(step.astype(object) * vrf2[None, :].astype(object))
    expected = wrap_i32(step.astype(np.int64) + vrf1[None, :])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_ve_elementwise_ternary():
    x = rand_f32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_ternary, x)
    assert_f32_values_equal(fma_exact(x, 2.0, 3.0), got)  # x.mul_add(2.0, 3.0)


def test_ve_elementwise_ternary_stash():
    x = rand_f32(np.random.default_rng(42), A.size)
    got = run(ve_elementwise_ternary_stash, x)
    assert_f32_values_equal(fma_exact(x, x, 1.0), got)  # x.mul_add(x, 1.0)


# =============================================================================
# Ours: the kernels upstream leaves untested
# =============================================================================


def test_ve_elementwise_neg_offset_f32():
    x = rand_f32(np.random.default_rng(1), A.size)
    got = run(ve_elementwise_neg_offset_f32, x)
    assert_f32_bits_equal(x + np.float32(-100.0), got)


def test_ve_elementwise_fp_unary():
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.expf.argtypes, libm.expf.restype = [ctypes.c_float], ctypes.c_float
    x = (rand_f32(np.random.default_rng(2), A.size) - np.float32(0.5)) * np.float32(40.0)  # exp over [-20, 20)
    got = run(ve_elementwise_fp_unary, x)
    assert_f32_bits_equal(np.array([libm.expf(float(v)) for v in x], dtype=np.float32), got)


def test_ve_elementwise_fp_binary_with_mode():
    x = rand_f32(np.random.default_rng(3), A.size)
    got = run(ve_elementwise_fp_binary_with_mode, x)
    assert_f32_bits_equal(np.float32(2.0) - x, got)  # Mode10: operand - stream


def test_ve_elementwise_fp_ternary_with_mode():
    x = rand_f32(np.random.default_rng(4), A.size)
    got = run(ve_elementwise_fp_ternary_with_mode, x)
    # Mode120: op(operand0, operand1, stream) = 2.0.mul_add(1.0, x) = 2.0 + x, one rounding
    assert_f32_bits_equal(fma_exact(np.full_like(x, 2.0), 1.0, x), got)
    assert_f32_bits_equal(np.float32(2.0) + x, got)


def test_ve_elementwise_logic_with_mode():
    x = rand_i32(np.random.default_rng(5), A.size)
    got = run(ve_elementwise_logic_with_mode, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.zeros(A.size, dtype=np.int32))  # Mode11: 0xFF ^ 0xFF, the stream unused


def test_ve_elementwise_fxp_with_mode():
    x = rand_i32(np.random.default_rng(6), A.size)
    x[:4] = [I32_MIN, I32_MAX, 0, 7]  # 7 - MIN wraps
    got = run(ve_elementwise_fxp_with_mode, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, wrap_i32(7 - x.astype(np.int64)))  # Mode10: 7 - x, wrapping


def test_ve_elementwise_fp_div_with_mode():
    x = rand_f32(np.random.default_rng(7), A.size)
    x[0] = 0.0  # 2 / 0 = inf
    got = run(ve_elementwise_fp_div_with_mode, x)
    with np.errstate(divide="ignore"):
        expected = np.float32(2.0) / x  # Mode10: operand / stream
    assert np.isinf(expected[0])
    assert_f32_bits_equal(expected, got)


def test_ve_elementwise_clip_with_mode():
    x = rand_i32(np.random.default_rng(8), A.size)
    got = run(ve_elementwise_clip_with_mode, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.full(A.size, 6, dtype=np.int32))  # Mode11: 3 + 3, the stream unused


def test_ve_group_pair_fp_zip_with_mode():
    rng = np.random.default_rng(9)
    lhs, rhs = rand_f32(rng, A.size), rand_f32(rng, A.size)
    got = run(ve_group_pair_fp_zip_with_mode, lhs, rhs)
    assert_f32_bits_equal(rhs - lhs, got)  # Mode10 on (group 0, group 1) = group 1 - group 0
