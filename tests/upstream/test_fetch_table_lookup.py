"""Port of upstream `furiosa-opt-examples/src/fetch_table_lookup.rs`: the Fetch Adapter's table-lookup stage
on the main context, in its five kernels.

* `f4e2m1 → f8e4m3 → f32` (the NVFP4 decode, then a widening `fetch_cast`), its MXFP4 twin whose fetch
  packet spans a 32-element block, and `f4e2m1 → f8e5m2` committed as it is;
* `f8e4m3 → bf16` and `f8e5m2 → bf16` through the non-paired 8-bit table.

Each kernel moves `[A, B]` to DM with `A / 16` (or `AM / 32`) over the 256 slices and returns the decoded
tensor as `[B, A]`, so the host reads the transpose of the decoded input. Upstream's file has no tests;
ours decode inputs that hold every code of the source type against tables written down from the formats'
definitions (the sixteen e2m1 values; the f8 values as ml_dtypes reads them) and compare bit patterns, so
`0x8 → -0.0` and the NaN words are pinned too.

Every kernel runs in the differential harness; the tests here also run each on both backends: the f4e2m1
kernels with every e2m1 code (packed two per byte in HBM and DM, as upstream), the f8 → bf16 kernels with
every f8 code (the harness's random inputs hold no NaN, infinity or subnormal).
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

A, B = axes(A=4096, B=16)
Bp = axes(Bp=32)
AM = axes(AM=8192)
Bf = axes(Bf=16)

Chip, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def fetch_table_lookup_decode_e2m1(
    ctx: Context, input: HbmTensor[f4e2m1, m["1"], m["A, B"]]
) -> HbmTensor[f32, m["1"], m["B, A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B"])
    decoded = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, B"])
        .fetch_table_lookup(f8e4m3)
        .fetch_cast(f32)
        .collect(m["A / 8 % 2, A % 8, B / 8"], m["B % 8"])
        .commit_trim(m["B % 8"])
        .commit(m["A / 8 % 2, A % 8, B"])
    )
    return decoded.to_hbm(ctx.tdma, m["B, A"])


@device(chip=1)
def fetch_table_lookup_decode_e2m1_to_f8e5m2(
    ctx: Context, input: HbmTensor[f4e2m1, m["1"], m["A, Bp"]]
) -> HbmTensor[f8e5m2, m["1"], m["Bp, A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, Bp"])
    decoded = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, Bp"])
        .fetch_table_lookup(f8e5m2)
        .collect(m["A / 8 % 2, A % 8"], m["Bp"])
        .commit_trim(m["Bp"])
        .commit(m["A / 8 % 2, A % 8, Bp"])
    )
    return decoded.to_hbm(ctx.tdma, m["Bp, A"])


@device(chip=1)
def fetch_table_lookup_decode_e2m1_mxfp4(
    ctx: Context, input: HbmTensor[f4e2m1, m["1"], m["AM, B"]]
) -> HbmTensor[f32, m["1"], m["B, AM"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["AM / 32"], m["AM / 8 % 4, AM % 8, B"])
    decoded = (
        ctx.main.begin(input_dm.view())
        .fetch(m["AM / 8 % 4"], m["AM % 8, B"])
        .fetch_table_lookup(f8e4m3)
        .fetch_cast(f32)
        .collect(m["AM / 8 % 4, AM % 8, B / 8"], m["B % 8"])
        .commit_trim(m["B % 8"])
        .commit(m["AM / 8 % 4, AM % 8, B"])
    )
    return decoded.to_hbm(ctx.tdma, m["B, AM"])


@device(chip=1)
def fetch_table_lookup_decode_f8e5m2_to_bf16(
    ctx: Context, input: HbmTensor[f8e5m2, m["1"], m["A, Bf"]]
) -> HbmTensor[bf16, m["1"], m["Bf, A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, Bf"])
    decoded = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, Bf"])
        .fetch_table_lookup(bf16)
        .collect(m["A / 8 % 2, A % 8"], m["Bf"])
        .commit_trim(m["Bf"])
        .commit(m["A / 8 % 2, A % 8, Bf"])
    )
    return decoded.to_hbm(ctx.tdma, m["Bf, A"])


@device(chip=1)
def fetch_table_lookup_decode_f8_to_bf16(
    ctx: Context, input: HbmTensor[f8e4m3, m["1"], m["A, Bf"]]
) -> HbmTensor[bf16, m["1"], m["Bf, A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, Bf"])
    decoded = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, Bf"])
        .fetch_table_lookup(bf16)
        .collect(m["A / 8 % 2, A % 8"], m["Bf"])
        .commit_trim(m["Bf"])
        .commit(m["A / 8 % 2, A % 8, Bf"])
    )
    return decoded.to_hbm(ctx.tdma, m["Bf, A"])


# ---- oracles ----------------------------------------------------------------------------------------

# The sixteen e2m1 values by code (sign bit 3, two exponent bits, one mantissa bit); code 8 is -0.
E2M1_VALUES = np.array(
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float32
)
# The same values as f8e5m2 words (bias 15, two mantissa bits), written out by hand.
E2M1_AS_F8E5M2 = np.array(
    [0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0x46, 0x80, 0xB8, 0xBC, 0xBE, 0xC0, 0xC2, 0xC4, 0xC6], dtype=np.uint8
)


def codes(shape: tuple[int, ...], count: int, seed: int) -> np.ndarray:
    """Every code `0..count` at least once (the input is a multiple of `count` cells), shuffled."""
    return np.random.default_rng(seed).permutation(np.arange(np.prod(shape)) % count).reshape(shape).astype(np.uint8)


def f8_to_bf16_bits(code: np.ndarray, source: np.dtype, negative_nan_keeps_sign: bool) -> np.ndarray:
    """The bf16 word of each f8 code: finite values and infinities exactly (ml_dtypes reads the code, and an
    f8 value fits bf16's 8 mantissa bits); NaN codes become the quiet NaN 0x7fc0, or 0xffc0 for a negative
    f8e5m2 NaN: upstream's table is `bf16::from_f32(code.to_f32())`, f8e5m2's `to_f32` negates `f32::NAN`
    for a set sign bit and `half`'s `from_f32` keeps that sign, while every f8e4m3 NaN decodes to +NaN."""
    values = code.view(source).astype(np.float32)
    bits = values.astype(ml_dtypes.bfloat16).view(np.uint16).copy()
    nan = np.isnan(values)
    bits[nan] = np.where(negative_nan_keeps_sign & (code[nan] >= 0x80), 0xFFC0, 0x7FC0)
    return bits


def run(kernel, array: np.ndarray, dtype, mapping, on: str):
    """`kernel` on backend `on`, the input `array` uploaded as `dtype` laid out by `mapping`."""
    with backend(on) as launch_, Context.acquire() as ctx:
        input = HostTensor.from_numpy(array, dtype, mapping).to_hbm(ctx.pdma)
        return launch_(kernel, ctx, input).to_host(ctx.pdma).to_numpy()


def test_oracle_tables_are_the_formats_values():
    """The hand-written tables agree with ml_dtypes' reading of the same codes (a check on the oracle)."""
    np.testing.assert_array_equal(
        np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32).view(np.uint32),
        E2M1_VALUES.view(np.uint32),
    )
    np.testing.assert_array_equal(E2M1_AS_F8E5M2.view(ml_dtypes.float8_e5m2).astype(np.float32), E2M1_VALUES)


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(
    ("kernel", "axis"), [(fetch_table_lookup_decode_e2m1, A), (fetch_table_lookup_decode_e2m1_mxfp4, AM)]
)
def test_decode_e2m1_to_f32(kernel, axis, on):
    code = codes((axis.size, B.size), 16, seed=1)
    out = run(kernel, code.view(f4e2m1.storage), f4e2m1, m[f"{axis.name}, B"], on)
    assert out.dtype == np.float32 and out.shape == (B.size, axis.size)
    np.testing.assert_array_equal(out.view(np.uint32), E2M1_VALUES[code].T.view(np.uint32))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_decode_e2m1_to_f8e5m2(on):
    code = codes((A.size, Bp.size), 16, seed=2)
    out = run(fetch_table_lookup_decode_e2m1_to_f8e5m2, code.view(f4e2m1.storage), f4e2m1, m["A, Bp"], on)
    assert out.dtype == f8e5m2.storage and out.shape == (Bp.size, A.size)
    np.testing.assert_array_equal(out.view(np.uint8), E2M1_AS_F8E5M2[code].T)


