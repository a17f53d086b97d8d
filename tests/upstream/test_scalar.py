"""Port of upstream `furiosa-opt-examples/src/scalar.rs` (one fetch-cast kernel per device scalar) and of the
unit tests and scalar methods of `furiosa-opt-std/src/scalar.rs`.

The kernels: each takes an `[A, B]` HBM tensor, stages it in DM, fetches it with a `fetch_cast` to the
target type, collects one 32-byte flit per cycle and stores the result transposed (`[B, A]`). Upstream
writes the body once as the `scalar_fixture!` macro and gives each kernel its own module and `axes!`,
so every `B` is a different axis sized for one flit (8 x 4 B, 16 x 2 B, 32 x 1 B); here the kernels share a
module, the body is the helper `_fetch_cast_through_dm`, and the three sizes are the axes `B8`, `B16`,
`B32`. Upstream pins these kernels only by translating them (no test file runs them); here each runs on
the CPU backend against a numpy oracle written from the bit-level conversion rules, with the inputs
that matter (NaN payloads, subnormals, rounding ties, infinities), and the conversion kernels also run on
the simulator with those inputs.

The scalar methods are spelled on the dtype (`bf16.from_f32(x)`, `i4.from_i32(v)`); `Opt` is upstream's
`Opt<D>` (`furiosa_opt.dtypes.Opt`). Their oracles are written from the formats' definitions (and, for
bf16, from the rounding rule of the `half` crate upstream delegates to), not taken from `dtypes/`.
"""

import doctest
import struct

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt import dtypes
from furiosa_opt.dtypes import DType, DTypeError, Opt, i5, i9

A, B8, B16, B32 = axes(A=4096, B8=8, B16=16, B32=32)

Chip = m["1"]
Cluster = m["1 # 2"]


