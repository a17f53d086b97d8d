"""Two destination axes that their DMA loops over-cover (A = 15 and E = 7, padded to 16 and 8 in DM): one
command per combination of their boundaries is more than stage 2 makes; it refuses the move at its line."""

from furiosa_opt import *

A, E, C = axes(A=15, E=7, C=256)


@device
def kernel(ctx: Context, x: HbmTensor[i8, m["1"], m["A # 16, E # 8, C"]]) -> HbmTensor[i8, m["1"], m["A, E, C"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A # 16 / 2, E # 8 / 2 # 8"], m["A # 16 % 2, E # 8 % 2, C"])
    return dm.to_hbm(ctx.tdma, m["A, E, C"])  # refused[lir]: dma-segments
