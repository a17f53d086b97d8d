"""Upstream `negative/contract_outer_assertions.rs`, module `trf_lane_time`: a TRF Lane of 4 over a Time of
2 cells. Upstream: "Lane::SIZE (4) does not divide Time::SIZE (2)"; ours is the same, prefixed `to_trf:`."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_lane_exceeds_time(
    ctx: Context, input: HbmTensor[i8, Chip, m["A / 4, E"]], _output: HbmTensor[i8, Chip, m["A / 4, E"]]
) -> None:
    trf_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A / 4, E"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["A / 4"], m["E"])
        .fetch_cast(i8)
        .collect(m["A / 4"], m["E"])
        .to_trf(m["R / 2"], m["A / 4, E"])  # refused[visa]: trf-lane-time
    )
