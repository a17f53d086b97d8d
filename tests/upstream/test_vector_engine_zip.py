"""Port of upstream `furiosa-opt-examples/src/vector_engine/zip.rs` (axes from `vector_engine.rs`) and its tests,
`furiosa-opt-examples/tests/vector_engine/zip.rs`.

Pair mode on `A = 512` elements: `begin_interleaved` puts lhs (I = 0) and rhs (I = 1) on a size-2 time axis,
`vector_intra_slice_unzip` splits the stream into group 0 (lhs) and group 1 (rhs), per-group ops take one
operand each (`None` for upstream's `()`: the group passes through), and a `*_zip` op joins the groups into one
stream. Differences from upstream:

* `ve_elementwise_ternary` and `ve_elementwise_ternary_stash` (single-stream kernels of upstream's `zip.rs`) are
  ported, with their tests, in `tests/upstream/test_vector_engine_normal.py`; they are not repeated here.
* Upstream has no test for `ve_group_pair_post_zip` or `ve_group_pair_fp_multi_packet`; ours check both against
  numpy oracles. The two bit-pattern kernels (`reinterpret_scale_f32`, `logic_abs_add_f32`) also run on the
  simulator with upstream's hand-picked inputs, which the differential harness's random inputs would not hit.
* Upstream's random inputs come from `SmallRng::seed_from_u64(42)`; ours from numpy's `default_rng(42)`, with
  upstream's distributions (i32 over every value, f32 in [0, 1)).

Every oracle is computed with numpy on the host, independently of the library's Vector Engine arithmetic.
"""

import ctypes
import ctypes.util

import numpy as np
from backends import backend

from furiosa_opt import *

# The axes of upstream `vector_engine.rs` these kernels use.
A, I, Q = axes(A=512, I=2, Q=2)

Chip = m["1"]
Cluster = m["1 # 2"]

# =============================================================================
# Kernels of upstream `vector_engine/zip.rs`
# =============================================================================


