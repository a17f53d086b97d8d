"""Port of upstream `furiosa-opt-examples/src/vector_engine/branch.rs`: the branch unit, where
`TagMode.Comparison` gives each element a 4-bit tag and `Branched` operands pick, per element, the first slot
whose `TagGuard` admits that tag (elements no slot admits pass through unchanged).

Two kernels, both `@device(chip=1, pe=1)` with `Cluster = m["1"]` as upstream:

* `ve_elementwise_branched` (f32): tags = (x == 0, x > 0, x < 0, bits(x) <u bits(-0.0)); negatives are masked
  to +0.0 by a guarded `BitAnd`, the non-zeros go through `x * -2 + 10` (`FmaF`), then a two-slot `Max` clips
  the negatives against 1.0 and every other element against a per-(slice, time) scale from the VRF.
* `ve_branch_bit_order` (i32): one comparison per tag bit, three guarded `BitOr` immediates marking bits 0, 2
  and 3, and a guarded stash read on the clip unit for bit 1, so the output shows which bit fired.

Upstream has no tests for either kernel; the tests here are ours, and each runs on the CPU backend and on the
simulator. Their oracles compute the tags with numpy from the four comparisons (Equal is `==`, so -0.0 == 0.0;
the unsigned comparisons compare the raw 32-bit patterns), spell each guard out as a boolean expression of the
tag bits, and apply each op's slots in order, first match wins. The inputs make every arm fire on many lanes,
which the random-input tests assert; they also check that an oracle with the slot order reversed (or the bits read
in reverse order) would give a different answer, so the first-match rule and the bit order are observable.

The axes are upstream's `BP = 64, BA = 4, BT = 8` (prefixed upstream so as not to clash with the parent
module's names).
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

BP, BA, BT = axes(BP=64, BA=4, BT=8)

Chip = m["1"]
Cluster = m["1"]

One, Zero, Ignore = BitReq.One, BitReq.Zero, BitReq.Ignore


# =============================================================================
# Kernels of upstream `vector_engine/branch.rs`
# =============================================================================


@device(chip=1, pe=1)
def ve_elementwise_branched(
    ctx: Context, input: HbmTensor[f32, Chip, m["BP, BA, BT"]], scale: HbmTensor[f32, Chip, m["BP, BT"]]
) -> HbmTensor[f32, Chip, m["BP, BA, BT"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["BP"], m["BA, BT"])
    scale_dm = scale.to_dm(ctx.tdma, Cluster, m["BP"], m["BT"])

    scale_vrf = ctx.sub.begin(scale_dm.view()).fetch(m["1"], m["BT"]).collect(m["1"], m["BT"]).to_vrf(m["BT"])

    nonzero = TagGuard.not_matches((One, Ignore, Ignore, Ignore))  # tag bit 0 (x == 0) clear
    negative = TagGuard.matches((Zero, Zero, One, Ignore))  # x < 0 and neither == 0 nor > 0

    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["BA"], m["BT"])
        .collect(m["BA"], m["BT"])
        .vector_init()
        .vector_intra_slice_tag(
            TagMode.Comparison((Cmp.Equal(0.0), Cmp.Greater(0.0), Cmp.Less(0.0), Cmp.LessUnsigned(-0.0)))
        )
        .vector_logic(LogicBinaryOpF32.BitAnd, Branched.imm(negative, 0.0))
        .vector_narrow_split(m["BA, BT / 4"], m["BT % 4"])
        .vector_fp_ternary(FpTernaryOp.FmaF, Branched.imm(nonzero, (-2.0, 10.0)))
        .vector_widen_concat(m["BA"], m["BT"])
        .vector_clip(ClipBinaryOpF32.Max, Branched.imm(negative, 1.0).rf(TagGuard.all(), scale_vrf))
        .vector_final()
        .commit_trim(m["BT"])
        .commit(m["BA, BT"])
    )
    return result.to_hbm(ctx.tdma, m["BP, BA, BT"])


@device(chip=1, pe=1)
def ve_branch_bit_order(
    ctx: Context, input: HbmTensor[i32, Chip, m["BP, BA, BT"]]
) -> HbmTensor[i32, Chip, m["BP, BA, BT"]]:
    """Pins the bit order end to end: comparison i sets tag bit i, and BitReq i of a guard reads bit i. Each
    guard constrains one bit and leaves its own mark; bit 1's mark is a guarded stash read, which restores
    the element's original value (so it also shows the slot read the stash, not the running stream)."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["BP"], m["BA, BT"])

    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["BA"], m["BT"])
        .collect(m["BA"], m["BT"])
        .vector_init()
        # One comparison per bit, none implying another.
        .vector_intra_slice_tag(TagMode.Comparison((Cmp.Equal(0), Cmp.Equal(5), Cmp.Less(10), Cmp.Greater(1000))))
        .vector_stash()  # the value bit 1's slot restores below
        # Three immediates in first-match order: bit 0, then bit 2, then bit 3.
        .vector_logic(
            LogicBinaryOpI32.BitOr,
            Branched.imm(TagGuard.matches((One, Ignore, Ignore, Ignore)), 0x0100)
            .imm(TagGuard.matches((Ignore, Ignore, One, Ignore)), 0x0200)
            .imm(TagGuard.matches((Ignore, Ignore, Ignore, One)), 0x0400),
        )
        # Bit 1 on the clip unit: the pass's logic unit and its three immediates are spent above.
        .vector_clip(ClipBinaryOpI32.Min, Branched.rf(TagGuard.matches((Ignore, One, Ignore, Ignore)), Stash))
        .vector_final()
        .commit_trim(m["BT"])
        .commit(m["BA, BT"])
    )
    return result.to_hbm(ctx.tdma, m["BP, BA, BT"])


