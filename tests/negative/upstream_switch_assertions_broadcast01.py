"""Upstream `furiosa-opt-examples/src/negative/switch_assertions.rs`, module `broadcast01`: `.switch` calls with
`SwitchConfig.Broadcast01` that the compiler must refuse (a zero or non-power-of-two size, an OutSlice or
OutTime that is not the config's reassembly of the input, a broadcast slot holding an axis of the input's Slice
or Time). The legal twins are the `broadcast01` kernels of `tests/upstream/test_switch_assertions.py`.

Upstream's `negative/mod.rs` states that 17 of its `switch_assertions::invalid_*` fixtures (25 in all) still
compile upstream: its switch check is closed source, and the snapshot that lists which ones is not published.
Here every one is refused, and the rule that refuses it is the marker on its line. Each refusal is reported on
the `.switch(` line, so the call's arguments sit on the lines below it. `invalid_time_size` is refused because
its OutTime keeps `A` whole where `time0 = 2` splits it (`A / 2 … A % 2`)."""

from furiosa_opt import *

A, B, C, D, E, G = axes(A=8, B=32, C=256, D=64, E=1024, G=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_slice0_zero(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-zero-dimension
            SwitchConfig.Broadcast01(slice1=2, slice0=0, time0=1),
            m["C / 4, D % 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice_size(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-not-power-of-two
            SwitchConfig.Broadcast01(slice1=3, slice0=2, time0=1),
            m["C / 4, D % 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time_size(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, D % 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=2),
            m["C / 4, D % 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice2_mismatch(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 8, D % 8, A / 2, C / 2 % 2, A % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=2),
            m["C / 8, D % 8"],
            m["A / 2, C / 2 % 2, A % 2, C % 2"],
        )
        .collect(m["A / 2, C / 2 % 2, A % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, C / 2 % 2, A % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice_axes_in_broadcast(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, C % 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-broadcast-not-new
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=1),
            m["C / 4, C % 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time_axes_in_broadcast(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, A % 4, A, C / 2 % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-broadcast-not-new
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=1),
            m["C / 4, A % 4"],
            m["A, C / 2 % 2, C % 2"],
        )
        .collect(m["A, C / 2 % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, C / 2 % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_out_time(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 4, E % 4, A / 2, C / 2, A % 2, C % 2, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=2),
            m["C / 4, E % 4"],
            m["A / 2, C / 2, A % 2, C % 2"],
        )
        .collect(m["A / 2, C / 2, A % 2, C % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, C / 2, A % 2, C % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