def _fetch_cast_through_dm(ctx: Context, input: HbmTensor, dst: DType, B) -> HbmTensor:
    """Upstream's `scalar_fixture!` body: `B` is the innermost axis, one DMA tail and one collect flit."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, B"])
        .fetch_cast(dst)
        .collect(m["A / 8 % 2, A % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 8 % 2, A % 8, B"])
    )
    return result.to_hbm(ctx.tdma, m["B, A"])


# At-width identity relayouts: f32 / i32 take 8 x 4 bytes per flit, i16 16 x 2, i8 / u8 32 x 1.


@device(chip=1)
def relayout_f32(ctx: Context, input: HbmTensor[f32, m["1"], m["A, B8"]]) -> HbmTensor[f32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, f32, B8)


@device(chip=1)
def relayout_i32(ctx: Context, input: HbmTensor[i32, m["1"], m["A, B8"]]) -> HbmTensor[i32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, i32, B8)


@device(chip=1)
def relayout_i16(ctx: Context, input: HbmTensor[i16, m["1"], m["A, B16"]]) -> HbmTensor[i16, m["1"], m["B16, A"]]:
    return _fetch_cast_through_dm(ctx, input, i16, B16)


@device(chip=1)
def relayout_i8(ctx: Context, input: HbmTensor[i8, m["1"], m["A, B32"]]) -> HbmTensor[i8, m["1"], m["B32, A"]]:
    return _fetch_cast_through_dm(ctx, input, i8, B32)


@device(chip=1)
def relayout_u8(ctx: Context, input: HbmTensor[u8, m["1"], m["A, B32"]]) -> HbmTensor[u8, m["1"], m["B32, A"]]:
    return _fetch_cast_through_dm(ctx, input, u8, B32)


# Widening to a 4-byte type: 8 x 4 bytes per flit (the narrow source's 8-element tail is >= 8 bytes).


@device(chip=1)
def widen_bf16(ctx: Context, input: HbmTensor[bf16, m["1"], m["A, B8"]]) -> HbmTensor[f32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, f32, B8)


@device(chip=1)
def widen_f8e4m3(ctx: Context, input: HbmTensor[f8e4m3, m["1"], m["A, B8"]]) -> HbmTensor[f32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, f32, B8)


@device(chip=1)
def widen_f8e5m2(ctx: Context, input: HbmTensor[f8e5m2, m["1"], m["A, B8"]]) -> HbmTensor[f32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, f32, B8)


@device(chip=1)
def widen_i16(ctx: Context, input: HbmTensor[i16, m["1"], m["A, B8"]]) -> HbmTensor[i32, m["1"], m["B8, A"]]:
    return _fetch_cast_through_dm(ctx, input, i32, B8)


# The one narrowing fetch conversion: 16 x 2-byte bf16 is one flit.


@device(chip=1)
def narrow_f32(ctx: Context, input: HbmTensor[f32, m["1"], m["A, B16"]]) -> HbmTensor[bf16, m["1"], m["B16, A"]]:
    return _fetch_cast_through_dm(ctx, input, bf16, B16)


# The same f32 -> bf16 narrowing on the commit path (upstream's `mod f32_commit_narrow`): `commit_trim`
# runs first, and its packet, 8 x f32 = 32 bytes, is the converting commit's input width (a multiple of 16).


@device(chip=1)
def commit_narrow_f32(ctx: Context, input: HbmTensor[f32, m["1"], m["A, B8"]]) -> HbmTensor[bf16, m["1"], m["B8, A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B8"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, B8"])
        .fetch_cast(f32)
        .collect(m["A / 8 % 2, A % 8"], m["B8"])
        .commit_trim(m["B8"])
        .commit_cast(bf16)
        .commit(m["A / 8 % 2, A % 8, B8"])
    )
    return result.to_hbm(ctx.tdma, m["B8, A"])


@device(chip=1)
def commit_narrow_relu_f32(
    ctx: Context, input: HbmTensor[f32, m["1"], m["A, B8"]]
) -> HbmTensor[bf16, m["1"], m["B8, A"]]:
    """The ReLU-fused conversion: a conversion of its own, not a mode of the one above."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B8"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, B8"])
        .fetch_cast(f32)
        .collect(m["A / 8 % 2, A % 8"], m["B8"])
        .commit_trim(m["B8"])
        .commit_cast_relu(bf16)
        .commit(m["A / 8 % 2, A % 8, B8"])
    )
    return result.to_hbm(ctx.tdma, m["B8, A"])


# ---- bit-level oracles, from the formats' definitions ---------------------------------------------------

F32_QNAN = 0x7FC00000


def f32_bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)


def bf16_rne(u: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even of f32 bits to their top 16: add 0x7FFF plus the kept lsb, then cut."""
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16_from_f32_engine(u: np.ndarray) -> np.ndarray:
    """The engines' f32 -> bf16 (fetch_cast, commit_cast): NaN -> 0x7fc0, f32 subnormal -> signed zero."""
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    subnormal = ((u & 0x7F800000) == 0) & ((u & 0x7FFFFF) != 0)
    return np.where(nan, 0x7FC0, np.where(subnormal, (u >> 16) & 0x8000, bf16_rne(u)))


def bf16_from_f32_relu(u: np.ndarray) -> np.ndarray:
    """`commit_cast_relu`: every NaN -> 0x7fc0; any other set sign bit (-0, -inf included) -> +0."""
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, 0x7FC0, np.where(u >> 31 == 1, 0, bf16_from_f32_engine(u)))


def bf16_from_f32_half(u: int) -> int:
    """`half::bf16::from_f32` on one f32 bit pattern: NaN keeps its top bits and turns quiet, else RNE."""
    if u & 0x7FFFFFFF > 0x7F800000:
        return (u >> 16) | 0x40
    return int(bf16_rne(np.int64(u)))


def f32_from_bf16_engine(h: np.ndarray) -> np.ndarray:
    """The engines' bf16 -> f32: NaN -> 0x7fc00000, subnormal -> signed zero, else exact."""
    nan = (h & 0x7FFF) > 0x7F80
    return np.where(nan, F32_QNAN, np.where((h & 0x7F80) == 0, (h & 0x8000) << 16, h << 16))


