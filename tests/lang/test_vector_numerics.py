"""Vector Engine chains through the language on the CPU backend, against numpy oracles written here."""

import ctypes
import ctypes.util

import numpy as np

from furiosa_opt import *

A = axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
LIBM.expf.restype, LIBM.expf.argtypes = ctypes.c_float, [ctypes.c_float]


def stream(ctx, x):
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["A % 8"])
    return ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"])


def vrf(ctx, y):
    dm = y.to_dm(ctx.tdma, Cluster, Slice, m["A % 8"])
    return ctx.sub.begin(dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).to_vrf(m["A % 8"])


@device
def integer_chain(
    ctx: Context, x: HbmTensor[i32, Chip, m["A"]], y: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    out = (
        stream(ctx, x)
        .vector_init()
        .vector_intra_slice_tag()
        .vector_logic(LogicBinaryOpI32.BitXor, vrf(ctx, y))
        .vector_fxp(FxpBinaryOp.AddFxpSat, 1 << 30)
        .vector_fxp(FxpBinaryOp.LeftShift, 7, BinaryArgMode.Mode10)
        .vector_clip(ClipBinaryOpI32.Max, -1000)
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return out.to_hbm(ctx.tdma, m["A"])


@device
def float_chain(ctx: Context, x: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    out = (
        stream(ctx, x)
        .vector_init()
        .vector_intra_slice_tag()
        .vector_fxp_to_fp(31)
        .vector_narrow_split(m["A % 8 / 4"], m["A % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.001)
        .vector_fp_unary(FpUnaryOp.Exp)
        .vector_fp_binary(FpBinaryOp.AddF, -1.5)
        .vector_widen_concat(m["1"], m["A % 8"])
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return out.to_hbm(ctx.tdma, m["A"])


def run(kernel, *arrays):
    with Context.acquire() as ctx:
        inputs = [HostTensor.from_numpy(a, i32, m["A"]).to_hbm(ctx.pdma) for a in arrays]
        return launch(kernel, ctx, *inputs).to_host(ctx.pdma).to_numpy()


def test_integer_chain_wraps_saturates_and_clips():
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**31), 2**31, 2048, dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, 2048, dtype=np.int64).astype(np.int32)
    out = run(integer_chain, x, y)
    value = (x ^ y).astype(np.int64)
    value = np.clip(value + (1 << 30), -(2**31), 2**31 - 1)  # saturating add
    saturated = value
    value = ((7 << (value & 31)) + 2**31) % 2**32 - 2**31  # Mode10: operand << stream (amount mod 32), wrapping
    expected = np.maximum(value, -1000).astype(np.int32)
    assert np.array_equal(out, expected)
    assert (out == -1000).any() and (saturated == 2**31 - 1).any()


def test_float_chain_matches_f32_arithmetic_and_libm():
    rng = np.random.default_rng(11)
    x = rng.integers(-4000, 4000, 2048).astype(np.int32)
    out = run(float_chain, x)
    scaled = x.astype(np.float32) * np.float32(0.001)  # fxp_to_fp(31) of an integer is exact here
    exp = np.array([LIBM.expf(float(v)) for v in scaled], dtype=np.float32)
    expected = exp + np.float32(-1.5)
    assert out.dtype == np.float32
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))
