"""Upstream `negative/contract_outer_assertions.rs`, module `lane_size`: a TRF tensor whose Lane is not 1,
2, 4 or 8 lanes (the legal twin is `valid_size_8` in `tests/upstream/test_contract_outer_assertions.py`).
Upstream refuses both with "Lane::SIZE must be 1, 2, 4, or 8, got N"; so do we. The contraction after the
refused store depends on it and is not reported again."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_size_3(
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
        .to_trf(m["1 # 3"], m["R, B"])  # refused[visa]: trf-lane-size
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
def invalid_size_16(
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
        .to_trf(m["1 # 16"], m["R, B"])  # refused[visa]: trf-lane-size
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