def bf16_value(h: int) -> float:
    """The real number a non-NaN bf16 code stands for (bias 127, 7 mantissa bits)."""
    sign, e, mant = -1.0 if h >> 15 else 1.0, (h >> 7) & 0xFF, h & 0x7F
    if e == 0xFF:
        return sign * float("inf")
    return sign * (mant * 2.0**-133 if e == 0 else (128 + mant) * 2.0 ** (e - 134))


def f8e4m3_value(c: int) -> float:
    """E4M3 (bias 7, no infinities, 0x7f / 0xff NaN): subnormals mant * 2^-9."""
    sign, e, mant = -1.0 if c >> 7 else 1.0, (c >> 3) & 0xF, c & 7
    if e == 15 and mant == 7:
        return float("nan")
    return sign * (mant * 2.0**-9 if e == 0 else (8 + mant) * 2.0 ** (e - 10))


def f8e5m2_value(c: int) -> float:
    """E5M2 (bias 15, IEEE-like): subnormals mant * 2^-16, exponent 31 infinities and NaNs."""
    sign, e, mant = -1.0 if c >> 7 else 1.0, (c >> 2) & 0x1F, c & 3
    if e == 31:
        return sign * float("inf") if mant == 0 else float("nan")
    return sign * (mant * 2.0**-16 if e == 0 else (4 + mant) * 2.0 ** (e - 17))


E2M1_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]  # codes 0..7; 8..15 are their negatives
F4E2M1_TO_F8E4 = [0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0x4C, 0x80, 0xB0, 0xB8, 0xBC, 0xC0, 0xC4, 0xC8, 0xCC]

# f32 bit patterns that test a conversion: subnormals, the smallest normal, ties, overflow, NaNs, zeros
SPECIAL_F32 = [
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
    0x3F808000, 0x3F818000, 0x3F808001, 0xBF818000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F7FFF, 0x7F800000,
    0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0xFF812345, 0x3F800000, 0xC0490FDB, 0x0080FFFF,
]  # fmt: skip


def f32_input(seed: int, count: int) -> np.ndarray:
    """Random f32 bit patterns over the whole code space, the special ones first."""
    u = np.random.default_rng(seed).integers(0, 2**32, count, dtype=np.uint32)
    u[: len(SPECIAL_F32)] = SPECIAL_F32
    return u


def launch_transposed(kernel, host: HostTensor, out: str, launch_=launch) -> np.ndarray:
    """Run `kernel` on `host` uploaded as it is; the result as its `[B, A]` host array."""
    with Context.acquire() as ctx:
        output = launch_(kernel, ctx, host.to_hbm(ctx.pdma))
        return output.to_host(ctx.pdma, m[out]).to_numpy()


# ---- the kernels on the CPU backend ---------------------------------------------------------------------


def test_relayout_f32_keeps_every_bit():
    u = f32_input(1, A.size * B8.size)
    host = HostTensor.from_buf(u.astype("<u4").tobytes(), f32, m["A, B8"])
    got = launch_transposed(relayout_f32, host, "B8, A")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), u.reshape(A.size, B8.size).T)


@pytest.mark.parametrize(
    ("kernel", "dtype", "b", "out"),
    [
        (relayout_i32, i32, B8, "B8, A"),
        (relayout_i16, i16, B16, "B16, A"),
        (relayout_i8, i8, B32, "B32, A"),
        (relayout_u8, u8, B32, "B32, A"),
    ],
    ids=["i32", "i16", "i8", "u8"],
)
def test_relayout_integers(kernel, dtype, b, out):
    lo, hi = dtype.int_range
    values = np.random.default_rng(2).integers(lo, hi, (A.size, b.size), endpoint=True)
    values[0, :2] = lo, hi
    host = HostTensor.from_vec(values.reshape(-1), dtype, m[A, b])
    got = launch_transposed(kernel, host, out)
    assert got.dtype == dtype.storage
    np.testing.assert_array_equal(got, values.T)


