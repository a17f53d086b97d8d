from furiosa_opt import *

A, B = axes(A=256, B=32)


@device
def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["A, B"]]) -> HbmTensor[bf16, m["1"], m["A, B"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    out = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["B"])
        .collect(m["1"], m["B % 16"])  # refused[visa]: collect-time-mismatch
        .commit_trim(m["B % 16"])
        .commit(m["B"])
    )
    return out.to_hbm(ctx.tdma, m["A, B"])