@device(chip=1)
def ve_group_pair_add(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_reinterpret_scale_f32(
    ctx: Context, lhs: HbmTensor[f32, Chip, m["A"]], rhs: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """`2a + 4b`: each doubling adds to the exponent field while both groups are read as i32 (one reinterpret
    covers both groups), then the f32 view is back for the clip zip."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_reinterpret(i32)
        .vector_fxp(FxpBinaryOp.AddFxp, 1 << 23, 2 << 23)
        .vector_reinterpret(f32)
        .vector_clip_zip(ClipBinaryOpF32.Add)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_logic_abs_add_f32(
    ctx: Context, lhs: HbmTensor[f32, Chip, m["A"]], rhs: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """`|a| + |b|`: each group's sign bit cleared by its own logic operand, then an f32 clip zip."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_reinterpret(i32)
        .vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFF_FFFF, 0x7FFF_FFFF)
        .vector_reinterpret(f32)
        .vector_clip_zip(ClipBinaryOpF32.Add)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_preprocess_both(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.MulInt, 2, 3)
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_preprocess_g0(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.MulInt, 10, None)
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_preprocess_g1(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.MulInt, None, 10)
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_post_zip(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    """An op after the zip with a bare operand: it applies to every element, whatever group bit the tag holds."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_clip(ClipBinaryOpI32.Max, 0)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_chain(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.AddFxp, 10, 20)
        .vector_fxp(FxpBinaryOp.MulInt, 2, 3)
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_fxp(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp_zip(FxpBinaryOp.MulInt)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_logic(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_logic_zip(LogicBinaryOpI32.BitXor)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_fp(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp_to_fp(31)
        .vector_narrow_split(m["1 # 2"], m["A % 2 # 4"])
        .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_fp_multi_packet(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["Q, A"]], rhs: HbmTensor[i32, Chip, m["Q, A"]]
) -> HbmTensor[f32, Chip, m["Q, A"]]:
    """`ve_group_pair_fp` with a `Q` axis in the stream's time: two flits per slice and group."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["Q, A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["Q, A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["Q, I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["Q, I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["Q, 1 # 2"], m["Q"])
        .vector_fxp_to_fp(31)
        .vector_narrow_split(m["Q, 1 # 2"], m["A % 2 # 4"])
        .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
        .vector_widen_concat(m["Q"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["Q, A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["Q, A"])


@device(chip=1)
def ve_group_pair_unary(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp_to_fp(31)
        .vector_narrow_split(m["1 # 2"], m["A % 2 # 4"])
        .vector_fp_unary(FpUnaryOp.Sqrt, True, True)
        .vector_fp_zip(FpBinaryOp.AddF)
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_unary_selective(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp_to_fp(31)
        .vector_narrow_split(m["1 # 2"], m["A % 2 # 4"])
        .vector_fp_unary(FpUnaryOp.Exp, True, False)
        .vector_fp_zip(FpBinaryOp.AddF)
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_ternary(
    ctx: Context, lhs: HbmTensor[f32, Chip, m["A"]], rhs: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """Group 0: `lhs * 2 + 1`, group 1: `rhs * 3 + 2` (each one FmaF), then their product."""
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
        .vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0), (3.0, 2.0))
        .vector_fp_zip(FpBinaryOp.MulF(FpMulAlu.Mul0))
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_group_pair_ternary_selective(
    ctx: Context, lhs: HbmTensor[f32, Chip, m["A"]], rhs: HbmTensor[f32, Chip, m["A"]]
) -> HbmTensor[f32, Chip, m["A"]]:
    """Group 0: `lhs * 2 + 1`; group 1 passes through (`None`); then group 0 / group 1."""
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
        .vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0), None)
        .vector_fp_zip(FpBinaryOp.DivF)
        .vector_widen_concat(m["1"], m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


# =============================================================================
# Host side and oracles
# =============================================================================

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
F32_MIN_POSITIVE = float(np.finfo(np.float32).tiny)  # Rust f32::MIN_POSITIVE, 2^-126

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
for _name in ("expf", "sqrtf"):
    getattr(_libm, _name).argtypes, getattr(_libm, _name).restype = [ctypes.c_float], ctypes.c_float


def libm_f32(name: str, x: np.ndarray) -> np.ndarray:
    """The C library's single-precision `name` on each element (f32 in, f32 out)."""
    fn = getattr(_libm, name)
    return np.array([fn(float(v)) for v in x.ravel()], dtype=np.float32).reshape(x.shape)


def run(kernel, *inputs: np.ndarray, mapping: str = "A", launch_=None) -> np.ndarray:
    """Launch `kernel` with `inputs` (each over `mapping`); the output as numpy. CPU backend unless `launch_`."""
    launch_ = launch_ or launch
    with Context.acquire() as ctx:
        args = [
            HostTensor.from_numpy(x, i32 if x.dtype == np.int32 else f32, m[mapping]).to_hbm(ctx.pdma) for x in inputs
        ]
        return launch_(kernel, ctx, *args).to_host(ctx.pdma).to_numpy()


def rand_i32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(I32_MIN, I32_MAX, size=shape or (A.size,), dtype=np.int32, endpoint=True)


def rand_f32(rng: np.random.Generator) -> np.ndarray:
    return rng.random(A.size, dtype=np.float32)


def wrap(values) -> np.ndarray:
    """Two's-complement wrap of exact int64 results into i32, like Rust's `wrapping_*`."""
    v = np.asarray(values, dtype=np.int64)
    return ((v - I32_MIN) % 2**32 + I32_MIN).astype(np.int32)


def fma_exact(a: np.ndarray, b: float, c: float) -> np.ndarray:
    """`a.mul_add(b, c)` on f32: the exact value in float64 (checked by TwoSum), rounded once to f32."""
    product = a.astype(np.float64) * b  # exact: a has 24 significant bits, b few
    total = product + c
    back = total - product
    assert not ((product - (total - back)) + (c - back)).any(), "float64 did not hold a * b + c exactly"
    return total.astype(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def assert_f32_values_equal(expected: np.ndarray, actual: np.ndarray) -> None:
    """Upstream `assert_f32_vec_eq`: equal by value, NaN equal to NaN."""
    assert actual.dtype == np.float32
    np.testing.assert_array_equal(actual, expected)


def assert_f32_bits_equal(expected: np.ndarray, actual: np.ndarray) -> None:
    """Upstream `assert_f32_bits_eq`: equal bit patterns, so a stray `-0.0` fails."""
    assert actual.dtype == np.float32
    np.testing.assert_array_equal(bits(actual), bits(expected))


def assert_i32_equal(expected: np.ndarray, actual: np.ndarray) -> None:
    assert actual.dtype == np.int32
    np.testing.assert_array_equal(actual, expected)


def seeded_pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    return rand_i32(rng), rand_i32(rng)


# =============================================================================
# Tests of upstream `tests/vector_engine/zip.rs`
# =============================================================================


def test_ve_group_pair_add():
    lhs, rhs = seeded_pair()
    expected = wrap(lhs.astype(np.int64) + rhs)  # x.wrapping_add(y)
    assert (lhs.astype(np.int64) + rhs > I32_MAX).any()  # the inputs do wrap
    assert_i32_equal(expected, run(ve_group_pair_add, lhs, rhs))


def test_ve_group_pair_preprocess_both():
    lhs, rhs = seeded_pair()
    expected = wrap(wrap(lhs.astype(np.int64) * 2).astype(np.int64) + wrap(rhs.astype(np.int64) * 3))
    assert_i32_equal(expected, run(ve_group_pair_preprocess_both, lhs, rhs))


def test_ve_group_pair_preprocess_g0():
    lhs, rhs = seeded_pair()
    expected = wrap(wrap(lhs.astype(np.int64) * 10).astype(np.int64) + rhs)  # lhs * 10 + rhs
    assert_i32_equal(expected, run(ve_group_pair_preprocess_g0, lhs, rhs))


def test_ve_group_pair_preprocess_g1():
    lhs, rhs = seeded_pair()
    expected = wrap(lhs.astype(np.int64) + wrap(rhs.astype(np.int64) * 10))  # lhs + rhs * 10
    assert_i32_equal(expected, run(ve_group_pair_preprocess_g1, lhs, rhs))


def test_ve_group_pair_chain():
    lhs, rhs = seeded_pair()
    lhs_processed = wrap(wrap(lhs.astype(np.int64) + 10).astype(np.int64) * 2)
    rhs_processed = wrap(wrap(rhs.astype(np.int64) + 20).astype(np.int64) * 3)
    expected = wrap(lhs_processed.astype(np.int64) + rhs_processed)
    assert_i32_equal(expected, run(ve_group_pair_chain, lhs, rhs))


def test_ve_group_pair_fxp():
    lhs, rhs = seeded_pair()
    assert_i32_equal(wrap(lhs.astype(np.int64) * rhs), run(ve_group_pair_fxp, lhs, rhs))  # x.wrapping_mul(y)


def test_ve_group_pair_logic():
    lhs, rhs = seeded_pair()
    assert_i32_equal(lhs ^ rhs, run(ve_group_pair_logic, lhs, rhs))


# (lhs, rhs, scale(lhs, 1) + scale(rhs, 2)), where scale(x, n) adds n to the exponent field; the sums are
# worked out by hand from the bit layout. A signed zero scales to ±MIN_POSITIVE (exponent field 0 → 1), which
# pairing it with another zero keeps visible in the sum.
PAIR_SCALE_CASES = [
    (0.0, -0.0, -F32_MIN_POSITIVE),  # MIN_POSITIVE + (-2 * MIN_POSITIVE)
    (-0.0, 0.0, F32_MIN_POSITIVE),  # -MIN_POSITIVE + 2 * MIN_POSITIVE
    (1.0, 1.0, 6.0),  # 2.0 + 4.0
    (-1.0, -0.5, -4.0),  # -2.0 + (-2.0)
]


def cycled(column: int, cases: list) -> np.ndarray:
    """Element i of `A` holds `cases[i % len(cases)][column]`."""
    return np.array([cases[i % len(cases)][column] for i in range(A.size)], dtype=np.float32)


def scale_by_bits(x: np.ndarray, n: int) -> np.ndarray:
    """Add `n` to the exponent field of each f32, as an i32 add on the bit pattern (wrapping)."""
    as_int = x.view(np.int32).astype(np.int64) + (n << 23)
    return wrap(as_int).view(np.float32)


def test_ve_group_pair_reinterpret_scale_f32():
    lhs, rhs = cycled(0, PAIR_SCALE_CASES), cycled(1, PAIR_SCALE_CASES)
    got = run(ve_group_pair_reinterpret_scale_f32, lhs, rhs)
    assert_f32_bits_equal(cycled(2, PAIR_SCALE_CASES), got)
    # The hand-worked table agrees with the bit-level oracle.
    assert_f32_bits_equal(scale_by_bits(lhs, 1) + scale_by_bits(rhs, 2), got)


ABS_ADD_CASES = [(0.0, -0.0), (-0.0, -0.0), (-1.0, 2.5), (3.25, -80.0), (-F32_MIN_POSITIVE, 1.0)]


def test_ve_group_pair_logic_abs_add_f32():
    """Bitwise: a `-0.0` surviving the mask fails, and `|-0.0| + |0.0|` must be `+0.0`."""
    lhs, rhs = cycled(0, ABS_ADD_CASES), cycled(1, ABS_ADD_CASES)
    got = run(ve_group_pair_logic_abs_add_f32, lhs, rhs)
    assert_f32_bits_equal(np.abs(lhs) + np.abs(rhs), got)
    assert not np.signbit(got[:2]).any()


def test_ve_group_pair_fp():
    lhs, rhs = seeded_pair()
    expected = lhs.astype(np.float32) * rhs.astype(np.float32)  # (x as f32) * (y as f32), f32 product
    assert_f32_values_equal(expected, run(ve_group_pair_fp, lhs, rhs))


def test_ve_group_pair_unary():
    lhs, rhs = seeded_pair()
    expected = libm_f32("sqrtf", lhs.astype(np.float32)) + libm_f32("sqrtf", rhs.astype(np.float32))
    assert np.isnan(expected).any() and not np.isnan(expected).all()  # negative inputs: sqrt is NaN
    assert_f32_values_equal(expected, run(ve_group_pair_unary, lhs, rhs))


def test_ve_group_pair_unary_selective():
    lhs, rhs = seeded_pair()
    expected = libm_f32("expf", lhs.astype(np.float32)) + rhs.astype(np.float32)  # exp on group 0 only
    assert np.isinf(expected).any()  # exp overflows for large lhs; inf + rhs stays inf
    assert_f32_values_equal(expected, run(ve_group_pair_unary_selective, lhs, rhs))


def test_ve_group_pair_ternary():
    rng = np.random.default_rng(42)
    lhs, rhs = rand_f32(rng), rand_f32(rng)
    expected = fma_exact(lhs, 2.0, 1.0) * fma_exact(rhs, 3.0, 2.0)  # x.mul_add(2, 1) * y.mul_add(3, 2)
    assert_f32_values_equal(expected, run(ve_group_pair_ternary, lhs, rhs))


def test_ve_group_pair_ternary_selective():
    rng = np.random.default_rng(42)
    lhs, rhs = rand_f32(rng), rand_f32(rng)
    with np.errstate(divide="ignore"):
        expected = fma_exact(lhs, 2.0, 1.0) / rhs  # group 1 passes through
    assert_f32_values_equal(expected, run(ve_group_pair_ternary_selective, lhs, rhs))


# =============================================================================
# Ours: the kernels upstream leaves untested, and the bit-pattern kernels on the simulator
# =============================================================================


def test_ve_group_pair_post_zip():
    lhs, rhs = seeded_pair()
    total = wrap(lhs.astype(np.int64) + rhs)
    assert (total < 0).any() and (total > 0).any()
    assert_i32_equal(np.maximum(total, 0), run(ve_group_pair_post_zip, lhs, rhs))


def test_ve_group_pair_fp_multi_packet():
    rng = np.random.default_rng(43)
    lhs, rhs = rand_i32(rng, Q.size, A.size), rand_i32(rng, Q.size, A.size)
    got = run(ve_group_pair_fp_multi_packet, lhs, rhs, mapping="Q, A")
    assert got.shape == (Q.size, A.size)
    assert_f32_values_equal(lhs.astype(np.float32) * rhs.astype(np.float32), got)


def test_bit_pattern_kernels_on_the_simulator():
    """Upstream's hand-picked signed zeros and MIN_POSITIVE inputs, on the simulator (compiled to EDF)."""
    with backend("npu") as launch_npu:
        scale = run(
            ve_group_pair_reinterpret_scale_f32,
            cycled(0, PAIR_SCALE_CASES),
            cycled(1, PAIR_SCALE_CASES),
            launch_=launch_npu,
        )
        abs_add = run(
            ve_group_pair_logic_abs_add_f32, cycled(0, ABS_ADD_CASES), cycled(1, ABS_ADD_CASES), launch_=launch_npu
        )
    assert_f32_bits_equal(cycled(2, PAIR_SCALE_CASES), scale)
    assert_f32_bits_equal(np.abs(cycled(0, ABS_ADD_CASES)) + np.abs(cycled(1, ABS_ADD_CASES)), abs_add)
