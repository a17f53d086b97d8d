"""Port of upstream `furiosa-opt-examples/src/vrf_add_segmented.rs` (upstream has no test for it).

`lhs + rhs` (rhs broadcast over A) on a 1-PE device: rhs goes to the vector register file through the
sub context, and the main context adds it to lhs in two tiles of `A % 2`, each committed into its own
tile of one output DM tensor.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=128, B=512)

Chip = m["1"]
Cluster = m["1"]


def vrf_add_kernel_segmented(ctx: Context, lhs: HbmTensorView, rhs: HbmTensorView, out: DmTensor) -> DmTensor:
    """The body upstream factors out of the kernel: adds into `out`, a fresh
    `DmTensor[i32, Chip, Cluster, m["A / 2 # 64"], m["A % 2, B"]]`, and returns it."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2 # 64"], m["A % 2, B"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2 # 64"], m["B"])  # rhs is broadcast to every slice

    rhs_vrf = (
        ctx.sub.begin(rhs_dm.view())
        .fetch(m["1"], m["B"])
        .fetch_cast(i32)
        .collect(m["B / 8"], m["B % 8"])
        .to_vrf(m["B"])
    )

    for i in range(2):
        lhs_dm_view = lhs_dm.view().tile(i, m["A % 2"], 1, m["A % 2 = 1 # 2, B"])
        out_view = out.view_mut().tile(i, m["A % 2"], 1, m["A % 2 = 1 #{!} 2, B"])
        (
            ctx.main.begin(lhs_dm_view)
            .fetch(m["A % 2 = 1"], m["B"])
            .fetch_cast(i32)
            .collect(m["A % 2 = 1, B / 8"], m["B % 8"])
            .vector_init()
            .vector_intra_slice_tag(TagMode.Zero)
            .vector_fxp(FxpBinaryOp.AddFxp, rhs_vrf)
            .vector_final()
            .commit_trim(m["B % 8"])
            .commit_view(out_view)
        )
    return out


@device(chip=1, pe=1)
def vrf_add_segmented(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A, B"]], rhs: HbmTensor[i32, Chip, m["B"]]
) -> HbmTensor[i32, Chip, m["A, B"]]:
    result = DmTensor.new(i32, Chip, Cluster, m["A / 2 # 64"], m["A % 2, B"])
    result = vrf_add_kernel_segmented(ctx, lhs.view(), rhs.view(), result)
    return result.to_hbm(ctx.tdma, m["A, B"])


def test_vrf_add_segmented():
    rng = np.random.default_rng(7)
    with Context.acquire() as ctx:
        lhs = HostTensor.rand(i32, m["A, B"], rng)
        rhs = HostTensor.rand(i32, m["B"], rng)
        out = launch(vrf_add_segmented, ctx, lhs.to_hbm(ctx.pdma), rhs.to_hbm(ctx.pdma))
        got = out.to_host(ctx.pdma, m["A, B"]).to_numpy()
    # AddFxp wraps: add in i64, keep the low 32 bits.
    expected = (lhs.to_numpy().astype(np.int64) + rhs.to_numpy()[None, :]).astype(np.int32)
    np.testing.assert_array_equal(got, expected)
