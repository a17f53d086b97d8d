"""out = lhs · rhs (wrapping i32): the right operand goes through the vector register file."""

from furiosa_opt import *

A = axes(A=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["A / 8 # 256"]


@device(chip=1)
def elementwise_mul_kernel(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, Slice, m["A % 8"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, Slice, m["A % 8"])
    rhs_vrf = (
        ctx.sub.begin(rhs_dm.view())
        .fetch(m["1"], m["A % 8"])
        .collect(m["A % 8 / 8"], m["A % 8 % 8"])
        .to_vrf(m["A % 8"])
    )
    result = (
        ctx.main.begin(lhs_dm.view())
        .fetch(m["1"], m["A % 8"])
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.MulInt, rhs_vrf)
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])
