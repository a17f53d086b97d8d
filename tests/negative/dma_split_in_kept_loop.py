"""A move that needs several DMA commands (P = 11 over loops of 6 · 2 rows, stored to an unpadded HBM
tensor) inside a device loop stage 2 keeps: the body is lowered once, one command per op, so the split is
refused at the move's line."""

from furiosa_opt import *

P, Q, R = axes(P=11, Q=16, R=64)


@device
def kernel(ctx: Context, x: HbmTensor[i8, m["1"], m["P # 16, Q, R"]]) -> HbmTensor[i8, m["1"], m["Q, P, R"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["P # 16 / 2, Q"], m["P # 16 % 2, R"])
    out = dm.to_hbm(ctx.tdma, m["Q, P, R"])
    for _ in device_range(3):
        out = dm.to_hbm(ctx.tdma, m["Q, P, R"])  # refused[lir]: dma-segments
    return out
