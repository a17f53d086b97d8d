"""Port of upstream `furiosa-opt-examples/src/switch_assertions.rs` (the legal kernels) and
`furiosa-opt-examples/tests/switch_assertions_tests.rs` (their tests), with one check of the refused twins in
`src/negative/switch_assertions.rs`, ported as `tests/negative/upstream_switch_assertions_*.py`.

Every kernel copies the HBM tensor `[A, B]` into data memory and streams it back out: the `alignment`,
`packet` and `slice` kernels through fetch → collect → commit only, the others through a `.switch` stage
with one of the named Switch Engine configs (`Broadcast1`, `Broadcast01`, `Transpose`, `InterTranspose`).

Upstream keeps the kernels in seven modules; Python has one module namespace, so the upstream module name
is the prefix of each test's name, and of a kernel's name where two modules use the same one
(`broadcast1_valid_degenerate`, `inter_transpose_valid_degenerate`) or the bare name says nothing
(`inter_transpose::valid` is `inter_transpose_valid`).

Upstream's tests only launch the kernels; ours compare each output with numpy. Most switch kernels load
the `[A, B]` input into a DM tensor whose slice mapping is `C` (or a split of it), an axis the input lacks:
every slice holds the same `[A, B]`, and each output element is the input element with the same A, B
coordinates, whatever C (or fresh broadcast axis such as `D % 4`) it sits at. Since that oracle cannot see
a slice routed to the wrong place, each switch config also gets a `*_per_slice` twin (ours, not upstream's)
whose input `[C, A, B]` differs on every slice: a switch only moves data, so the output must be the input,
element by element, at the same logical coordinates.
"""

from pathlib import Path

import numpy as np
import pytest
from test_negative import diagnostics_of

from furiosa_opt import *

A, B, C, D, E, F, G = axes(A=8, B=32, C=256, D=64, E=1024, F=1024, G=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]

NEGATIVE = Path(__file__).resolve().parent.parent / "negative"


def ramp(*shape: int) -> np.ndarray:
    """Upstream's input: cell x holds `(x % 256) as i8`, i.e. 0..127 then -128..-1 (two's complement wrap)."""
    return (np.arange(int(np.prod(shape))) % 256).astype(np.uint8).view(np.int8).reshape(shape)


def per_slice() -> np.ndarray:
    """Input of the `*_per_slice` twins, `[C, A, B]`: cell (c, a, b) holds `(32a + b + c) % 256` as i8, so the
    256 slices hold 256 different `[A, B]` tensors."""
    values = np.arange(C.size)[:, None, None] + np.arange(A.size * B.size).reshape(A.size, B.size)
    return (values % 256).astype(np.uint8).view(np.int8)


def run(kernel, values: np.ndarray, dtype, in_mapping: Mapping, out_mapping: Mapping) -> np.ndarray:
    """Upload `values`, launch `kernel(ctx, input, output)` and read the output back (axes by first appearance)."""
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(values, dtype, in_mapping).to_hbm(ctx.pdma)
        output = HbmTensor.new(dtype, Chip, out_mapping)
        launch(kernel, ctx, input, output)
        return output.to_host(ctx.pdma).to_numpy()


# ---- alignment ----------------------------------------------------------------------------------------