# =============================================================================
# Oracles (numpy only)
# =============================================================================

SHAPE = (64, 4, 8)  # (BP, BA, BT)


def f32_bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def tag_bits_f32(x: np.ndarray) -> list[np.ndarray]:
    """The four tag bits of `ve_elementwise_branched`, bit i from comparison i."""
    return [
        x == np.float32(0.0),  # IEEE equality: -0.0 == 0.0
        x > np.float32(0.0),
        x < np.float32(0.0),
        f32_bits(x) < np.uint32(0x8000_0000),  # LessUnsigned(-0.0): the sign bit is clear
    ]


def fma_exact(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """`a.mul_add(b, c)` on f32: computed in float64, asserting (TwoSum error zero) that float64 held the exact
    value, so the single rounding to f32 is the fused one."""
    product = a.astype(np.float64) * np.float64(np.float32(b))  # exact: 24 + 24 bits
    addend = np.float64(np.float32(c))
    total = product + addend
    back = total - product
    error = (product - (total - back)) + (addend - back)
    assert not error.any(), "float64 did not hold a * b + c exactly"
    return total.astype(np.float32)


def rust_max_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a.max(b)` for non-NaN inputs with no (+0.0, -0.0) pair (the inputs below never make one)."""
    return np.where(b > a, b, a).astype(np.float32)


def first_match(stream: np.ndarray, arms: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each element takes the value of the first arm whose condition holds; otherwise it keeps `stream`."""
    out = stream.copy()
    taken = np.zeros(stream.shape, dtype=bool)
    for cond, value in arms:
        hit = cond & ~taken
        out[hit] = np.broadcast_to(value, stream.shape)[hit]
        taken |= hit
    return out


def branched_oracle(x: np.ndarray, scale: np.ndarray, *, reverse_clip_slots: bool = False) -> np.ndarray:
    b0, b1, b2, _b3 = tag_bits_f32(x)
    negative = ~b0 & ~b1 & b2
    nonzero = ~b0
    # BitAnd with +0.0's pattern (all zero bits) where negative: the element becomes +0.0.
    masked = first_match(x, [(negative, (f32_bits(x) & np.uint32(0)).view(np.float32))])
    # FmaF(y, -2.0, 10.0) where nonzero (y * -2 is exact in f32, so fused and unfused agree on this kernel).
    fused = first_match(masked, [(nonzero, fma_exact(masked, -2.0, 10.0))])
    # Max: negatives against 1.0, then everything else against the scale of its (slice, time).
    scale_b = np.broadcast_to(scale[:, None, :], x.shape)
    arms = [(negative, rust_max_f32(fused, np.float32(1.0))), (np.ones(x.shape, bool), rust_max_f32(fused, scale_b))]
    return first_match(fused, arms[::-1] if reverse_clip_slots else arms)


def bit_order_oracle(x: np.ndarray, *, reverse_bits: bool = False) -> np.ndarray:
    bits = [x == 0, x == 5, x < 10, x > 1000]
    if reverse_bits:  # a guard reading bit 3 - i for BitReq i
        bits = bits[::-1]
    b0, b1, b2, b3 = bits
    stash = x.copy()
    marked = first_match(x, [(b0, x | 0x100), (b2, x | 0x200), (b3, x | 0x400)])
    return first_match(marked, [(b1, np.minimum(marked, stash))])


# =============================================================================
# Inputs
# =============================================================================


def branched_inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """About a third of the lanes are zeros (half of them -0.0), a third negative, a third positive; the
    positives map to `10 - 2x` in (-10, 10) and the scale spans (-12, 12) without zero, so the scale slot
    and the pass-through of zeros each go both ways."""
    kind = rng.integers(0, 6, size=SHAPE)
    magnitude = rng.uniform(1e-3, 10.0, size=SHAPE).astype(np.float32)
    x = np.where(kind < 2, magnitude, np.where(kind < 4, -magnitude, np.float32(0.0))).astype(np.float32)
    x[kind == 5] = np.float32(-0.0)
    scale = (rng.uniform(0.5, 12.0, size=(64, 8)) * rng.choice([-1.0, 1.0], size=(64, 8))).astype(np.float32)
    return x, scale


def bit_order_inputs(rng: np.random.Generator) -> np.ndarray:
    """Five kinds of lanes in even shares: 0 (bits 0 and 2), 5 (bits 1 and 2), other values below 10 (bit 2),
    values above 1000 (bit 3), and 10..=1000 (no bit)."""
    kind = rng.integers(0, 5, size=SHAPE)
    small = rng.integers(-(2**31), 10, size=SHAPE)
    small = np.where(small == 0, -1, np.where(small == 5, 6, small))
    values = [
        np.zeros(SHAPE, np.int64),
        np.full(SHAPE, 5),
        small,
        rng.integers(1001, 2**31, size=SHAPE),
        rng.integers(10, 1001, size=SHAPE),
    ]
    return np.choose(kind, values).astype(np.int32)


# =============================================================================
# Tests
# =============================================================================


BACKENDS = pytest.mark.parametrize("backend_name", ["cpu", "npu"])


def run_branched(x: np.ndarray, scale: np.ndarray, backend_name: str) -> np.ndarray:
    with backend(backend_name) as launch_, Context.acquire() as ctx:
        input_hbm = HostTensor.from_numpy(x, f32, m["BP, BA, BT"]).to_hbm(ctx.pdma)
        scale_hbm = HostTensor.from_numpy(scale, f32, m["BP, BT"]).to_hbm(ctx.pdma)
        out = launch_(ve_elementwise_branched, ctx, input_hbm, scale_hbm)
        return out.to_host(ctx.pdma).to_numpy()


def run_bit_order(x: np.ndarray, backend_name: str) -> np.ndarray:
    with backend(backend_name) as launch_, Context.acquire() as ctx:
        out = launch_(ve_branch_bit_order, ctx, HostTensor.from_numpy(x, i32, m["BP, BA, BT"]).to_hbm(ctx.pdma))
        return out.to_host(ctx.pdma).to_numpy()


@BACKENDS
def test_ve_elementwise_branched(backend_name):
    x, scale = branched_inputs(np.random.default_rng(42))
    b0, b1, b2, b3 = tag_bits_f32(x)
    negative, zero = ~b0 & ~b1 & b2, b0
    scale_b = np.broadcast_to(scale[:, None, :], x.shape)
    expected = branched_oracle(x, scale)

    # Every arm is taken by many lanes: both sides of each guard, and both outcomes of the scale slot.
    n = x.size
    assert n / 4 < negative.sum() < n / 2.5 and n / 4 < zero.sum() < n / 2.5
    assert (np.signbit(x) & zero).sum() > n / 10 and (~np.signbit(x) & zero).sum() > n / 10  # -0.0 and +0.0
    assert n / 10 < b3.sum() < 0.9 * n  # bit 3 (unused by the guards) takes both values
    for lanes in (~negative & ~zero, zero):  # positives (10 - 2x) and zeros against the scale
        wins = expected[lanes] == scale_b[lanes]  # the scale slot's Max chose the scale
        assert lanes.sum() / 4 < wins.sum() < 3 * lanes.sum() / 4
    assert (scale_b[negative] > 10).sum() > n / 100  # where the rf slot would beat the 1.0 slot's result
    # The first-match order shows: the reversed slot order gives other values on those lanes.
    assert (f32_bits(branched_oracle(x, scale, reverse_clip_slots=True)) != f32_bits(expected)).sum() > n / 100
    # Zeros pass through the BitAnd and the FmaF: -0.0 stays -0.0 where the scale is negative.
    assert (f32_bits(expected) == 0x8000_0000).sum() > n / 40

    got = run_branched(x, scale, backend_name)
    assert got.dtype == np.float32 and got.shape == SHAPE
    np.testing.assert_array_equal(f32_bits(got), f32_bits(expected))


@BACKENDS
def test_ve_elementwise_branched_hand_values(backend_name):
    """A few lanes worked by hand (scale 3.0 or -3.0 on all lanes)."""
    x = np.zeros(SHAPE, np.float32)
    x[0, 0, :] = [-1.5, 0.0, -0.0, 2.0, 4.0, -0.0, 0.0, 7.5]
    scale = np.full((64, 8), 3.0, np.float32)
    scale[0, 4:] = -3.0
    got = run_branched(x, scale, backend_name)
    # -1.5 -> +0.0 -> 10 -> max(10, 1) = 10; zeros -> max(zero, 3) = 3 or zero kept against -3 (-0.0 too);
    # 2.0 -> 6 -> max(6, 3) = 6; 4.0 -> 2 -> max(2, -3) = 2; 7.5 -> -5 -> max(-5, -3) = -3.
    expected = np.array([10.0, 3.0, 3.0, 6.0, 2.0, -0.0, 0.0, -3.0], np.float32)
    np.testing.assert_array_equal(f32_bits(got[0, 0]), f32_bits(expected))
    np.testing.assert_array_equal(got[1:], np.float32(3.0))  # +0.0 lanes elsewhere: max(0.0, 3.0)


@BACKENDS
def test_ve_branch_bit_order(backend_name):
    x = bit_order_inputs(np.random.default_rng(42))
    expected = bit_order_oracle(x)
    n = x.size
    for lanes in (x == 0, x == 5, (x < 10) & (x != 0) & (x != 5), x > 1000, (x >= 10) & (x <= 1000)):
        assert n / 8 < lanes.sum() < n / 3
    assert (expected != x).sum() > n / 3  # the marks show (a mark already set in the input does not)
    assert (bit_order_oracle(x, reverse_bits=True) != expected).sum() > n / 4  # a reversed bit order shows

    got = run_bit_order(x, backend_name)
    assert got.dtype == np.int32 and got.shape == SHAPE
    np.testing.assert_array_equal(got, expected)


@BACKENDS
def test_ve_branch_bit_order_hand_values(backend_name):
    """Marks worked by hand: bit 0 -> |0x100, bit 2 -> |0x200, bit 3 -> |0x400, bit 1 -> the stashed input."""
    x = np.full(SHAPE, 500, np.int32)  # no bit: passes through
    x[0, 0, :] = [0, 5, 3, -1024, 2000, 500, 9, 1001]
    got = run_bit_order(x, backend_name)
    expected = [0x100, 5, 0x203, -512, 2000 | 0x400, 500, 0x209, 1001 | 0x400]
    np.testing.assert_array_equal(got[0, 0], np.array(expected, np.int32))
    np.testing.assert_array_equal(got[1:], 500)
