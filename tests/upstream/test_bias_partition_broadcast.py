"""Port of upstream `bias_partition_broadcast.rs`: an under-filled partition made up to the slice count
by a bare-number broadcast digit.

`Feat` (128) fills only half of the 256 slices; the literal `2` in the slice mapping repeats every
feature on two slices. The kernel writes the whole DM tensor back, so the output keeps that `2` digit.
Upstream has no test for it; ours checks the output against numpy's broadcast of the input.
"""

import ml_dtypes
import numpy as np

from furiosa_opt import *

Feat, Quad = axes(Feat=128, Quad=4)  # `Quad` is a real inner axis: 8 bf16 bytes per slice

Chip = m["1"]
Slice = m["Feat, 2"]  # 128 × 2 = 256 slices; the `2` is the partition fill
Cl = m["2"]


@device(chip=1)
def bias_partition_broadcast(
    ctx: Context, bias: HbmTensor[bf16, Chip, m["Feat, Quad"]]
) -> HbmTensor[bf16, Chip, m["Feat, 2, Quad"]]:
    """Stage `[Feat, Quad]` on the 128-wide partition and write all 256 slices back."""
    bias_dm = bias.to_dm(ctx.tdma, Cl, Slice, m["Quad"])
    # upstream infers the HBM element from the return type; here it is spelled out
    return bias_dm.to_hbm(ctx.tdma, m["Feat, 2, Quad"])


def test_bias_partition_broadcast_repeats_each_feature_on_two_slices():
    rng = np.random.default_rng(7)
    bias = rng.standard_normal((Feat.size, Quad.size)).astype(ml_dtypes.bfloat16)
    with Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(bias, bf16, m["Feat, Quad"]).to_hbm(ctx.pdma)
        out = launch(bias_partition_broadcast, ctx, hbm).to_host(ctx.pdma)

    expected = np.broadcast_to(bias[:, None, :], (Feat.size, 2, Quad.size))  # wire order of `[Feat, 2, Quad]`
    assert out.values().view(np.uint16).tolist() == expected.ravel().view(np.uint16).tolist()
