"""Port of upstream `furiosa-opt-examples/src/stotrf_table_lookup.rs`: a GEMM whose weight is packed `f4e2m1`
(NVFP4 / MXFP4 codes, two per byte) and decoded to `f8e4m3` before it reaches the Contraction Engine.

The sub-context Fetch Unit has no lookup table, so the decode is its own main-context pass: fetch the packed
weight, `fetch_table_lookup(f8e4m3)`, collect and `commit_view` into a fresh DM tensor; a plain sub-context
fetch → collect → `to_trf` then stages that f8e4m3 weight as the weight-stationary operand. Tokens sit on the
slices (`Tok / 8 % 2` cluster, `Tok % 8` slice), the f8e4m3 activation streams `Red` (one 64-wide f8 MAC),
the eight outputs of a group fold Interleaved into the lane, the Vector Engine multiplies each by its f32
per-output scale, and the result is cast to bf16 and committed into that group's tile of a DM output.

Differences from upstream: Rust's fixed DM addresses (`OUT_DM_ADDR`, `WEIGHT_F8_DM_ADDR`) have no Python
counterpart, because placement here is automatic; `for g in 0..(Out::SIZE / 8)` is a Python loop over the
two output groups. Upstream has no test of this kernel; ours check it against a numpy oracle on the CPU
backend bit for bit, with a weight holding every e2m1 code (0x8 = -0.0 included), and check that the
simulator returns the same bytes.
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

Tok, Red, Out = axes(Tok=16, Red=64, Out=16)

Chip = m["1"]
# Tokens on the slices: `Tok / 8 % 2` picks the cluster, `Tok % 8` the slice (padded to 256).
GemmCl = m["Tok / 8 % 2"]
TokSlice = m["Tok % 8 # 256"]

GROUPS = Out.size // 8  # output channels are handled eight at a time (one lane group)

assert Red.size % 64 == 0, "Red must be a multiple of the 64-element f8 MAC width"
assert Out.size % 8 == 0, "the output width must be a multiple of the 8-lane output group"
assert Tok.size <= 16, "Tok must map onto 2 clusters x 8 slices"


@device(chip=1)
def stotrf_table_lookup_gemm(
    ctx: Context,
    act: HbmTensor[f8e4m3, Chip, m["Tok, Red"]],
    weight: HbmTensor[f4e2m1, Chip, m["Out, Red"]],
    w_scale: HbmTensor[bf16, Chip, m["Out"]],
) -> HbmTensor[bf16, Chip, m["Tok, Out"]]:
    # The streamed operand: the e4m3 activation, one token per slice, `Red` in the element.
    act_dm = act.to_dm(ctx.tdma, GemmCl, TokSlice, m["Red"])

    # The token-major output in DM. Upstream pins it at `OUT_DM_ADDR`; DM placement is automatic here.
    out_dm = DmTensor.new(bf16, Chip, GemmCl, TokSlice, m["Out"])

    # Every per-output scale, broadcast to each token's slice.
    scale_all_dm = w_scale.to_dm(ctx.tdma, GemmCl, TokSlice, m["Out"])

    for g in range(GROUPS):
        # This group's eight packed weight rows, broadcast to each token's slice.
        weight_group = weight.view().tile(g, m["Out / 8"], 1, m[f"1 # {GROUPS}, Out % 8, Red"])
        weight_dm = weight_group.to_dm(ctx.tdma, GemmCl, TokSlice, m["Out % 8, Red"])

        # The decode pass on the main context: each 4-bit code becomes its f8e4m3 value, written to a DM
        # tensor the sub context reads next (upstream's `WEIGHT_F8_DM_ADDR`; placed automatically here).
        weight_f8_dm = DmTensor.new(f8e4m3, Chip, GemmCl, TokSlice, m["Out % 8, Red"])
        (
            ctx.main.begin(weight_dm.view())
            .fetch(m["Out % 8"], m["Red"])
            .fetch_table_lookup(f8e4m3)
            .collect(m["Out % 8, Red / 32"], m["Red % 32"])
            .commit_trim(m["Red % 32"])
            .commit_view(weight_f8_dm.view_mut())
        )

        # The decoded weight into the TRF, lanes `Out % 8`, with no conversion on the way.
        weight_trf = (
            ctx.sub.begin(weight_f8_dm.view())
            .fetch(m["Out % 8"], m["Red"])
            .collect(m["Out % 8, Red / 32"], m["Red % 32"])
            .to_trf(m["Out % 8"], m["Red"])
        )

        # This group's eight scales, widened to f32 in the VRF.
        scale_group = scale_all_dm.view().tile(g, m["Out / 8"], 1, m[f"1 # {GROUPS}, Out % 8"])
        scale_vrf = (
            ctx.sub.begin(scale_group)
            .fetch(m["1"], m["Out % 8"])
            .fetch_cast(f32)
            .collect(m["1"], m["Out % 8"])
            .to_vrf(m["Out % 8"])
        )

        # The f8 contraction over `Red` (one 64-wide MAC packet), the eight outputs in the lane, the scale
        # in the Vector Engine, bf16 out into this group's tile of the output.
        (
            ctx.main.begin(act_dm.view())
            .fetch(m["Red / 32"], m["Red % 32"])
            .collect(m["Red / 32"], m["Red % 32"])
            .contract_outer(weight_trf, m["Red / 64"], m["Red % 64"])
            .contract_packet(m["1"])
            .contract_time(m["1"])
            .contract_lane(LaneMode.Interleaved, m["1"], m["Out % 8"])
            .vector_init()
            .vector_intra_slice_tag(TagMode.Zero)
            .vector_narrow_split(m["Out / 4 % 2"], m["Out % 4"])
            .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), scale_vrf)
            .vector_widen_concat(m["1"], m["Out % 8"])
            .vector_final()
            .cast(bf16, m["Out % 8 # 16"])
            .commit_trim(m["Out % 8"])
            .commit_view(out_dm.view_mut().tile(g, m["Out / 8"], 1, m[f"1 #{{!}} {GROUPS}, Out % 8"]))
        )

    out = HbmTensor.new(bf16, Chip, m["Tok, Out"])
    out_dm.view().to_hbm_view(ctx.tdma, out.view_mut())
    return out


# ---- oracle -----------------------------------------------------------------------------------------

# The sixteen e2m1 values by code: sign bit 3, two exponent bits (bias 1), one mantissa bit; 0x8 is -0.
E2M1_VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32
)


def bf16_round_like_cast(x: np.ndarray) -> np.ndarray:
    """The Cast Engine's f32 → bf16 word: round to nearest even, an f32 subnormal becomes a signed zero and
    a NaN the quiet 0x7fc0 (the hardware conversion, not `half`'s user `from_f32`, which keeps subnormals)."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.astype(ml_dtypes.bfloat16).view(np.uint16).copy()
    word = x.view(np.uint32)
    subnormal = ((word & 0x7F800000) == 0) & ((word & 0x7FFFFF) != 0)
    bits[subnormal] = (word[subnormal] >> 16).astype(np.uint16) & 0x8000
    bits[np.isnan(x)] = 0x7FC0
    return bits


def oracle_products(act: np.ndarray, code: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The f32 `[Tok, Out]` before the cast: `scale[o] * Σ_red act[t, red] * decode(code[o, red]))`, the sum folded
    in f32 from +0.0 one `red` at a time in increasing order (the Contraction Engine's order for a contraction
    over `Red / 64` then `Red % 64`), then one f32 multiply by the scale widened from bf16."""
    # Decode through f8e4m3 as the Fetch Adapter does; every e2m1 value is exact in f8e4m3 and in f32.
    decoded = E2M1_VALUES[code].astype(ml_dtypes.float8_e4m3fn)
    weight = decoded.astype(np.float32)
    a = act.astype(np.float32)
    total = np.zeros((Tok.size, Out.size), dtype=np.float32)
    for r in range(Red.size):
        total = total + a[:, r : r + 1] * weight[None, :, r]  # each f8 × f8 product is exact in f32
    return total * scale.astype(np.float32)[None, :]  # no bf16 input is subnormal, so the widening is exact


def oracle(act: np.ndarray, code: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The kernel's bf16 words: `oracle_products` rounded as the cast stage does."""
    return bf16_round_like_cast(oracle_products(act, code, scale))


# ---- inputs -----------------------------------------------------------------------------------------


def every_code(seed: int) -> np.ndarray:
    """An `[Out, Red]` weight of e2m1 codes holding each of the sixteen codes 64 times, shuffled."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.arange(Out.size * Red.size) % 16).reshape(Out.size, Red.size).astype(np.uint8)


def activation(seed: int) -> np.ndarray:
    """Finite f8e4m3 activations over most of the type's range (no NaN codes 0x7f / 0xff)."""
    rng = np.random.default_rng(seed)
    code = rng.integers(0, 256, size=(Tok.size, Red.size), dtype=np.uint8)
    code[(code & 0x7F) == 0x7F] = 0x3F
    return code.view(ml_dtypes.float8_e4m3fn)


def scales(seed: int) -> np.ndarray:
    """Normal bf16 scales of both signs (a bf16 subnormal would be flushed by the hardware widening)."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.25, 4.0, size=Out.size) * rng.choice([-1.0, 1.0], size=Out.size)
    return values.astype(np.float32).astype(ml_dtypes.bfloat16)


def run(on: str, act: np.ndarray, code: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The kernel on backend `on`; the output's bf16 words as `[Tok, Out]`."""
    with backend(on) as launch_, Context.acquire() as ctx:
        act_hbm = HostTensor.from_numpy(act.view(f8e4m3.storage), f8e4m3, m["Tok, Red"]).to_hbm(ctx.pdma)
        weight_hbm = HostTensor.from_numpy(code.view(f4e2m1.storage), f4e2m1, m["Out, Red"]).to_hbm(ctx.pdma)
        scale_hbm = HostTensor.from_numpy(scale.view(bf16.storage), bf16, m["Out"]).to_hbm(ctx.pdma)
        out = launch_(stotrf_table_lookup_gemm, ctx, act_hbm, weight_hbm, scale_hbm).to_host(ctx.pdma).to_numpy()
    assert out.dtype == bf16.storage and out.shape == (Tok.size, Out.size)
    return out.view(np.uint16)


# ---- tests ------------------------------------------------------------------------------------------


def test_oracle_decode_table_is_e2m1():
    """The hand-written e2m1 values agree with ml_dtypes' reading of the codes, and each is exact in f8e4m3."""
    codes = np.arange(16, dtype=np.uint8)
    read = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    np.testing.assert_array_equal(read.view(np.uint32), E2M1_VALUES.view(np.uint32))
    through_f8 = E2M1_VALUES.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    np.testing.assert_array_equal(through_f8.view(np.uint32), E2M1_VALUES.view(np.uint32))


def test_inputs_cover_every_e2m1_code():
    code = every_code(seed=11)
    assert set(np.unique(code).tolist()) == set(range(16))
    # Every group of eight output rows sees every code too (each group is decoded by its own pass).
    for g in range(GROUPS):
        assert set(np.unique(code[8 * g : 8 * g + 8]).tolist()) == set(range(16))


@pytest.mark.parametrize("seed", [11, 12])
def test_cpu_matches_oracle_bit_for_bit(seed):
    act, code, scale = activation(seed), every_code(seed), scales(seed)
    got, want = run("cpu", act, code, scale), oracle(act, code, scale)
    assert np.count_nonzero(want) > want.size // 2, "the oracle must produce mostly nonzero outputs"
    np.testing.assert_array_equal(got, want)


def test_negative_zero_code_decodes_to_zero():
    """A weight of only code 0x8 (-0.0): every product is a signed zero and the fold starts from +0.0, so each
    sum is +0.0 and the output is the zero carrying the scale's sign; a lookup that decoded 0x8 to a nonzero
    value would show up here (the random activation is nonzero almost everywhere)."""
    act, scale = activation(13), scales(13)
    code = np.full((Out.size, Red.size), 0x8, dtype=np.uint8)
    got = run("cpu", act, code, scale)
    want = np.where(scale.astype(np.float32) < 0, np.uint16(0x8000), np.uint16(0)).astype(np.uint16)
    np.testing.assert_array_equal(got, np.broadcast_to(want, (Tok.size, Out.size)))
    np.testing.assert_array_equal(got, oracle(act, code, scale))


def test_group_tiles_land_in_their_columns():
    """Weight rows of group 1 all zero: columns 8..15 are zero and columns 0..7 are the oracle's, so the
    two `commit_view` tiles do not overlap or swap."""
    act, code, scale = activation(14), every_code(14), scales(14)
    code[8:] = 0
    got = run("cpu", act, code, scale)
    np.testing.assert_array_equal(got, oracle(act, code, scale))
    assert not (got[:, 8:] & 0x7FFF).any() and (got[:, :8] & 0x7FFF).any()  # magnitudes: -0.0 counts as zero


def fold_order_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Inputs whose result depends on the fold order: along `Red`, sixteen products +2688 (448 · 6), sixteen
    -2688, then one 2^-10 (2^-9 · 0.5), then zeros (activation 0, so the remaining weight cells can hold every
    code). Folded in increasing `Red` the big terms cancel exactly before 2^-10 arrives, so the sum is 2^-10;
    folded the other way 2^-10 comes first and is absorbed into the ±43008 partial sums."""
    act = np.zeros((Tok.size, Red.size), dtype=np.float32)
    act[:, :32], act[:, 32] = 448.0, 2.0**-9
    code = every_code(16)
    code[:, :16], code[:, 16:32], code[:, 32] = 0x7, 0xF, 0x1
    return act.astype(ml_dtypes.float8_e4m3fn), code


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_sum_folds_in_increasing_red(on):
    act, code = fold_order_inputs()
    scale = scales(16)
    assert set(np.unique(code).tolist()) == set(range(16))
    want = oracle(act, code, scale)
    # The check can fail: the same products folded from the last `Red` down give other words.
    weight, a = E2M1_VALUES[code], act.astype(np.float32)
    backwards = np.zeros((Tok.size, Out.size), dtype=np.float32)
    for r in reversed(range(Red.size)):
        backwards = backwards + a[:, r : r + 1] * weight[None, :, r]
    assert (bf16_round_like_cast(backwards * scale.astype(np.float32)) != want).all()
    tiny = bf16_round_like_cast(np.float32(2.0**-10) * scale.astype(np.float32))
    np.testing.assert_array_equal(want, np.broadcast_to(tiny, want.shape))
    np.testing.assert_array_equal(run(on, act, code, scale), want)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_subnormal_products_round_like_the_cast_stage(on):
    """Activations below 2^-3 (exponent field at most 3) and scales of 2^-126..2^-124 (bf16's smallest normals)
    make many `scale · sum` f32 subnormals: the cast stage flushes each to a signed zero, where `half`'s user
    `bf16::from_f32` (ml_dtypes' cast) would keep a nonzero bf16 subnormal, so the oracle's rounding is pinned."""
    act = (activation(17).view(np.uint8) & 0x9F).view(ml_dtypes.float8_e4m3fn)
    code = every_code(17)
    rng = np.random.default_rng(17)
    scale = (rng.choice([-1.0, 1.0], size=Out.size) * 2.0 ** rng.integers(-126, -123, size=Out.size)).astype(
        ml_dtypes.bfloat16
    )
    want = oracle(act, code, scale)
    user = oracle_products(act, code, scale).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.count_nonzero(want != user) > 10, "the inputs must make f32 subnormals that the two roundings split"
    np.testing.assert_array_equal(run(on, act, code, scale), want)


def test_simulator_matches_cpu():
    act, code, scale = activation(15), every_code(15), scales(15)
    cpu, npu = run("cpu", act, code, scale), run("npu", act, code, scale)
    np.testing.assert_array_equal(npu, cpu)
    np.testing.assert_array_equal(cpu, oracle(act, code, scale))
