"""Upstream `furiosa-opt-examples/src/negative/vector_engine.rs`: `ve_elementwise_fxp_chain`, three fxp ops on
one Vector Engine chain where `AddFxp` takes the FxpAdd ALU, `MulInt` FxpMul, and `SubFxp` asks for FxpAdd
again. Upstream's lowering reports the ALU as unavailable for `SubFxp` and its CPU backend panics; we refuse
the `SubFxp` line with `vector-alu`. `tests/upstream/test_vector_engine_normal.py` launches it as upstream's
`test_ve_elementwise_fxp_chain` does."""

from furiosa_opt import *

A = axes(A=512)  # upstream re-exports `vector_engine::A`

Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def ve_elementwise_fxp_chain(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 10)
        .vector_fxp(FxpBinaryOp.MulInt, 2)
        .vector_fxp(FxpBinaryOp.SubFxp, 5)  # refused[visa]: vector-alu
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])
