"""The simulator's Tensor Unit computes only the clusters that some DMA reaches (`Memories.computing`):
a kernel whose tensors live in cluster 0 computes 256 slices, one that spreads over both clusters 512, and
both give the CPU backend's bytes."""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.sim import memory

A = axes(A=2048)


def _plus_three(ctx: Context, dm: DmTensor, element: str) -> HbmTensor:
    """Each element + 3 on the Vector Engine, stored back to HBM as `A`."""
    out = ctx.main.begin(dm.view()).fetch(m["1"], m[element]).collect(m["1"], m[element])
    out = out.vector_init().vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, 3).vector_final()
    return out.commit_trim(m[element]).commit(m[element]).to_hbm(ctx.tdma, m["A"])


@device
def one_cluster(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    return _plus_three(ctx, x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"]), "A % 8")


@device
def two_clusters(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    return _plus_three(ctx, x.to_dm(ctx.tdma, m["A / 1024"], m["A / 4 % 256"], m["A % 4 # 8"]), "A % 4 # 8")


@pytest.mark.parametrize(("kernel", "rows"), [(one_cluster, 256), (two_clusters, 512)])
def test_the_tensor_unit_computes_the_clusters_dma_reaches(kernel, rows, monkeypatch):
    computed = []
    original = memory.Memories.computing

    def spy(self, spans):
        original(self, spans)
        computed.append(self.live.stop - self.live.start)

    monkeypatch.setattr(memory.Memories, "computing", spy)
    values = np.random.default_rng(5).integers(-1000, 1000, 2048, dtype=np.int32)
    outputs = []
    for name in ("cpu", "npu"):
        with backend(name) as run, Context.acquire() as ctx:
            x = HostTensor.from_numpy(values, i32, m[A]).to_hbm(ctx.pdma)
            outputs.append(run(kernel, ctx, x).to_host(ctx.pdma).to_numpy())
    assert computed == [rows]
    assert np.array_equal(outputs[0], values + 3) and np.array_equal(outputs[1], values + 3)