@device(chip=1)
def aligned_fetch_packet_i8(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def aligned_fetch_packet_bf16(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A, B"]], output: HbmTensor[bf16, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(bf16)
        .collect(m["A, B / 16"], m["B % 16"])  # 32 bf16 are two 32-byte flits: the outer one goes to Time
        .commit_trim(m["B % 16"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def test_alignment_aligned_fetch_packet_i8():
    actual = run(aligned_fetch_packet_i8, ramp(8, 32), i8, m["A, B"], m["A, B"])
    assert actual.dtype == np.int8
    np.testing.assert_array_equal(actual, ramp(8, 32))


def test_alignment_aligned_fetch_packet_bf16():
    values = np.arange(A.size * B.size, dtype=np.float32).reshape(8, 32)  # upstream: `bf16::from_f32(x as f32)`
    actual = run(aligned_fetch_packet_bf16, values, bf16, m["A, B"], m["A, B"])
    # 0..255 are exact in bf16 (8 significant bits), so the copy compares exactly.
    np.testing.assert_array_equal(np.asarray(actual, dtype=np.float32), values)


# ---- packet -------------------------------------------------------------------------------------------
# Upstream's first four kernels have the same body (their names state the packet-padding cases the closed
# switch check distinguishes); each is ported as written.


@device(chip=1)
def packet_padding_unchanged(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def packet_padding_added_in_switch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def packet_nested_padding(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def packet_restructuring(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, C"]], output: HbmTensor[i8, Chip, m["A, C / 16, C % 16"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, C"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["C"])
        .fetch_cast(i8)
        .collect(m["A, C / 32"], m["C % 32"])
        .commit_trim(m["C % 32"])
        .commit(m["A, C / 16, C % 16"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_padding(ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@pytest.mark.parametrize(
    "kernel", [packet_padding_unchanged, packet_padding_added_in_switch, packet_nested_padding, valid_padding]
)
def test_packet_copies(kernel):
    actual = run(kernel, ramp(8, 32), i8, m["A, B"], m["A, B"])
    assert actual.dtype == np.int8
    np.testing.assert_array_equal(actual, ramp(8, 32))


def test_packet_packet_restructuring():
    # 256 i8 of C are 8 flits: collect keeps one 32-byte flit as the packet and moves C / 32 to Time; the
    # output splits C at 16 instead, which is the same C.
    actual = run(packet_restructuring, ramp(8, 256), i8, m["A, C"], m["A, C / 16, C % 16"])
    assert actual.shape == (8, 256)
    np.testing.assert_array_equal(actual, ramp(8, 256))


# ---- slice --------------------------------------------------------------------------------------------


@device(chip=1)
def valid_matching_slice_sizes(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def test_slice_valid_matching_slice_sizes():
    np.testing.assert_array_equal(run(valid_matching_slice_sizes, ramp(8, 32), i8, m["A, B"], m["A, B"]), ramp(8, 32))


# ---- broadcast1 ---------------------------------------------------------------------------------------
# Broadcast1 { slice1, slice0 }: InSlice [s2, s1, s0] | InTime T → OutSlice [s2, broadcast(slice1), s0] |
# OutTime [T, s1]: the middle slice sub-dimension moves into time, a fresh (here padding) axis takes its place.


@device(chip=1)
def valid_basic(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 16, 1 # 4, C % 4, A, C / 4 % 4, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Broadcast1(slice1=4, slice0=4), m["C / 16, 1 # 4, C % 4"], m["A, C / 4 % 4"])
        .collect(m["A, C / 4 % 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 4 % 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def broadcast1_valid_degenerate(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, 1 # 4, A, C % 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Broadcast1(slice1=4, slice0=64), m["1 # 4, C % 64"], m["A, C / 64"])
        .collect(m["A, C / 64"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 64, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def broadcast1_valid_basic_per_slice(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["C, A, B"]],
    output: HbmTensor[i8, Chip, m["C / 16, 1 # 4, C % 4, A, C / 4 % 4, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])  # ours: slice c holds input[c]
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Broadcast1(slice1=4, slice0=4), m["C / 16, 1 # 4, C % 4"], m["A, C / 4 % 4"])
        .collect(m["A, C / 4 % 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 4 % 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def test_broadcast1_valid_basic():
    actual = run(valid_basic, ramp(8, 32), i8, m["A, B"], m["C / 16, 1 # 4, C % 4, A, C / 4 % 4, B"])
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32), (256, 8, 32)))  # [C, A, B]


def test_broadcast1_valid_degenerate():
    actual = run(broadcast1_valid_degenerate, ramp(8, 32), i8, m["A, B"], m["C / 4, 1 # 4, A, C % 4, B"])
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32), (256, 8, 32)))  # [C, A, B]


def test_broadcast1_valid_basic_per_slice():
    values = per_slice()
    actual = run(broadcast1_valid_basic_per_slice, values, i8, m["C, A, B"], m["C / 16, 1 # 4, C % 4, A, C / 4 % 4, B"])
    np.testing.assert_array_equal(actual, values)


# ---- broadcast01 --------------------------------------------------------------------------------------
# Broadcast01 { slice1, slice0, time0 }: [s2, s1, s0] | [t1, t0] → [s2, broadcast(slice1 × slice0)] |
# [t1, s1, t0, s0]: both inner slice sub-dimensions move into time, interleaved with the time split.


@device(chip=1)
def valid_only_slice1(
    ctx: Context, input: HbmTensor[i8, Chip, m["B"]], output: HbmTensor[i8, Chip, m["F / 4, E / 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["E / 4"], m["1, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.Broadcast01(slice1=256, slice0=1, time0=1),
            m["F / 4"],
            m["E / 4"],
        )
        .collect(m["E / 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["E / 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_with_time0(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, D % 4, A / 2, C / 2 % 2, A % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=2),
            m["C / 4, D % 4"],
            m["A / 2, C / 2 % 2, A % 2, C % 2"],
        )
        .collect(m["A / 2, C / 2 % 2, A % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, C / 2 % 2, A % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_broadcast_with_padding(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, 1 # 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=1),
            m["C / 4, 1 # 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def broadcast01_valid_with_time0_per_slice(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["C, A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, D % 4, A / 2, C / 2 % 2, A % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])  # ours: slice c holds input[c]
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=2),
            m["C / 4, D % 4"],
            m["A / 2, C / 2 % 2, A % 2, C % 2"],
        )
        .collect(m["A / 2, C / 2 % 2, A % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, C / 2 % 2, A % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def test_broadcast01_valid_only_slice1():
    # The 256 slices are `E / 4` (E = 1024): the outer quarter of E; the switch moves all of them into time
    # and broadcasts over the fresh `F / 4`. Only every fourth E and F coordinate exists in the mappings;
    # `to_numpy` gives the full axes with zeros elsewhere, so compare the covered cells and the zeros.
    actual = run(valid_only_slice1, ramp(32), i8, m["B"], m["F / 4, E / 4, B"])
    assert actual.shape == (1024, 1024, 32)  # [F, E, B]
    np.testing.assert_array_equal(actual[::4, ::4], np.broadcast_to(ramp(32), (256, 256, 32)))
    covered = np.zeros((1024, 1024), dtype=bool)
    covered[::4, ::4] = True
    assert not actual[~covered].any()


def test_broadcast01_valid_with_time0():
    actual = run(valid_with_time0, ramp(8, 32), i8, m["A, B"], m["C / 4, D % 4, A / 2, C / 2 % 2, A % 2, C % 2, B"])
    assert actual.shape == (256, 64, 8, 32)  # [C, D, A, B]: only D < 4 exists in `D % 4`
    np.testing.assert_array_equal(actual[:, :4], np.broadcast_to(ramp(8, 32), (256, 4, 8, 32)))
    assert not actual[:, 4:].any()


def test_broadcast01_valid_broadcast_with_padding():
    actual = run(valid_broadcast_with_padding, ramp(8, 32), i8, m["A, B"], m["C / 4, 1 # 4, A, C / 2 % 2, C % 2, B"])
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32), (256, 8, 32)))  # [C, A, B]


def test_broadcast01_valid_with_time0_per_slice():
    values = per_slice()
    out = m["C / 4, D % 4, A / 2, C / 2 % 2, A % 2, C % 2, B"]
    actual = run(broadcast01_valid_with_time0_per_slice, values, i8, m["C, A, B"], out)
    np.testing.assert_array_equal(actual[:, :4], np.broadcast_to(values[:, None], (256, 4, 8, 32)))  # [C, D, A, B]


# ---- transpose ----------------------------------------------------------------------------------------
# Transpose { slice1, slice0 }: [s2, s1, s0] | T → [s2, s0, s1] | T: the two inner slice sub-dimensions swap.


@device(chip=1)
def valid_single_axis(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 64, C % 2, C / 2 % 32, A, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Transpose(slice1=32, slice0=2), m["C / 64, C % 2, C / 2 % 32"], m["A"])
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_three_axes(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 128, C % 8, C / 8 % 16, A, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 128, C / 8 % 16, C % 8"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Transpose(slice1=16, slice0=8), m["C / 128, C % 8, C / 8 % 16"], m["A"])
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_split_inner(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 16, C % 4, C / 4 % 4, A, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 16, C % 16"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Transpose(slice1=4, slice0=4), m["C / 16, C % 4, C / 4 % 4"], m["A"])
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def transpose_valid_single_axis_per_slice(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["C, A, B"]],
    output: HbmTensor[i8, Chip, m["C / 64, C % 2, C / 2 % 32, A, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])  # ours: slice c holds input[c]
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Transpose(slice1=32, slice0=2), m["C / 64, C % 2, C / 2 % 32"], m["A"])
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def transpose_valid_three_axes_per_slice(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["C, A, B"]],
    output: HbmTensor[i8, Chip, m["C / 128, C % 8, C / 8 % 16, A, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 128, C / 8 % 16, C % 8"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(SwitchConfig.Transpose(slice1=16, slice0=8), m["C / 128, C % 8, C / 8 % 16"], m["A"])
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@pytest.mark.parametrize(
    ("kernel", "out"),
    [
        (valid_single_axis, m["C / 64, C % 2, C / 2 % 32, A, B"]),
        (valid_three_axes, m["C / 128, C % 8, C / 8 % 16, A, B"]),
        (valid_split_inner, m["C / 16, C % 4, C / 4 % 4, A, B"]),
    ],
    ids=["valid_single_axis", "valid_three_axes", "valid_split_inner"],
)
def test_transpose(kernel, out):
    actual = run(kernel, ramp(8, 32), i8, m["A, B"], out)
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32), (256, 8, 32)))  # [C, A, B]


@pytest.mark.parametrize(
    ("kernel", "out"),
    [
        (transpose_valid_single_axis_per_slice, m["C / 64, C % 2, C / 2 % 32, A, B"]),
        (transpose_valid_three_axes_per_slice, m["C / 128, C % 8, C / 8 % 16, A, B"]),
    ],
    ids=["single_axis", "three_axes"],
)
def test_transpose_per_slice(kernel, out):
    values = per_slice()
    np.testing.assert_array_equal(run(kernel, values, i8, m["C, A, B"], out), values)


# ---- inter_transpose ----------------------------------------------------------------------------------
# InterTranspose { slice1, slice0, time0 }: [s2, s1, s0] | [t2, t1, t0] with t1 of size slice1 →
# [s2, t1, s0] | [t2, t0, s1]: slice1 and a time sub-dimension of the same size swap places.


@device(chip=1)
def inter_transpose_valid(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 32, A / 2 % 2, C % 16, A / 4, A % 2, C / 16 % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, A / 2 % 2, C % 16"],
            m["A / 4, A % 2, C / 16 % 2"],
        )
        .collect(m["A / 4, A % 2, C / 16 % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 4, A % 2, C / 16 % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def inter_transpose_valid_degenerate(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, C % 32, C / 32 % 8, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.InterTranspose(slice1=8, slice0=32, time0=1),
            m["A, C % 32"],
            m["C / 32 % 8"],
        )
        .collect(m["C / 32 % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["C / 32 % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def inter_transpose_valid_per_slice(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["C, A, B"]],
    output: HbmTensor[i8, Chip, m["C / 32, A / 2 % 2, C % 16, A / 4, A % 2, C / 16 % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])  # ours: slice c holds input[c]
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, A / 2 % 2, C % 16"],
            m["A / 4, A % 2, C / 16 % 2"],
        )
        .collect(m["A / 4, A % 2, C / 16 % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 4, A % 2, C / 16 % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def test_inter_transpose_valid():
    out = m["C / 32, A / 2 % 2, C % 16, A / 4, A % 2, C / 16 % 2, B"]
    actual = run(inter_transpose_valid, ramp(8, 32), i8, m["A, B"], out)
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32), (256, 8, 32)))  # [C, A, B]


def test_inter_transpose_valid_degenerate():
    # Slice1 = C / 32 % 8 moves into time and A (8 steps of time) takes its slot in the slices.
    actual = run(inter_transpose_valid_degenerate, ramp(8, 32), i8, m["A, B"], m["A, C % 32, C / 32 % 8, B"])
    np.testing.assert_array_equal(actual, np.broadcast_to(ramp(8, 32)[:, None], (8, 256, 32)))  # [A, C, B]


def test_inter_transpose_valid_per_slice():
    values = per_slice()
    out = m["C / 32, A / 2 % 2, C % 16, A / 4, A % 2, C / 16 % 2, B"]
    np.testing.assert_array_equal(run(inter_transpose_valid_per_slice, values, i8, m["C, A, B"], out), values)


# ---- the refused twins --------------------------------------------------------------------------------


def test_refused_twins_name_the_problem():
    """Upstream's snapshot pins a substring of each refusal's message; ours are the messages of the
    fixtures `tests/negative/upstream_switch_assertions_*.py` (test_negative.py checks their codes and lines)."""
    messages = {
        path.stem.removeprefix("upstream_switch_assertions_"): "\n".join(d.message for d in diagnostics_of(path))
        for path in sorted(NEGATIVE.glob("upstream_switch_assertions_*.py"))
    }
    assert set(messages) == {"broadcast1", "broadcast01", "transpose", "inter_transpose", "packet"}
    assert "All dimensions must be greater than 0" in messages["broadcast1"]
    assert "Switch slice1 must be a power of 2, got 3" in messages["broadcast1"]
    assert "Switch OutSlice mismatch" in messages["broadcast1"]
    assert "Switch OutTime mismatch" in messages["broadcast1"]
    assert "must be an axis the input Slice" in messages["broadcast1"]
    assert "All dimensions must be greater than 0" in messages["broadcast01"]
    assert "Switch slice1 must be a power of 2, got 3" in messages["broadcast01"]
    assert "Switch OutSlice mismatch" in messages["broadcast01"]
    assert "Switch broadcast tile `A / 2 % 2` must be an axis the input Slice `C` / Time `A`" in messages["broadcast01"]
    assert "Switch OutTime mismatch" in messages["broadcast01"]
    assert "Switch OutTime mismatch" in messages["transpose"]
    assert "Switch OutSlice mismatch" in messages["transpose"]
    assert "All dimensions must be greater than 0" in messages["inter_transpose"]
    assert "Switch slice1 must be a power of 2, got 3" in messages["inter_transpose"]
    assert "must be divisible by the config's time split, got InTime::SIZE 8 (split 12)" in messages["inter_transpose"]
    assert "Switch OutSlice mismatch" in messages["inter_transpose"]
    assert "Switch OutTime mismatch" in messages["inter_transpose"]
    assert "Collect packet mismatch. Expected: `B`, got: `A # 32`" in messages["packet"]
    assert "Collect time mismatch. Expected: `A, B / 16`, got: `A`" in messages["packet"]


def test_refused_twins_that_fetch_a_digit_twice_reach_the_switch():
    """`inter_transpose::invalid_slice2_mismatch` and `invalid_slice0_mismatch` name one digit of B in both the
    fetch's Time and Packet. A read repeats it, as upstream's emulator does, so the switch refuses them, for
    the OutSlice their names say they get wrong."""
    found = diagnostics_of(NEGATIVE / "upstream_switch_assertions_inter_transpose.py")
    by_kernel = {d.kernel.rsplit(".", 1)[1]: d for d in found}
    for name in ("invalid_slice2_mismatch", "invalid_slice0_mismatch"):
        assert by_kernel[name].code == "switch-output-mismatch"
        assert by_kernel[name].message.startswith("Switch OutSlice mismatch: expected")
