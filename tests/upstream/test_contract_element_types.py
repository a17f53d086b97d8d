"""Port of upstream `furiosa-opt-examples/src/contract_element_types.rs` and its answer test
`furiosa-opt-examples/tests/contract_element_types_answer_tests.rs`: one single-flit `contract_outer` per
Contraction Engine input type.

Every kernel multiplies a stream `[A, K]` with a TRF tensor `[R, K]` (lane `R`) and returns the sums as
`[A, R]`: i8 and i4 in i32 (widened at the contraction), the zero-point-subtracted i8 (an i9 stream) times i8
in i32, and f8e4m3, f8e5m2 and bf16 in f32. The reduced axis `K` is one 32-byte flit of each type (32 i8/f8,
16 bf16, 64 i4).

Upstream tests only `i8_contract`, against a hand-written sum over seeded values in `-8..8` (Rust's
`SmallRng` stream is not reproducible here, so numpy draws from the same range). Ours check every kernel
against numpy loops that fold each output from zero, one `k` at a time in increasing order, in i32 or f32 as
the Contraction Engine does (`src/furiosa_opt/fold.py`), so the f32 sums are exact too; the floats widen to
f32 as ml_dtypes reads them (every f8 and bf16 value is exact in f32; no bf16 input here is subnormal, which
the hardware would flush).

The differential harness runs every kernel on both backends; `i4_contract`'s test here does too, with
both operands packed two codes per byte in HBM and DM.
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

A, K8, K16, K4, R = axes(A=8, K8=32, K16=16, K4=64, R=8)

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
Lane = m["R"]


@device(chip=1)
def i8_contract(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, K8"]], input_trf: HbmTensor[i8, Chip, m["R, K8"]]
) -> HbmTensor[i32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K8"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K8"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K8"])
        .fetch_cast(i8)
        .collect(m["R"], m["K8"])
        .to_trf(Lane, m["K8"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K8"])
        .fetch_cast(i8)
        .collect(m["A"], m["K8"])
        .contract_outer(trf, m["A"], m["K8"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def f8e4m3_contract(
    ctx: Context, input: HbmTensor[f8e4m3, Chip, m["A, K8"]], input_trf: HbmTensor[f8e4m3, Chip, m["R, K8"]]
) -> HbmTensor[f32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K8"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K8"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K8"])
        .fetch_cast(f8e4m3)
        .collect(m["R"], m["K8"])
        .to_trf(Lane, m["K8"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K8"])
        .fetch_cast(f8e4m3)
        .collect(m["A"], m["K8"])
        .contract_outer(trf, m["A"], m["K8"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def zero_point_sub_contract(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, K8"]], input_trf: HbmTensor[i8, Chip, m["R, K8"]]
) -> HbmTensor[i32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K8"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K8"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K8"])
        .fetch_cast(i8)
        .collect(m["R"], m["K8"])
        .to_trf(Lane, m["K8"])
    )
    # Upstream names the TRF element type (`contract_outer::<…, i8>`) because the stream's i9 differs from it;
    # Python reads it from the TRF tensor.
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K8"])
        .fetch_zero_point_sub(3, i9)
        .collect(m["A"], m["K8"])
        .contract_outer(trf, m["A"], m["K8"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def i4_contract(
    ctx: Context, input: HbmTensor[i4, Chip, m["A, K4"]], input_trf: HbmTensor[i4, Chip, m["R, K4"]]
) -> HbmTensor[i32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K4"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K4"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K4"])
        .fetch_cast(i4)
        .collect(m["R"], m["K4"])
        .to_trf(Lane, m["K4"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K4"])
        .fetch_cast(i4)
        .collect(m["A"], m["K4"])
        .contract_outer(trf, m["A"], m["K4"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def f8e5m2_contract(
    ctx: Context, input: HbmTensor[f8e5m2, Chip, m["A, K8"]], input_trf: HbmTensor[f8e5m2, Chip, m["R, K8"]]
) -> HbmTensor[f32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K8"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K8"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K8"])
        .fetch_cast(f8e5m2)
        .collect(m["R"], m["K8"])
        .to_trf(Lane, m["K8"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K8"])
        .fetch_cast(f8e5m2)
        .collect(m["A"], m["K8"])
        .contract_outer(trf, m["A"], m["K8"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def bf16_contract(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A, K16"]], input_trf: HbmTensor[bf16, Chip, m["R, K16"]]
) -> HbmTensor[f32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K16"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K16"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["K16"])
        .fetch_cast(bf16)
        .collect(m["R"], m["K16"])
        .to_trf(Lane, m["K16"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K16"])
        .fetch_cast(bf16)
        .collect(m["A"], m["K16"])
        .contract_outer(trf, m["A"], m["K16"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


# ---- oracle and host side -----------------------------------------------------------------------------


def folded(lhs: np.ndarray, rhs: np.ndarray, acc: type) -> np.ndarray:
    """`out[a, r] = Σ_k lhs[a, k] · rhs[r, k]`, each output folded from zero one `k` at a time, in `acc`
    (products and sums rounded to `acc` at every step, integers wrapping)."""
    lhs, rhs = lhs.astype(acc), rhs.astype(acc)
    out = np.zeros((lhs.shape[0], rhs.shape[0]), dtype=acc)
    with np.errstate(over="ignore"):
        for a in range(lhs.shape[0]):
            for r in range(rhs.shape[0]):
                total = acc(0)
                for k in range(lhs.shape[1]):
                    total = acc(total + acc(lhs[a, k] * rhs[r, k]))
                out[a, r] = total
    return out


def contracted(kernel, lhs: np.ndarray, rhs: np.ndarray, dtype, k: str, on: str = "cpu") -> np.ndarray:
    """`kernel` on backend `on` with `lhs` as `[A, k]` and `rhs` as the TRF's `[R, k]`, both `dtype`."""
    with backend(on) as launch_, Context.acquire() as ctx:
        input = HostTensor.from_numpy(lhs, dtype, m[f"A, {k}"]).to_hbm(ctx.pdma)
        input_trf = HostTensor.from_numpy(rhs, dtype, m[f"R, {k}"]).to_hbm(ctx.pdma)
        return launch_(kernel, ctx, input, input_trf).to_host(ctx.pdma).to_numpy()


