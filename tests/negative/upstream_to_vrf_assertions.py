"""Upstream `to_vrf_assertions`, the `compile_fail` example of its module docs: the legal store of
`tests/upstream/test_to_vrf_assertions.py` with the vector doubled to 4096 i32 values, 16 KiB per slice,
twice the vector register file. Upstream: "VRF data must fit the vector register file (8192 bytes per
slice)"; ours: "VRF data must fit the VRF (8192 bytes per slice): 4096 × i32 = 16384 bytes"."""

from furiosa_opt import *

A = axes(A=4096)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def to_vrf_over_capacity(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> None:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A"])
    stream = ctx.sub.begin(dm.view()).fetch(m["1"], m["A"]).fetch_cast(i32).collect(m["A / 8"], m["A % 8"])
    stream.to_vrf(m["A"])  # refused[visa]: vrf-capacity
