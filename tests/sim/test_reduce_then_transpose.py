"""A Vector Engine reduce whose result leaves through the Transpose Engine (the transformer's rmsnorm and
online-softmax row max / sum do this): the elements' tags stay in the Vector Engine at `vector_final`, so the
transpose relays values only. The simulator once relaid stale tags after the transpose and failed."""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

G, D = axes(G=2, D=128)
Chip = m["1"]


@device(chip=1)
def row_sums(ctx: Context, x: HbmTensor[f32, Chip, m["G, D"]]) -> HbmTensor[f32, Chip, m["G"]]:
    xd = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["G, D"])
    summed = (
        ctx.main.begin(xd.view())
        .fetch(m["G, D / 8"], m["D % 8"])
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["G, D / 4"], m["D % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, D, m["G"], m["1 # 4"])
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .transpose(m["1"], m["G # 8"])
        .commit_trim(m["G"])
        .commit(m["G"])
    )
    return summed.to_hbm(ctx.tdma, m["G"])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_row_sums_through_the_transpose(on):
    x = np.arange(G.size * D.size, dtype=np.float32).reshape(G.size, D.size)  # sums exact in f32
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(row_sums, ctx, HostTensor.from_numpy(x, f32, m["G, D"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), x.sum(axis=1))