def finite_codes(rng: np.random.Generator, shape: tuple[int, ...], storage: type) -> np.ndarray:
    """Random f8 codes over every finite value of the type (subnormals and both zeros included)."""
    pool = np.arange(256, dtype=np.uint8)
    pool = pool[np.isfinite(pool.view(storage).astype(np.float32))]
    return rng.choice(pool, size=shape).view(storage)


def test_answer_i8_contract():
    """Upstream's answer test: inputs drawn from -8..8 (exclusive), the i32 sum over k of input · trf."""
    rng = np.random.default_rng(42)
    input_vals = rng.integers(-8, 8, size=(A.size, K8.size), dtype=np.int8)
    trf_vals = rng.integers(-8, 8, size=(R.size, K8.size), dtype=np.int8)
    expected = np.zeros((A.size, R.size), dtype=np.int32)
    for a in range(A.size):
        for r in range(R.size):
            s = 0
            for k in range(K8.size):
                s += int(input_vals[a, k]) * int(trf_vals[r, k])
            expected[a, r] = s
    actual = contracted(i8_contract, input_vals, trf_vals, i8, "K8")
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, expected)


def test_i8_contract_full_range():
    rng = np.random.default_rng(1)
    lhs = rng.integers(-128, 128, size=(A.size, K8.size), dtype=np.int8)
    rhs = rng.integers(-128, 128, size=(R.size, K8.size), dtype=np.int8)
    lhs[0], rhs[0] = -128, -128  # the largest sum: 32 · 2^14
    actual = contracted(i8_contract, lhs, rhs, i8, "K8")
    assert actual[0, 0] == 32 * 128 * 128
    np.testing.assert_array_equal(actual, folded(lhs, rhs, np.int32))