def test_widen_bf16_flushes_subnormals():
    # Every one of the 2^16 codes: two launches of A x B8 = 32768 each.
    codes = np.arange(2**16, dtype=np.int64).reshape(2, A.size, B8.size)
    for half in codes:
        host = HostTensor.from_vec(bf16.from_bits(half.reshape(-1)), bf16, m["A, B8"])
        got = launch_transposed(widen_bf16, host, "B8, A")
        np.testing.assert_array_equal(got.view(np.uint32), f32_from_bf16_engine(half).T)
    # The user widening `bf16.to_f32` keeps the subnormal the engine flushed.
    assert bf16.to_f32(bf16.from_bits(0x0001)) == np.float32(2.0**-133)


@pytest.mark.parametrize(
    ("kernel", "dtype", "decode"),
    [(widen_f8e4m3, f8e4m3, f8e4m3_value), (widen_f8e5m2, f8e5m2, f8e5m2_value)],
    ids=["f8e4m3", "f8e5m2"],
)
def test_widen_f8(kernel, dtype, decode):
    codes = np.arange(A.size * B8.size) % 256  # every code, 128 times
    host = HostTensor.from_buf(codes.astype(np.uint8).tobytes(), dtype, m["A, B8"])
    got = launch_transposed(kernel, host, "B8, A").T.reshape(-1)
    for c in range(256):
        value = decode(c)
        cells = got[codes == c]
        if np.isnan(value):
            # f8e4m3's two NaN codes give +qNaN; upstream's f8e5m2 negates f32::NAN for a negative code
            sign = (c >> 7) << 31 if dtype == f8e5m2 else 0
            assert set(cells.view(np.uint32).tolist()) == {F32_QNAN | sign}, hex(c)
        else:
            assert set(cells.view(np.uint32).tolist()) == {struct.unpack("<I", struct.pack("<f", value))[0]}, hex(c)


def test_widen_i16_sign_extends():
    values = np.random.default_rng(3).integers(-(2**15), 2**15, (A.size, B8.size))
    values[0, :3] = -(2**15), -1, 2**15 - 1
    host = HostTensor.from_vec(values.reshape(-1), i16, m["A, B8"])
    got = launch_transposed(widen_i16, host, "B8, A")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, values.T)


@pytest.mark.parametrize(
    ("kernel", "b", "oracle"),
    [
        (narrow_f32, B16, bf16_from_f32_engine),
        (commit_narrow_f32, B8, bf16_from_f32_engine),
        (commit_narrow_relu_f32, B8, bf16_from_f32_relu),
    ],
    ids=["fetch_cast", "commit_cast", "commit_cast_relu"],
)
def test_narrow_f32(kernel, b, oracle):
    u = f32_input(4, A.size * b.size)
    host = HostTensor.from_buf(u.astype("<u4").tobytes(), f32, m[A, b])
    got = launch_transposed(kernel, host, f"{b.name}, A")
    expected = oracle(u.astype(np.int64)).reshape(A.size, b.size).T
    np.testing.assert_array_equal(got.view(np.uint16), expected)


def test_the_engine_and_the_user_narrowing_differ_on_subnormals_and_nan_payloads():
    u = np.array([0x00000001, 0x807FFFFF, 0x7F812345], dtype=np.int64)
    assert bf16_from_f32_engine(u).tolist() == [0x0000, 0x8000, 0x7FC0]
    user = bf16.to_bits(bf16.from_f32(u.astype(np.uint32).view(np.float32)))
    assert user.tolist() == [0x0000, 0x8080, 0x7FC1]  # 2^-149 rounds to +0; -(2^-126 - 2^-149) keeps; NaN quiet


# ---- the conversion kernels on the simulator, with the same inputs ----------------------------------------


