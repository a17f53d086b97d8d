"""Upstream `negative/contract_outer_assertions.rs`, module `time_broadcast`: `contract_outer` OutTimes that
are not `[stream Time, tiling axes]` with the tiling (broadcast) axes innermost (legal twins:
`valid_single_tiling` and `valid_transposed_tiling` in `tests/upstream/test_contract_outer_assertions.py`).

Upstream's messages: "`contract_outer`: Time does not divide OutTime" (the first kernel: Time `A` has 8
cells, OutTime `F` 6) and "`contract_outer`: OutTime must be the outer Time with broadcast (tiling) axes
innermost" (the other two). Ours carry the same meaning under one code, `contract-outer-time`, and also
show the mappings compared."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
Lane = m["R"]


@device(chip=1)
def invalid_time_mismatch(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, E"]],
    output: HbmTensor[i32, Chip, m["F, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, E"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, E"])
    trf = ctx.sub.begin(trf_dm.view()).fetch(m["R"], m["E"]).fetch_cast(i8).collect(m["R"], m["E"]).to_trf(Lane, m["E"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["E"])
        .fetch_cast(i8)
        .collect(m["A"], m["E"])
        .contract_outer(trf, m["F"], m["E"])  # refused[visa]: contract-outer-time
        .contract_packet(m["1"])
        .contract_time(m["F"])
        .contract_lane(LaneMode.Interleaved, m["F"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["F, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_swapped_time_axes(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, V, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, T, V, E"]],
    output: HbmTensor[i32, Chip, m["V, A, T, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, V, E"])
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
        .fetch(m["A, V"], m["E"])
        .fetch_cast(i8)
        .collect(m["A, V"], m["E"])
        .contract_outer(trf, m["V, A, T"], m["E"])  # refused[visa]: contract-outer-time
        .contract_packet(m["1"])
        .contract_time(m["V, A, T"])
        .contract_lane(LaneMode.Interleaved, m["V, A, T"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["V, A, T, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_tiling_not_innermost(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, E"]],
    input_trf: HbmTensor[i8, Chip, m["R, T, E"]],
    output: HbmTensor[i32, Chip, m["T, A, R # 8"]],
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
        .contract_outer(trf, m["T, A"], m["E"])  # refused[visa]: contract-outer-time
        .contract_packet(m["1"])
        .contract_time(m["T, A"])
        .contract_lane(LaneMode.Interleaved, m["T, A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["T, A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