def test_zero_point_sub_contract():
    """The activation minus upstream's zero point 3, as i9 (`-131..124` here), times the i8 weight."""
    rng = np.random.default_rng(2)
    lhs = rng.integers(-128, 128, size=(A.size, K8.size), dtype=np.int8)
    rhs = rng.integers(-128, 128, size=(R.size, K8.size), dtype=np.int8)
    lhs[0, :16], lhs[1, :16] = -128, 127  # both ends of the i9 range this zero point reaches
    zero_point = 3  # the kernel's
    shifted = lhs.astype(np.int32) - zero_point
    assert shifted.min() == -131 and shifted.max() == 124
    actual = contracted(zero_point_sub_contract, lhs, rhs, i8, "K8")
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, folded(shifted, rhs, np.int32))
    # Not the plain i8 contraction: the zero point moves every sum by 3 · Σ_k trf[r, k].
    shift = zero_point * rhs.astype(np.int32).sum(1)
    np.testing.assert_array_equal(folded(lhs, rhs, np.int32) - actual, np.broadcast_to(shift, (A.size, R.size)))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_i4_contract(on):
    rng = np.random.default_rng(3)
    lhs = rng.integers(-8, 8, size=(A.size, K4.size), dtype=np.int8)
    rhs = rng.integers(-8, 8, size=(R.size, K4.size), dtype=np.int8)
    lhs[0], rhs[0] = -8, -8
    actual = contracted(i4_contract, lhs, rhs, i4, "K4", on)
    assert actual.dtype == np.int32 and actual[0, 0] == 64 * 64
    np.testing.assert_array_equal(actual, folded(lhs, rhs, np.int32))


@pytest.mark.parametrize(
    ("kernel", "dtype", "storage"),
    [(f8e4m3_contract, f8e4m3, ml_dtypes.float8_e4m3fn), (f8e5m2_contract, f8e5m2, ml_dtypes.float8_e5m2)],
)
def test_f8_contract(kernel, dtype, storage):
    rng = np.random.default_rng(4)
    lhs = finite_codes(rng, (A.size, K8.size), storage)
    rhs = finite_codes(rng, (R.size, K8.size), storage)
    actual = contracted(kernel, lhs, rhs, dtype, "K8")
    assert actual.dtype == np.float32
    expected = folded(lhs.astype(np.float32), rhs.astype(np.float32), np.float32)
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


def test_f8e4m3_contract_folds_in_order():
    """A sum whose f32 value depends on the order: 448 (the largest f8e4m3) and 31 terms of 2^-18, each under
    half an ulp of 448 (2^-16). With 448 first every small term rounds away; added first, they reach
    31 · 2^-18 and 448 + that rounds to 448 + 4 · 2^-15."""
    small = 2.0**-9  # the smallest f8e4m3 subnormal; small · small = 2^-18
    lhs = np.zeros((A.size, K8.size), dtype=np.float32)
    rhs = np.zeros((R.size, K8.size), dtype=np.float32)
    lhs[0], rhs[0] = small, small
    lhs[0, 0], rhs[0, 0] = 448.0, 1.0  # out[0, 0]: the large term first
    lhs[1], rhs[1] = small, small
    lhs[1, -1], rhs[1, -1] = 448.0, 1.0  # out[1, 1]: the large term last
    as_f8 = ml_dtypes.float8_e4m3fn
    assert (lhs.astype(as_f8).astype(np.float32) == lhs).all() and (rhs.astype(as_f8).astype(np.float32) == rhs).all()
    actual = contracted(f8e4m3_contract, lhs.astype(as_f8), rhs.astype(as_f8), f8e4m3, "K8")
    assert actual[0, 0] == np.float32(448.0)
    assert actual[1, 1] == np.float32(448.0 + 4 * 2.0**-15)
    np.testing.assert_array_equal(actual.view(np.uint32), folded(lhs, rhs, np.float32).view(np.uint32))


def test_bf16_contract():
    rng = np.random.default_rng(5)
    lhs = (rng.random((A.size, K16.size), dtype=np.float32) * 4 - 2).astype(ml_dtypes.bfloat16)
    rhs = (rng.random((R.size, K16.size), dtype=np.float32) * 4 - 2).astype(ml_dtypes.bfloat16)
    actual = contracted(bf16_contract, lhs, rhs, bf16, "K16")
    assert actual.dtype == np.float32
    expected = folded(lhs.astype(np.float32), rhs.astype(np.float32), np.float32)
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))
