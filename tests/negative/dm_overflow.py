"""Each tensor fits a slice's 512 KiB of DM on its own, but both must be live at once in every order of the
commands (the copy reads one and writes the other): refused at stage 2, at the line that allocates the
second. Without the copy, stage 2 stores `first` before loading `second` (tests/compiler/test_order.py,
`dm_loads_first`)."""

from furiosa_opt import *

A, E = axes(A=256, E=75_000)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]


@device
def kernel(ctx: Context, x: HbmTensor[i32, Chip, m["A, E"]], y: HbmTensor[i32, Chip, m["A, E"]]) -> None:
    first = x.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    second = y.to_dm(ctx.tdma, Cluster, Slice, m["E"])  # refused[lir]: dm-overflow
    second.view().to_dm_view(ctx.tdma, first.view_mut())
    first.to_hbm(ctx.tdma, m["A, E"])
