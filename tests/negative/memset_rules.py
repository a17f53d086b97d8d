"""`memset` fills a whole DM tensor on the sub context with a value of its dtype: a tile of the tensor
(upstream has no ranged fill yet), the main context, and a value outside the dtype are refused."""

from furiosa_opt import *

A, B = axes(A=256, B=128)
Chip, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def tile_fill(ctx: Context, x: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    dm.view_mut().tile(0, m["B"], 64, m["B = 64 #{!} 128"]).memset(1, ctx.sub)  # refused[visa]: memset-view


@device(chip=1)
def main_context(ctx: Context, x: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    dm.view_mut().memset(1, ctx.main)  # refused[visa]: wrong-context


@device(chip=1)
def out_of_range(ctx: Context, x: HbmTensor[i8, Chip, m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    dm.view_mut().memset(300, ctx.sub)  # refused[visa]: memset-value
