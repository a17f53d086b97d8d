"""AddFxp and SubFxp both need the FxpAdd ALU, which serves one op per pass."""

from furiosa_opt import *

A, B = axes(A=256, B=8)


@device
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    vector = ctx.main.begin(dm.view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).vector_init()
    tagged = vector.vector_intra_slice_tag().vector_fxp(FxpBinaryOp.AddFxp, 10).vector_fxp(FxpBinaryOp.MulInt, 2)
    tagged.vector_fxp(FxpBinaryOp.SubFxp, 5)  # refused[visa]: vector-alu
