from furiosa_opt import *

A = axes(A=256)


@device
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["Q"])  # refused[visa]: mapping-syntax
