"""Small kernels whose EDFs seed the fuzzers: one of each command kind the base template lacks (a memset,
a gather, a ParallelCopy) and a kept device loop (a carried value, a guard, runtime offsets), beside the
base-template kernels. Copies of kernels the upstream ports test;
tests/test_differential.py also runs them on both backends (`differential_inputs` keeps the gather's
indices inside its table)."""

import numpy as np

from furiosa_opt import *

A, B, K, D, G, E = axes(A=256, B=64, K=512, D=128, G=512, E=8)
Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def memset_zero(ctx: Context, input: HbmTensor[i32, Chip, m["A, B"]]) -> HbmTensor[i32, Chip, m["A / 2, A % 2, B"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    dm.view_mut().memset(0, ctx.sub)
    return dm.to_dm(ctx.tdma, m["1 # 2, A / 2"], m["A % 2, B"]).to_hbm(ctx.tdma, m["A / 2, A % 2, B"])


@device(chip=1)
def gather_rows(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["G"]]
) -> HbmTensor[bf16, Chip, m["G, D"]]:
    values = table.dma_gather_scaled(index, Cluster, m["G / 2"], m["G % 2, D"])
    return values.to_hbm(ctx.tdma, m["G, D"])


@device(chip=1)
def pcopy_relayout(ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]]) -> HbmTensor[i32, Chip, m["A, B"]]:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    moved = dm.to_dm_pcopy(ctx.sub, m["A"], m["B % 8, B / 8"])
    return moved.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def kept_loop(ctx: Context, x: HbmTensor[i32, Chip, m["A, E"]]) -> HbmTensor[i32, Chip, m["A, E"]]:
    """Three passes adding 1; pass 1 zeroes its sum: every cell ends at 1."""
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["E"])
    for i in device_range(3):
        dm = (
            ctx.main.begin(dm.view()).fetch(m["1"], m["E"]).fetch_cast(i32).collect(m["1"], m["E"])
            .vector_init().vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, 1)
            .vector_final().commit_trim(m["E"]).commit(m["E"])
        )  # fmt: skip
        for _ in when(i == 1):
            dm.view_mut().memset(0, ctx.sub)
    return dm.to_hbm(ctx.tdma, m["A, E"])


def differential_inputs(kernel, ctx: Context, rng: np.random.Generator):
    """For tests/test_differential.py: the gather's index scaled to rows of its table (random values fault)."""
    if kernel is not gather_rows:
        return None
    table = HostTensor.rand(bf16, m["K, D"], rng).to_hbm(ctx.pdma)
    rows = rng.integers(0, K.size, G.size, dtype=np.int32) * (D.size * 2)  # a scaled index counts bytes
    return table, HostTensor.from_numpy(rows, i32, m["G"]).to_hbm(ctx.pdma)
