"""Upstream `furiosa-opt-examples/src/negative/switch_assertions.rs`, module `broadcast1`: `.switch` calls with
`SwitchConfig.Broadcast1` that the compiler must refuse (a zero or non-power-of-two size, an OutSlice or OutTime
that is not the config's reassembly of the input, a broadcast slot holding an input axis). The legal twins are
`valid_basic` and `broadcast1_valid_degenerate` in `tests/upstream/test_switch_assertions.py`.

Upstream's `negative/mod.rs` states that 17 of its `switch_assertions::invalid_*` fixtures (25 in all) still
compile upstream: its switch check is closed source, and the snapshot that lists which ones is not published.
Here every one is refused, and the rule that refuses it is the marker on its line. Each refusal is reported on
the `.switch(` line, so the call's arguments sit on the lines below it."""

from furiosa_opt import *

A, B, C, D, E, G = axes(A=8, B=32, C=256, D=64, E=1024, G=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_slice1_zero(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C % 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-zero-dimension
            SwitchConfig.Broadcast1(slice1=0, slice0=64),
            m["C / 4, D % 4"],
            m["A, C % 4"],
        )
        .collect(m["A, C % 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C % 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice_size(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C % 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-not-power-of-two
            SwitchConfig.Broadcast1(slice1=3, slice0=64),
            m["C / 4, D % 4"],
            m["A, C % 4"],
        )
        .collect(m["A, C % 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C % 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice2_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["D % 4, C % 64, A, C / 64, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast1(slice1=4, slice0=16),
            m["D % 4, C % 64"],
            m["A, C / 64"],
        )
        .collect(m["A, C / 64"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 64, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_broadcast_axes_not_new(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, C % 4, A, C % 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-broadcast-not-new
            SwitchConfig.Broadcast1(slice1=4, slice0=64),
            m["C / 64, C % 64"],
            m["A, C / 64"],
        )
        .collect(m["A, C / 64"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 64, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice0_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C % 2, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast1(slice1=4, slice0=64),
            m["1 # 4, D % 64"],
            m["A, C / 64"],
        )
        .collect(m["A, C / 64"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 64, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_out_time(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, E % 4, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast1(slice1=4, slice0=64),
            m["1 # 4, C % 64"],
            m["A, E % 4"],
        )
        .collect(m["A, E % 4"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, E % 4, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
