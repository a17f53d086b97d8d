"""Port of upstream `view.rs` (modules `simpl`, `nested`, `whole_view_mut`) and `view_tests.rs`.

Upstream gives each module its own `axes!`; one Python module holds all three here, so `nested` names
its axes `NA, NB` and `simpl` keeps `A, B` (a kernel resolves `m["…"]` names in its module's globals).
Upstream's `padding` module declares two axes and nothing else, so it has nothing to port.
"""

import ml_dtypes
import numpy as np

from furiosa_opt import *

# ---- simpl -------------------------------------------------------------------------------------------

A, B = axes(A=512, B=8)


@device(chip=1)
def view_simpl(ctx: Context, input_hbm: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["A, B"]]:
    """Rotate every row of `B` right by two through three tile-to-tile DM copies."""
    # A / 256 on the clusters, A % 256 on the slices, the 8 B values in each slice
    input = input_hbm.to_dm(ctx.tdma, m["A / 256"], m["A % 256"], m["B"])
    output = DmTensor.new(i32, m["1"], m["A / 256"], m["A % 256"], m["B"])

    # input B = 0..4 → output B = 2..6
    input0123 = input.view().tile(0, m["B"], 4, m["B = 4 # 8"])
    output2345 = output.view_mut().tile(2, m["B"], 4, m["B = 4 #{!} 8"])
    input0123.to_dm_view(ctx.tdma, output2345)

    # input B = 4..6 → output B = 6..8
    input45 = input.view().tile(4, m["B"], 2, m["B = 2 # 8"])
    output67 = output.view_mut().tile(6, m["B"], 2, m["B = 2 #{!} 8"])
    input45.to_dm_view(ctx.tdma, output67)

    # input B = 6..8 → output B = 0..2
    input67 = input.view().tile(6, m["B"], 2, m["B = 2 # 8"])
    output01 = output.view_mut().tile(0, m["B"], 2, m["B = 2 #{!} 8"])
    input67.to_dm_view(ctx.tdma, output01)

    # upstream infers the HBM element from the return type; here it is spelled out
    return output.to_hbm(ctx.tdma, m["A, B"])


def test_view_simpl():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(np.arange(4096, dtype=np.int32).reshape(512, 8), i32, m["A, B"])
        output = launch(view_simpl, ctx, input.to_hbm(ctx.pdma, m["1"], m["A, B"]))
        actual = output.to_host(ctx.pdma, m["A, B"]).to_numpy()

    # upstream's literal: [[6, 7, 0, 1, 2, 3, 4, 5], [14, 15, 8, 9, 10, 11, 12, 13], ...]
    expected = [[8 * x + i for i in (6, 7, 0, 1, 2, 3, 4, 5)] for x in range(512)]
    assert actual.tolist() == expected


# ---- nested ------------------------------------------------------------------------------------------

NA, NB = axes(NA=512, NB=528)


@device(chip=1)
def view_nested(ctx: Context, input_hbm: HbmTensor[i32, m["1"], m["NA, NB"]]) -> HbmTensor[i32, m["1"], m["NA, NB"]]:
    """Copy the whole tensor, then copy again through a tile of a tile (NB 0..132 of NB 0..264)."""
    input = input_hbm.to_dm(ctx.tdma, m["NA / 256"], m["NA % 256"], m["NB"])
    output = DmTensor.new(i32, m["1"], m["NA / 256"], m["NA % 256"], m["NB"])

    # the full copy first, so that no position of the output is left unwritten
    input.view().to_dm_view(ctx.tdma, output.view_mut())

    in_nested = (
        input.view().tile(0, m["NB"], 264, m["NB = 264 # 528"]).tile(0, m["NB = 264 # 528"], 132, m["NB = 132 # 528"])
    )
    out_nested = (
        output.view_mut()
        .tile(0, m["NB"], 264, m["NB = 264 #{!} 528"])
        .tile(0, m["NB = 264 #{!} 528"], 132, m["NB = 132 #{!} 528"])
    )
    in_nested.to_dm_view(ctx.tdma, out_nested)

    return output.to_hbm(ctx.tdma, m["NA, NB"])


def test_view_nested_copies_the_input():
    rng = np.random.default_rng(3)
    input = HostTensor.rand(i32, m["NA, NB"], rng)
    with Context.acquire() as ctx:
        output = launch(view_nested, ctx, input.to_hbm(ctx.pdma))
        actual = output.to_host(ctx.pdma, m["NA, NB"]).to_numpy()

    source = input.to_numpy()
    assert len(np.unique(source)) > 1
    assert np.array_equal(actual, source)


# ---- whole_view_mut ----------------------------------------------------------------------------------

S = axes(S=128)


@device(chip=1)
def write_view_mut(
    ctx: Context, input: HbmTensor[bf16, m["1"], m["S"]], output: HbmTensorViewMut[bf16, m["1"], m["S"]]
) -> None:
    """Write a DM tensor into the whole of a caller's HBM tensor (an out-parameter)."""
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["S"])
    dm.view().to_hbm_view(ctx.tdma, output)


def test_write_view_mut_fills_the_callers_tensor():
    rng = np.random.default_rng(5)
    values = rng.standard_normal(S.size).astype(ml_dtypes.bfloat16)
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(values, bf16, m["S"]).to_hbm(ctx.pdma)
        # -1.0 marks a cell the kernel never wrote; no input cell is -1.0
        blank = np.full(S.size, -1.0, dtype=ml_dtypes.bfloat16)
        out = HostTensor.from_numpy(blank, bf16, m["S"]).to_hbm(ctx.pdma)
        assert launch(write_view_mut, ctx, input, out.view_mut()) is None
        actual = out.to_host(ctx.pdma).to_numpy()

    assert actual.view(np.uint16).tolist() == values.view(np.uint16).tolist()
