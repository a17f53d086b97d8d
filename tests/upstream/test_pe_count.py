"""Port of upstream `furiosa-opt-examples/src/pe_count.rs` and `tests/pe_count_tests.rs`.

One kernel per device size (`@device(chip=1, pe=...)`): each adds 1 on the Vector Engine over a DM
layout that fills exactly that device's grid (1 PE: 1 cluster × 64 slices, 2 PE: 128 slices, 4 PE:
256 slices, 8 PE: 2 clusters × 256 slices), 4 i32 per slice, so a topology wired wrongly shows up as a
layout mismatch. The multi-chip kernels (`chip=2`, `chip=4`, 8 PEs each) add a chip level above the
clusters, so their HBM inputs are spread over the chips too. Every kernel runs on both backends.
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

P1, P2, P4, P8, P2C, P4C = axes(P1=256, P2=512, P4=1024, P8=2048, P2C=4096, P4C=8192)

Chip = m["1"]


@device(chip=1, pe=1)
def one_pe_add(ctx: Context, input: HbmTensor[i32, Chip, m["P1"]]) -> HbmTensor[i32, Chip, m["P1"]]:
    input_dm = input.to_dm(ctx.tdma, m["1"], m["P1 / 4"], m["P1 % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P1 % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P1 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P1 % 4"])
        .commit(m["P1 % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P1"])


@device(chip=1, pe=2)
def two_pe_add(ctx: Context, input: HbmTensor[i32, Chip, m["P2"]]) -> HbmTensor[i32, Chip, m["P2"]]:
    input_dm = input.to_dm(ctx.tdma, m["1"], m["P2 / 4"], m["P2 % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P2 % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P2 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P2 % 4"])
        .commit(m["P2 % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P2"])


@device(chip=1, pe=4)
def four_pe_add(ctx: Context, input: HbmTensor[i32, Chip, m["P4"]]) -> HbmTensor[i32, Chip, m["P4"]]:
    input_dm = input.to_dm(ctx.tdma, m["1"], m["P4 / 4"], m["P4 % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P4 % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P4 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P4 % 4"])
        .commit(m["P4 % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P4"])


@device(chip=1, pe=8)
def eight_pe_add(ctx: Context, input: HbmTensor[i32, Chip, m["P8"]]) -> HbmTensor[i32, Chip, m["P8"]]:
    # Unlike the single-cluster kernels above, the DM layout has a 2-wide cluster level (`P8 / 1024`).
    input_dm = input.to_dm(ctx.tdma, m["P8 / 1024"], m["P8 / 4 % 256"], m["P8 % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P8 % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P8 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P8 % 4"])
        .commit(m["P8 % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P8"])


@device(chip=2, pe=8)
def two_chip_add(
    ctx: Context, input: HbmTensor[i32, m["P2C / 2048"], m["P2C % 2048"]]
) -> HbmTensor[i32, m["P2C / 2048"], m["P2C % 2048"]]:
    input_dm = input.to_dm(ctx.tdma, m["P2C / 1024 % 2"], m["P2C / 4 % 256"], m["P2C % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P2C % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P2C % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P2C % 4"])
        .commit(m["P2C % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P2C % 2048"])


@device(chip=4, pe=8)
def four_chip_add(
    ctx: Context, input: HbmTensor[i32, m["P4C / 2048"], m["P4C % 2048"]]
) -> HbmTensor[i32, m["P4C / 2048"], m["P4C % 2048"]]:
    input_dm = input.to_dm(ctx.tdma, m["P4C / 1024 % 2"], m["P4C / 4 % 256"], m["P4C % 4"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["P4C % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["P4C % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P4C % 4"])
        .commit(m["P4C % 4"])
    )
    return result.to_hbm(ctx.tdma, m["P4C % 2048"])


CHIP = {P2C: m["P2C / 2048"], P4C: m["P4C / 2048"]}  # the multi-chip inputs' chip level


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(
    ("kernel", "axis"),
    [
        (one_pe_add, P1),
        (two_pe_add, P2),
        (four_pe_add, P4),
        (eight_pe_add, P8),
        (two_chip_add, P2C),
        (four_chip_add, P4C),
    ],
    ids=["one_pe_add", "two_pe_add", "four_pe_add", "eight_pe_add", "two_chip_add", "four_chip_add"],
)
def test_pe_add(kernel: DeviceFunction, axis: Axis, on: str):
    values = np.arange(axis.size, dtype=np.int32)
    with backend(on) as launch_, Context.acquire() as ctx:
        host = HostTensor.from_numpy(values, i32, m[axis])
        chip = CHIP.get(axis)
        input = host.to_hbm(ctx.pdma, chip, m[f"{axis.name} % 2048"]) if chip else host.to_hbm(ctx.pdma)
        out = launch_(kernel, ctx, input)
        got = out.to_host(ctx.pdma, m[axis]).to_numpy()
    np.testing.assert_array_equal(got, values + 1)
