"""out = input + 1 (wrapping i32): the Vector Engine with a constant operand."""

from furiosa_opt import *

A = axes(A=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["A / 8 # 256"]  # 256 slices, 8 elements each


@device(chip=1)
def constant_add_kernel(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A % 8"])  # HBM → DM
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["A % 8"])  # one 8-element packet per slice
        .collect(m["1"], m["A % 8"])  # already one 32-byte flit
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])  # DM → HBM
