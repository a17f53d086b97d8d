from furiosa_opt import *

A, T = axes(A=256, T=65536)


@device
def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["T"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["T"])
    stream = ctx.sub.begin(dm.view()).fetch(m["T / 16"], m["T % 16"]).collect(m["T / 16"], m["T % 16"])
    stream.to_trf(m["T / 8192"], m["T % 8192"])  # refused[visa]: trf-capacity