@pytest.mark.parametrize(
    ("kernel", "dtype", "b", "out_dtype", "oracle"),
    [
        (widen_bf16, bf16, B8, np.uint32, None),
        (narrow_f32, f32, B16, np.uint16, bf16_from_f32_engine),
        (commit_narrow_relu_f32, f32, B8, np.uint16, bf16_from_f32_relu),
    ],
    ids=["widen_bf16", "narrow_f32", "commit_narrow_relu_f32"],
)
def test_conversions_on_the_simulator(kernel, dtype, b, out_dtype, oracle):
    if dtype == bf16:
        codes = (np.arange(A.size * b.size, dtype=np.int64) * 7 + 0x7F00) % 2**16  # NaNs, subnormals, all
        codes[:4] = [0x0001, 0x8001, 0x7FC1, 0xFF81]
        host = HostTensor.from_vec(bf16.from_bits(codes), bf16, m[A, b])
        expected = f32_from_bf16_engine(codes)
    else:
        u = f32_input(5, A.size * b.size)
        host = HostTensor.from_buf(u.astype("<u4").tobytes(), f32, m[A, b])
        expected = oracle(u.astype(np.int64))
    with backend("npu") as launch_:
        got = launch_transposed(kernel, host, f"{b.name}, A", launch_)
    np.testing.assert_array_equal(got.view(out_dtype), expected.reshape(A.size, b.size).T)


# ---- the unit tests of furiosa-opt-std/src/scalar.rs -------------------------------------------------------


def test_to_buf_byte_aligned_is_passthrough():
    N3, N2, N5 = axes(N3=3, N2=2, N5=5)
    assert HostTensor.from_vec([1, -1, 127], i8, m["N3"]).to_buf() == bytes([1, 0xFF, 127])
    assert HostTensor.from_vec([1.0, 2.0], f32, m["N2"]).to_buf() == struct.pack("<f", 1.0) + struct.pack("<f", 2.0)
    assert len(HostTensor.from_vec([0.0] * 5, f32, m["N5"]).to_buf()) == f32.nbytes(5) == 20


def test_to_buf_4bit_is_dense():
    N4, N2 = axes(N4=4, N2=2)
    vals = HostTensor.from_vec(f4e2m1.from_bits([0x1, 0x2, 0x3, 0x4]), f4e2m1, m["N4"])
    assert vals.to_buf() == bytes([0x21, 0x43])
    assert len(vals.to_buf()) == f4e2m1.nbytes(4)
    i4s = i4.from_i32([1, 2, -1])
    assert HostTensor.from_vec(i4s[:2], i4, m["N2"]).to_buf() == bytes([0x21])


def test_scalar_constructors():
    # Upstream's `scalar_constructors_are_const` (Python has no const evaluation; the values are the point).
    assert bf16.to_bits(bf16.from_f32(1.0)) == bf16_from_f32_half(0x3F800000) == 0x3F80
    assert bf16.to_f32(bf16.from_f32(1.0)) == 1.0
    assert f8e4m3.to_bits(f8e4m3.from_f32(1.0)) == 0x38  # exponent 7 = bias, mantissa 0
    assert i4.to_i32(i4.from_i32(-1)) == -1
    assert i4.to_i32(i4.from_i32(7)) == 7


def test_bf16_from_f32_matches_half():
    f32_min, f32_max = -3.4028234663852886e38, 3.4028234663852886e38
    for v in [0.0, 1.0, -1.0, 0.5, 12.34, -56.78, 65504.0, f32_min, f32_max]:
        u = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bf16.to_bits(bf16.from_f32(v)) == bf16_from_f32_half(u), v


# ---- the scalar methods against the formats ---------------------------------------------------------------


def test_bf16_from_f32_on_random_bit_patterns():
    u = f32_input(6, 200_000)
    got = bf16.to_bits(bf16.from_f32(u.view(np.float32)))
    assert got.dtype == np.uint16
    expected = [bf16_from_f32_half(int(x)) for x in u[:2000]]
    assert got[:2000].tolist() == expected
    finite = (u & 0x7FFFFFFF) <= 0x7F800000  # the vectorised oracle covers every non-NaN pattern
    np.testing.assert_array_equal(got[finite], bf16_rne(u[finite].astype(np.int64)))


