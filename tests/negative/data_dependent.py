"""Values are not known while a kernel compiles: immediates and control flow must not read them."""

from furiosa_opt import *

A, B = axes(A=256, B=8)


@device
def immediate(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    first = int(dm.values()[0])  # refused[visa]: data-dependent
    vector = ctx.main.begin(dm.view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).vector_init()
    vector.vector_intra_slice_tag().vector_fxp(FxpBinaryOp.AddFxp, first)


@device
def runtime_assert(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    assert (x.values() > 0).all(), "inputs must be positive"  # refused[visa]: data-dependent
