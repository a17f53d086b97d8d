"""Two independent mistakes in one kernel are both reported; what depends on them is not."""

from furiosa_opt import *

A, B = axes(A=256, B=8)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]


@device
def kernel(ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]], y: HbmTensor[i32, Chip, m["A, B"]]) -> None:
    left = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    right = y.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    bad = ctx.main.begin(left.view()).fetch(m["1"], m["B"])
    bad = bad.collect(m["B"], m["B"])  # refused[visa]: collect-time-mismatch
    bad.commit_trim(m["B"]).commit(m["B"])  # depends on the refused collect: not reported again
    vrf = ctx.sub.begin(right.view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).to_vrf(m["B"])
    vrf.to_dm(ctx.tdma)  # refused[visa]: python-error
