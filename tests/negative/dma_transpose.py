"""An HBM → DM copy that transposes the innermost axis: its DMA burst is one byte."""

from furiosa_opt import *

A, B = axes(A=8, B=256)


@device
def kernel(ctx: Context, x: HbmTensor[i8, m["1"], m["A, B"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["B / 4"], m["B % 4, A"])  # refused[visa]: dma-tail-alignment
