"""Three TRF stores, each refused for its own reason: all three are reported."""

from furiosa_opt import *

A, E, F = axes(A=256, E=64, F=96)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]


@device
def lane_size(ctx: Context, x: HbmTensor[bf16, Chip, m["A, E"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    stream = ctx.sub.begin(dm.view()).fetch(m["1"], m["E"]).collect(m["E / 16"], m["E % 16"])
    stream.to_trf(m["1 # 3"], m["E"])  # refused[visa]: trf-lane-size


@device
def lane_mismatch(ctx: Context, x: HbmTensor[bf16, Chip, m["A, E"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    stream = ctx.sub.begin(dm.view()).fetch(m["1"], m["E"]).collect(m["E / 16"], m["E % 16"])
    stream.to_trf(m["E / 16 % 2"], m["E / 32, E % 16"])  # refused[visa]: trf-lane-mismatch


@device
def lane_time(ctx: Context, x: HbmTensor[bf16, Chip, m["A, F"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["F"])
    stream = ctx.sub.begin(dm.view()).fetch(m["1"], m["F"]).collect(m["F / 16"], m["F % 16"])
    stream.to_trf(m["4"], m["F"])  # refused[visa]: trf-lane-time
