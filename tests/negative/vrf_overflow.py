"""Two VRF tensors of 4128 bytes each, read by one Vector Engine chain: in every order of the commands both
are live at once, and 8256 bytes do not fit the VRF's 8192 per slice. Refused at stage 2, at the load of the
second (the one that overflows in the written order)."""

from furiosa_opt import *

C = axes(C=1032)
Chip, Cluster, Slice = m["1"], m["1"], m["1 # 64"]


@device(chip=1, pe=1)
def kernel(
    ctx: Context, a: HbmTensor[i32, Chip, m["C"]], b: HbmTensor[i32, Chip, m["C"]]
) -> HbmTensor[i32, Chip, m["C"]]:
    a_dm = a.to_dm(ctx.tdma, Cluster, Slice, m["C"])
    b_dm = b.to_dm(ctx.tdma, Cluster, Slice, m["C"])
    a_vrf = ctx.sub.begin(a_dm.view()).fetch(m["1"], m["C"]).collect(m["C / 8"], m["C % 8"]).to_vrf(m["C"])
    b_vrf = (
        ctx.sub.begin(b_dm.view())
        .fetch(m["1"], m["C"])
        .collect(m["C / 8"], m["C % 8"])
        .to_vrf(m["C"])  # refused[lir]: vrf-overflow
    )
    out = (
        ctx.main.begin(a_dm.view())
        .fetch(m["1"], m["C"])
        .collect(m["C / 8"], m["C % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, a_vrf)
        .vector_fxp(FxpBinaryOp.MulInt, b_vrf)
        .vector_final()
        .commit_trim(m["C % 8"])
        .commit(m["C"])
    )
    return out.to_hbm(ctx.tdma, m["C"])
