from furiosa_opt import *

A, X = axes(A=256, X=3)


@device
def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["A, X"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["X # 4"])
    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["X"])
    stream.collect(m["1"], m["X # 16"])  # refused[visa]: packet-alignment