CASES_F8 = [
    (fetch_table_lookup_decode_f8_to_bf16, f8e4m3, ml_dtypes.float8_e4m3fn, False),
    (fetch_table_lookup_decode_f8e5m2_to_bf16, f8e5m2, ml_dtypes.float8_e5m2, True),
]


def decoded_f8(kernel, dtype, code: np.ndarray, on: str) -> np.ndarray:
    """The bf16 words `kernel` makes of the f8 codes `code` on backend `on`, as `[Bf, A]`."""
    with backend(on) as launch_, Context.acquire() as ctx:
        input = HostTensor.from_numpy(code.view(dtype.storage), dtype, m["A, Bf"]).to_hbm(ctx.pdma)
        out = launch_(kernel, ctx, input).to_host(ctx.pdma).to_numpy()
    assert out.dtype == bf16.storage and out.shape == (Bf.size, A.size)
    return out.view(np.uint16)


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(("kernel", "dtype", "source", "signed_nan"), CASES_F8)
def test_decode_f8_to_bf16(kernel, dtype, source, signed_nan, on):
    """Every f8 code, on both backends."""
    code = codes((A.size, Bf.size), 256, seed=3)
    got, want = decoded_f8(kernel, dtype, code, on), f8_to_bf16_bits(code, source, signed_nan).T
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_decode_f8e5m2_negative_nan_keeps_its_sign(on):
    """Upstream's table is `bf16::from_f32(to_f32())`: a negative NaN code decodes to 0xffc0."""
    code = codes((A.size, Bf.size), 256, seed=5)
    got = decoded_f8(fetch_table_lookup_decode_f8e5m2_to_bf16, f8e5m2, code, on)
    want = f8_to_bf16_bits(code, ml_dtypes.float8_e5m2, True).T
    negative_nan = np.isin(code.T, [0xFD, 0xFE, 0xFF])
    np.testing.assert_array_equal(got[negative_nan], want[negative_nan])
