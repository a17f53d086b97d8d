"""Upstream `furiosa-opt-examples/src/negative/switch_assertions.rs`, module `transpose`: `.switch` calls with
`SwitchConfig.Transpose` whose OutTime is not the InTime (a Transpose only swaps slice sub-dimensions) or whose
OutSlice puts the swapped sub-dimensions in the wrong place. The legal twins are the `transpose` kernels of
`tests/upstream/test_switch_assertions.py`.

Upstream's `negative/mod.rs` states that 17 of its `switch_assertions::invalid_*` fixtures (25 in all) still
compile upstream: its switch check is closed source, and the snapshot that lists which ones is not published.
Here every one is refused, and the rule that refuses it is the marker on its line. Each refusal is reported on
the `.switch(` line, so the call's arguments sit on the lines below it."""

from furiosa_opt import *

A, B, C, D, E, G = axes(A=8, B=32, C=256, D=64, E=1024, G=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_time_size(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 64, C % 2, C / 2 % 32, D, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Transpose(slice1=32, slice0=2),
            m["C / 64, C % 2, C / 2 % 32"],
            m["D"],
        )
        .collect(m["D"], m["B"])
        .commit_trim(m["B"])
        .commit(m["D, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time_mapping(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    output: HbmTensor[i8, Chip, m["C / 64, C % 2, C / 2 % 32, E % 8, B"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Transpose(slice1=32, slice0=2),
            m["C / 64, C % 2, C / 2 % 32"],
            m["E % 8"],
        )
        .collect(m["E % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["E % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_transpose_placement(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 128, C / 8 % 16, C % 8"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.Transpose(slice1=16, slice0=8),
            m["C % 8, C / 128, C / 8 % 16"],
            m["A"],
        )
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