def test_bf16_to_f32_is_exact_for_every_code():
    codes = np.arange(2**16)
    got = bf16.to_f32(bf16.from_bits(codes))
    assert got.dtype == np.float32
    bits = got.view(np.uint32)
    for h in range(2**16):
        if (h & 0x7FFF) > 0x7F80:  # NaN: the payload kept, the quiet bit set (half's rule)
            assert bits[h] == (h | 0x40) << 16, hex(h)
        else:
            assert got[h] == bf16_value(h) and np.signbit(got[h]) == bool(h >> 15), hex(h)


def test_f8_to_f32_for_every_code():
    codes = np.arange(256)
    for dtype, decode in [(f8e4m3, f8e4m3_value), (f8e5m2, f8e5m2_value)]:
        got = dtype.to_f32(dtype.from_bits(codes))
        for c in range(256):
            want = decode(c)
            assert (np.isnan(got[c]) and np.isnan(want)) or (got[c] == want and np.signbit(got[c]) == (c >> 7)), c


def test_f8_from_f32_round_trips_and_saturates():
    for dtype, nan_code in [(f8e4m3, 0x7F), (f8e5m2, 0x7E)]:
        codes = np.arange(256)
        values = dtype.to_f32(dtype.from_bits(codes))
        back = dtype.to_bits(dtype.from_f32(values))
        exact = ~np.isnan(values)
        np.testing.assert_array_equal(back[exact], codes[exact])  # every value is its own code
        assert set(back[~exact].tolist()) == {nan_code}
    # E4M3 has no infinity: overflow (inf included) saturates at +-448; E5M2 overflows to +-inf.
    assert f8e4m3.to_bits(f8e4m3.from_f32([1000.0, float("inf"), -1e9])).tolist() == [0x7E, 0x7E, 0xFE]
    assert f8e5m2.to_bits(f8e5m2.from_f32([1e6, -float("inf")])).tolist() == [0x7C, 0xFC]


def test_f4e2m1_methods():
    codes = list(range(16))
    assert f4e2m1.to_f32(f4e2m1.from_bits(codes)).tolist() == E2M1_VALUES + [-v for v in E2M1_VALUES]
    assert np.signbit(f4e2m1.to_f32(f4e2m1.from_bits(0x8)))  # 0x8 is -0
    # to_f8e4m3 is upstream's 16-entry table; each entry decodes to the e2m1 value it stands for
    f8 = f4e2m1.to_f8e4m3(f4e2m1.from_bits(codes))
    assert f8e4m3.to_bits(f8).tolist() == F4E2M1_TO_F8E4
    assert [f8e4m3_value(c) for c in F4E2M1_TO_F8E4] == E2M1_VALUES + [-v for v in E2M1_VALUES]
    # from_bits keeps the low nibble; from_f32 takes the nearest code, a tie the lower code
    assert f4e2m1.to_bits(f4e2m1.from_bits([0x17, 0xF0, 0xFF])).tolist() == [0x7, 0x0, 0xF]
    assert f4e2m1.to_bits(f4e2m1.from_f32([0.25, 5.0, -0.25, 2.5, 100.0, -7.0])).tolist() == [0, 6, 0, 4, 7, 15]


@pytest.mark.parametrize(("dtype", "bits", "signed"), [(i4, 4, True), (i5, 5, True), (i9, 9, True), (i8, 8, True),
                                                       (i16, 16, True), (u8, 8, False)], ids=str)  # fmt: skip
def test_from_i32_wraps_to_the_low_bits(dtype, bits, signed):
    xs = [*range(-600, 600, 7), -(2**31), 2**31 - 1, 12345678]
    got = dtype.from_i32(xs)
    assert got.dtype == dtype.storage
    for x, g in zip(xs, got.tolist(), strict=True):
        low = x % 2**bits
        assert g == (low - 2**bits if signed and low >= 2 ** (bits - 1) else low), (x, g)
    assert dtype.to_i32(got).dtype == np.int32
    assert dtype.to_i32(got).tolist() == got.tolist()


