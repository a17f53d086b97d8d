"""Upstream `furiosa-opt-examples/src/negative/switch_assertions.rs`, module `inter_transpose`: `.switch` calls
with `SwitchConfig.InterTranspose` that the compiler must refuse (a zero or non-power-of-two size, an InTime
that does not split by `slice1 × time0`, an OutSlice or OutTime that is not the config's reassembly of the
input). The legal twins are `inter_transpose_valid` and `inter_transpose_valid_degenerate` in
`tests/upstream/test_switch_assertions.py`.

Upstream's `negative/mod.rs` states that 17 of its `switch_assertions::invalid_*` fixtures (25 in all) still
compile upstream: its switch check is closed source, and the snapshot that lists which ones is not published.
Here every one is refused, and the rule that refuses it is the marker on its line. Most refusals are reported on
the `.switch(` line, so the call's arguments sit on the lines below it.

`invalid_slice2_mismatch` and `invalid_slice0_mismatch` name the same digits of `B` in the fetch's Time and in
its Packet (`[A, B / 8] | [B]` reads `B / 8 % 4` twice, `[B] | [B]` all of `B`). Upstream's emulator runs them,
and so does our fetch: a read may take one DM digit at several stream positions, the outer ones repeating
(stride 0) what the packet reads (docs/guide/tensor-unit.md). So they reach the switch, and are refused there for
the OutSlice their names say they get wrong."""

from furiosa_opt import *

A, B, C, D, E, G = axes(A=8, B=32, C=256, D=64, E=1024, G=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_time0(ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-zero-dimension
            SwitchConfig.InterTranspose(slice1=8, slice0=32, time0=0),
            m["A, C % 32"],
            m["C / 32 % 8"],
        )
        .collect(m["C / 32 % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["C / 32 % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_dims(ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-not-power-of-two
            SwitchConfig.InterTranspose(slice1=3, slice0=2, time0=1),
            Slice,
            m["A"],
        )
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time0_size(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-time-not-divisible
            SwitchConfig.InterTranspose(slice1=4, slice0=64, time0=3),
            m["A, C % 32"],
            m["C / 32 % 8"],
        )
        .collect(m["C / 32 % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["C / 32 % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice2_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 128, C % 128"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A, B / 8"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=8, slice0=16, time0=2),
            m["D % 2, A, C % 16"],
            m["B / 16, E % 2, C / 16 % 8"],
        )
        .collect(m["B / 16, E % 2, C / 16 % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["B / 16, E % 2, C / 16 % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice0_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["B"]], output: HbmTensor[i8, Chip, m["B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["D % 2, A, C % 16"], m["B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["B"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=8, slice0=16, time0=2),
            m["D % 2, A, B / 2"],
            m["B / 8, B / 4 % 2, B % 2, C / 16 % 8"],
        )
        .collect(m["B / 8, B / 4 % 2, B % 2, C / 16 % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["B / 8, B / 4 % 2, B % 2, C / 16 % 8, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time1_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C / 128, C % 128"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, D % 2, C % 16"],
            m["A / 2, G / 16, A % 2"],
        )
        .collect(m["A / 2, G / 16, A % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, G / 16, A % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time2_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, A / 2 % 2, C % 16"],
            m["A / 2, A % 2, C / 16 % 2"],
        )
        .collect(m["A / 2, A % 2, C / 16 % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 2, A % 2, C / 16 % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_time0_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, A / 2 % 2, C % 16"],
            m["A / 4, A / 2 % 2, D % 2"],
        )
        .collect(m["A / 4, A / 2 % 2, D % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 4, A / 2 % 2, D % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_slice1_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["C"], m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .switch(  # refused[visa]: switch-output-mismatch
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["C / 32, A / 2 % 2, C % 16"],
            m["A / 4, A % 2, D % 2"],
        )
        .collect(m["A / 4, A % 2, D % 2"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 4, A % 2, D % 2, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
