"""Port of upstream `contract_outer_assertions`: the legal twins of the `contract_outer` / `to_trf` operand
rules whose refused twins are `tests/negative/upstream_contract_outer_assertions.py`.

Every contraction multiplies an i8 stream `[A, …]` with an i8 TRF tensor whose lane axis is `R` and writes
the i32 sums `[A, …, R # 8]` into an output tensor the host made (upstream's `&mut HbmTensor`). Upstream's
modules (`lane_size`, `cpacket_size`, …) name the rule each kernel sits next to; Python has one namespace,
so the module name is the prefix of each test's name instead. Upstream's tests only launch the kernels;
ours also compare each result with a numpy contraction of the same inputs, and check that the kernels that
only fill the TRF leave their output untouched.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
Lane = m["R"]

# ---- lane_size ----------------------------------------------------------------------------------------


@device(chip=1)
def valid_size_8(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(m["R"], m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["B"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


# ---- cpacket_size -------------------------------------------------------------------------------------


@device(chip=1)
def valid_size_64(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["B"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_size_32(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B / 2"]],
    input_trf: HbmTensor[i8, Chip, m["R, B / 2"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B / 2"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B / 2"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B / 2"])
        .fetch_cast(i8)
        .collect(m["R"], m["B / 2"])
        .to_trf(Lane, m["B / 2"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B / 2"])
        .fetch_cast(i8)
        .collect(m["A"], m["B / 2"])
        .contract_outer(trf, m["A"], m["B / 2"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


# ---- cpacket_mapping ----------------------------------------------------------------------------------


@device(chip=1)
def valid_one_collect_flit(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, E"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, E"])
    trf = ctx.sub.begin(trf_dm.view()).fetch(m["R"], m["E"]).fetch_cast(i8).collect(m["R"], m["E"]).to_trf(Lane, m["E"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["A"], m["E"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_two_collect_flits(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["B"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


# ---- time_broadcast: OutTime = [stream Time, tiling axes], the tiling axes innermost ------------------


@device(chip=1)
def valid_single_tiling(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, T, E"]],
    output: HbmTensor[i32, Chip, m["A, T, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, T, E"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R, T"], m["E"])
        .fetch_cast(i8)
        .collect(m["R, T"], m["E"])
        .to_trf(Lane, m["T, E"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["A, T"], m["E"])
        .contract_packet(m["1"])
        .contract_time(m["A, T"])
        .contract_lane(LaneMode.Interleaved, m["A, T"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, T, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_double_tiling(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, U, T, E"]],
    output: HbmTensor[i32, Chip, m["A, U, T, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, U, T, E"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R, U, T"], m["E"])
        .fetch_cast(i8)
        .collect(m["R, U, T"], m["E"])
        .to_trf(Lane, m["U, T, E"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["A, U, T"], m["E"])
        .contract_packet(m["1"])
        .contract_time(m["A, U, T"])
        .contract_lane(LaneMode.Interleaved, m["A, U, T"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, U, T, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_tiling_not_in_trf(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, E"]],
    output: HbmTensor[i32, Chip, m["A, T, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, E"])
    trf = ctx.sub.begin(trf_dm.view()).fetch(m["R"], m["E"]).fetch_cast(i8).collect(m["R"], m["E"]).to_trf(Lane, m["E"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["A, T"], m["E"])
        .contract_packet(m["1"])
        .contract_time(m["A, T"])
        .contract_lane(LaneMode.Interleaved, m["A, T"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, T, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_transposed_tiling(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, T, V, E"]],
    output: HbmTensor[i32, Chip, m["A, V, T, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, T, V, E"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R, T, V"], m["E"])
        .fetch_cast(i8)
        .collect(m["R, T, V"], m["E"])
        .to_trf(Lane, m["T, V, E"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["A, V, T"], m["E"])
        .contract_packet(m["1"])
        .contract_time(m["A, V, T"])
        .contract_lane(LaneMode.Interleaved, m["A, V, T"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, V, T, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


# ---- trf_mapping and trf_size: TRF stores only --------------------------------------------------------


@device(chip=1)
def valid_mapping(
    ctx: Context,
    _input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    _output: HbmTensor[i32, Chip, m["A, 1 # 8"]],
) -> None:
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )


@device(chip=1)
def valid_unit_time_lane(ctx: Context, input_trf: HbmTensor[i8, Chip, m["E"]]) -> None:
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    ctx.sub.begin(trf_dm.view()).fetch(m["1"], m["E"]).fetch_cast(i8).collect(m["1"], m["E"]).to_trf(m["1"], m["E"])


@device(chip=1)
def valid_to_trf_full(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], _output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    trf_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .to_trf(m["A"], m["B"])
    )


# ---- host side ----------------------------------------------------------------------------------------


def ramp(*shape: int) -> np.ndarray:
    """Upstream's input: cell x (row-major) holds `x as i8`, wrapping past 127 to -128."""
    return np.arange(np.prod(shape)).astype(np.int8).reshape(shape)


