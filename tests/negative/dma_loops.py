"""A DMA that reverses eight axes needs eight nested loops; a descriptor holds six."""

from furiosa_opt import *

A, N, P, Q, R, S, T, U, V, W = axes(A=256, N=8, P=2, Q=2, R=2, S=2, T=2, U=2, V=2, W=2)


@device
def kernel(ctx: Context, x: HbmTensor[i8, m["1"], m["A, P, Q, R, S, T, U, V, W, N"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["W, V, U, T, S, R, Q, P, N"])  # refused[lir]: dma-loops