def test_i32_from_i32_is_the_value():
    assert i32.from_i32(-(2**31)) == -(2**31) and i32.to_i32(np.int32(7)) == 7


def test_scalar_arguments_give_scalars_and_arrays_give_arrays():
    one = bf16.from_f32(1.5)
    assert np.ndim(one) == 0 and one.dtype == bf16.storage and float(one) == 1.5
    many = bf16.from_f32([[1.5, -2.0]])
    assert many.shape == (1, 2) and many.dtype == bf16.storage
    assert isinstance(i4.from_i32(3), np.int8)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: i8.from_f32(1.0), "i8 has no from_f32; it is a method of f32, bf16, f8e4m3, f8e5m2, f4e2m1"),
        (lambda: bf16.from_i32(1), "bf16 has no from_i32"),
        (lambda: bf16.to_f8e4m3(bf16.from_f32(1.0)), "bf16 has no to_f8e4m3"),
        (lambda: i4.from_i32(1.5), "i4.from_i32: expected integers, got float64"),
        (lambda: i4.from_i32(2**31), "i4.from_i32: expected integers in [-2147483648, 2147483647], got 2147483648"),
        (lambda: i4.to_i32(8), "i4.to_i32: expected integers in [-8, 7], got 8"),
        (lambda: bf16.from_bits(0x10000), "bf16.from_bits: expected integers in [0, 65535], got 65536"),
        (lambda: f4e2m1.from_bits(256), "f4e2m1.from_bits: expected integers in [0, 255], got 256"),
        (lambda: bf16.to_f32(1.5), "expected a bf16 array"),
        (lambda: f8e4m3.from_f32(bf16.from_f32(1.0)), "from_f32 takes real numbers"),
    ],
)
def test_scalar_method_refusals(call, words):
    with pytest.raises(DTypeError) as info:
        call()
    assert words in str(info.value)


def test_f32_methods_are_the_value():
    assert f32.to_bits(f32.from_f32(1.0)) == 0x3F800000
    assert f32.to_f32(f32.from_bits(0x7FA00001)).view(np.uint32) == 0x7FA00001  # a signalling NaN, kept


# ---- Opt ---------------------------------------------------------------------------------------------------


def test_opt_map_zip_map_unwrap():
    assert Opt.Init(3).map(lambda v: v + 1) == Opt.Init(4)
    assert Opt.Uninit.map(lambda v: v + 1) == Opt.Uninit
    assert Opt.Init(3).zip_map(Opt.Init(5), lambda a, b: a * 10 + b) == Opt.Init(35)
    assert Opt.Init(3).zip_map(Opt.Uninit, max) == Opt.Uninit
    assert Opt.Uninit.zip_map(Opt.Init(5), max) == Opt.Uninit
    assert Opt.Init(2.5).unwrap() == 2.5
    with pytest.raises(ValueError, match="uninitialized"):
        Opt.Uninit.unwrap()


def test_opt_arithmetic_and_zero():
    assert Opt.Init(2) + Opt.Init(3) == Opt.Init(5)
    assert Opt.Init(2) * Opt.Init(3) == Opt.Init(6)
    assert Opt.Init(2) + Opt.Uninit == Opt.Uninit
    assert Opt.Init(0).is_zero() and not Opt.Init(1).is_zero() and not Opt.Uninit.is_zero()
    # a value of a device type rides along: bf16 sums in bf16
    total = Opt.Init(bf16.from_f32(1.0)) + Opt.Init(bf16.from_f32(2.0**-8))
    assert bf16.to_bits(total.unwrap()) == 0x3F80  # 1 + 2^-8 ties to even in bf16


# ---- the docstring examples --------------------------------------------------------------------------------


def test_docstring_examples_hold():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    scope = {name: getattr(dtypes, name) for name in dir(dtypes)}
    tried = 0
    for owner in (dtypes.DType, Opt):
        for test in finder.find(owner, globs=scope):
            runner.run(test)
            tried += len(test.examples)
    assert tried >= 15
    assert runner.failures == 0