def random_i8(seed: int, *shape: int) -> np.ndarray:
    """The contraction inputs. Upstream launches on its ramp, but that repeats every 256 cells (rows 4..7
    of a 64-wide operand equal rows 0..3), which would hide a swapped row; seeded random values do not."""
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)


def contracted(kernel, x: np.ndarray, x_map: Mapping, w: np.ndarray, w_map: Mapping, out_map: Mapping) -> np.ndarray:
    """Launch `kernel` on the stream input `x` and TRF input `w`; return the output it wrote."""
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(x, i8, x_map).to_hbm(ctx.pdma)
        input_trf = HostTensor.from_numpy(w, i8, w_map).to_hbm(ctx.pdma)
        output = HbmTensor.new(i32, Chip, out_map)
        launch(kernel, ctx, input, input_trf, output)
        actual = output.to_host(ctx.pdma).to_numpy()
    assert actual.dtype == np.int32
    return actual


def oracle(spec: str, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The exact integer contraction (i8 × i8 summed in int64, which no i32 sum here can overflow)."""
    return np.einsum(spec, x.astype(np.int64), w.astype(np.int64)).astype(np.int32)


def test_lane_size_valid_size_8():
    x, w = random_i8(1, 8, 64), random_i8(2, 8, 64)
    actual = contracted(valid_size_8, x, m["A, B"], w, m["R, B"], m["A, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ab,rb->ar", x, w))


def test_cpacket_size_valid_size_64():
    x, w = random_i8(3, 8, 64), random_i8(4, 8, 64)
    actual = contracted(valid_size_64, x, m["A, B"], w, m["R, B"], m["A, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ab,rb->ar", x, w))


def test_cpacket_size_valid_size_32():
    """`B / 2` is the even coordinates of B: the kernel sees columns 0, 2, …, 62 and nothing else."""
    x, w = random_i8(5, 8, 64), random_i8(6, 8, 64)
    actual = contracted(valid_size_32, x, m["A, B / 2"], w, m["R, B / 2"], m["A, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ab,rb->ar", x[:, ::2], w[:, ::2]))


def test_cpacket_mapping_valid_one_collect_flit():
    x, w = random_i8(7, 8, 32), random_i8(8, 8, 32)
    actual = contracted(valid_one_collect_flit, x, m["A, E"], w, m["R, E"], m["A, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ae,re->ar", x, w))


def test_cpacket_mapping_valid_two_collect_flits():
    x, w = random_i8(9, 8, 64), random_i8(10, 8, 64)
    actual = contracted(valid_two_collect_flits, x, m["A, B"], w, m["R, B"], m["A, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ab,rb->ar", x, w))


def test_time_broadcast_valid_single_tiling():
    x, w = random_i8(11, 8, 32), random_i8(12, 8, 5, 32)
    actual = contracted(valid_single_tiling, x, m["A, E"], w, m["R, T, E"], m["A, T, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ae,rte->atr", x, w))


def test_time_broadcast_valid_double_tiling():
    x, w = random_i8(13, 8, 32), random_i8(14, 8, 3, 5, 32)
    actual = contracted(valid_double_tiling, x, m["A, E"], w, m["R, U, T, E"], m["A, U, T, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ae,rute->autr", x, w))


def test_time_broadcast_valid_tiling_not_in_trf():
    """T is in neither operand, so every T step repeats the same `[A, R]` sums."""
    x, w = random_i8(15, 8, 32), random_i8(16, 8, 32)
    actual = contracted(valid_tiling_not_in_trf, x, m["A, E"], w, m["R, E"], m["A, T, R # 8"])
    expected = np.broadcast_to(oracle("ae,re->ar", x, w)[:, None, :], (8, 5, 8))
    np.testing.assert_array_equal(actual, expected)


def test_time_broadcast_valid_transposed_tiling():
    """The TRF holds `[T, V, E]` but the output walks `[V, T]`: the TRF is read transposed."""
    x, w = random_i8(17, 8, 32), random_i8(18, 8, 5, 2, 32)
    actual = contracted(valid_transposed_tiling, x, m["A, E"], w, m["R, T, V, E"], m["A, V, T, R # 8"])
    np.testing.assert_array_equal(actual, oracle("ae,rtve->avtr", x, w))


SENTINEL = -7  # the TRF-only kernels write nothing: an output still full of it was never touched


def test_trf_mapping_valid_mapping():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(ramp(8, 64), i8, m["A, B"]).to_hbm(ctx.pdma)
        input_trf = HostTensor.from_numpy(ramp(8, 64), i8, m["R, B"]).to_hbm(ctx.pdma)
        output = HostTensor.from_numpy(np.full((8,), SENTINEL), i32, m["A, 1 # 8"]).to_hbm(ctx.pdma)
        launch(valid_mapping, ctx, input, input_trf, output)
        actual = output.to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(actual, np.full((8,), SENTINEL, dtype=np.int32))


def test_trf_mapping_valid_unit_time_lane():
    with Context.acquire() as ctx:
        input_trf = HostTensor.from_numpy(ramp(32), i8, m["E"]).to_hbm(ctx.pdma)
        assert launch(valid_unit_time_lane, ctx, input_trf) is None


def test_trf_size_valid_to_trf_full():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(ramp(8, 64), i8, m["A, B"]).to_hbm(ctx.pdma)
        output = HostTensor.from_numpy(np.full((8, 64), SENTINEL), i8, m["A, B"]).to_hbm(ctx.pdma)
        launch(valid_to_trf_full, ctx, input, output)
        actual = output.to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(actual, np.full((8, 64), SENTINEL, dtype=np.int8))


# ---- the refused twins (tests/negative/upstream_contract_outer_*.py) say what upstream says --------------

NEGATIVE = Path(__file__).parents[1] / "negative"

# (fixture, kernel, fragments of upstream's panic string that our diagnostic must carry). Ours also show
# the mappings compared, so where upstream's text has none, its halves around them are checked.
UPSTREAM_REFUSALS = [
    ("lane_size", "invalid_size_3", ("Lane::SIZE must be 1, 2, 4, or 8, got 3",)),
    ("lane_size", "invalid_size_16", ("Lane::SIZE must be 1, 2, 4, or 8, got 16",)),
    ("cpacket_mapping", "invalid_mapping", ("`contract_outer`: inner flit of OutPacket must equal the input Packet",)),
    (
        "cpacket_mapping",
        "invalid_one_collect_flit_no_padding",
        ("`contract_outer`: OutPacket's packed cells must equal the innermost 2 cells of Time",),
    ),
    (
        "cpacket_mapping",
        "invalid_one_collect_flit_no_padding_reversed",
        ("`contract_outer`: inner flit of OutPacket must equal the input Packet",),
    ),
    ("time_broadcast", "invalid_time_mismatch", ("`contract_outer`: Time", "does not divide OutTime")),
    (
        "time_broadcast",
        "invalid_swapped_time_axes",
        ("`contract_outer`: OutTime must be the outer Time with broadcast (tiling) axes innermost",),
    ),
    (
        "time_broadcast",
        "invalid_tiling_not_innermost",
        ("`contract_outer`: OutTime must be the outer Time with broadcast (tiling) axes innermost",),
    ),
    ("trf_mapping", "invalid_lane_mapping", ("`to_trf` lane mismatch: time_outer != Lane: `A` != `E / 4`",)),
    ("trf_mapping", "invalid_mapping", ("`to_trf` element mismatch: [time_inner, Packet] != Element: `B` != `A, C`",)),
    ("trf_mapping", "invalid_lane_not_divisible_by_time", ("Lane::SIZE (4) does not divide Time::SIZE (6)",)),
    ("trf_lane_time", "invalid_lane_exceeds_time", ("Lane::SIZE (4) does not divide Time::SIZE (2)",)),
    (
        "trf_size",
        "invalid_to_trf_full",
        ("TRF data (524288 bytes = 8 lanes x 65536 bytes) exceeds", "register file capacity (65536 bytes)"),
    ),
]


@pytest.mark.parametrize(
    ("fixture", "kernel", "fragments"), UPSTREAM_REFUSALS, ids=[k for _, k, _ in UPSTREAM_REFUSALS]
)
def test_refused_twin_says_what_upstream_says(fixture: str, kernel: str, fragments: tuple[str, ...]):
    path = NEGATIVE / f"upstream_contract_outer_{fixture}.py"
    spec = importlib.util.spec_from_file_location(f"upstream_refusals_{fixture}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    diagnostics = compile_kernel(getattr(module, kernel)).diagnostics
    assert len(diagnostics) == 1, [d.message for d in diagnostics]
    for fragment in fragments:
        assert fragment in diagnostics[0].message
