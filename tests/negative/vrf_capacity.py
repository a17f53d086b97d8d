from furiosa_opt import *

V = axes(V=4096)


@device
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["V"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["V"])
    stream = ctx.sub.begin(dm.view()).fetch(m["V / 8"], m["V % 8"]).collect(m["V / 8"], m["V % 8"])
    stream.to_vrf(m["V"])  # refused[visa]: vrf-capacity
