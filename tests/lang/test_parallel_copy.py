"""ParallelCopy (`to_dm_pcopy`, `to_dm_view_pcopy`, `parallel_copy_cluster_slice`, `parallel_copy_chip_slice`),
`Context.bind` and view `reshape`: values against numpy on both backends, and the refusals.

Upstream's examples use none of these, so the kernels are ours; the semantics are upstream's
(`tensor/memory.rs`, `context.rs`): a ParallelCopy is a DM → DM move issued on the sub context, whose reads may
broadcast and whose writes may not, and the per-level slices are one ParallelCopy per chip or cluster."""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.lang.device import Context as ContextClass

A, B, C, R, E, H, L = axes(A=256, B=64, C=2, R=4, E=32, H=4, L=16)


@device(chip=1)
def pcopy_relayout(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["A, B"]]:
    """The element's two halves of B swapped in place by order: B % 8 outer, B / 8 inner."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    moved = dm.to_dm_pcopy(ctx.sub, m["A"], m["B % 8, B / 8"])
    return moved.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def pcopy_into_tile(ctx: Context, x: HbmTensor[i32, m["1"], m["C, A, E"]]) -> HbmTensor[i32, m["1"], m["C, A, E"]]:
    """Cluster 0's rows written into cluster 1 of a fresh tensor, cluster 1's into cluster 0."""
    dm = x.to_dm(ctx.tdma, m["C"], m["A"], m["E"])
    out = DmTensor.new(i32, m["1"], m["C"], m["A"], m["E"])
    for target, source in ((0, 1), (1, 0)):
        piece = dm.view().cluster_tile(source, m["C"], 1, m["1 # 2"])
        piece.to_dm_view_pcopy(ctx.sub, out.view_mut().cluster_tile(target, m["C"], 1, m["1 #{!} 2"]))
    return out.to_hbm(ctx.tdma, m["C, A, E"])


@device(chip=1)
def cluster_rows(ctx: Context, x: HbmTensor[i32, m["1"], m["C, A, R, E"]]) -> HbmTensor[i32, m["1"], m["C, A, E"]]:
    dm = x.to_dm(ctx.tdma, m["C"], m["A"], m["R, E"])
    rows = ctx.sub.parallel_copy_cluster_slice(dm.view(), [1, 3], 2, m["R"], m["R = 1 # 4, E"], m["E"])
    return rows.to_hbm(ctx.tdma, m["C, A, E"])


@device(chip=4)
def chip_rows(ctx: Context, x: HbmTensor[i32, m["H"], m["A, R, E"]]) -> HbmTensor[i32, m["H"], m["A, E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["R, E"])
    rows = ctx.sub.parallel_copy_chip_slice(dm.view(), [3, 0, 1, 2], 4, m["R"], m["R = 1 # 4, E"], m["E"])
    return rows.to_hbm(ctx.tdma, m["A, E"])


@device(chip=1)
def reshaped_view(
    ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]], out: HbmTensorViewMut[i32, m["1"], m["L, A / 16, B"]]
) -> None:
    """The [A, B] rows land in an out-parameter seen as [L, A / 16, B]: the same wire order regrouped."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    dm.view().to_hbm_view(ctx.tdma, out.reshape(m["1"], m["A, B"]))


def _run(on: str, kernel, *arrays_and_maps, chip=None):
    with backend(on) as launch_, Context.acquire() as ctx:
        args = []
        for array, mapping, *spread in arrays_and_maps:
            host = HostTensor.from_numpy(array, i32, mapping)
            args.append(host.to_hbm(ctx.pdma, *spread) if spread else host.to_hbm(ctx.pdma))
        return launch_(kernel, ctx, *args), ctx


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_to_dm_pcopy_relays_the_element(on):
    x = np.arange(A.size * B.size, dtype=np.int32).reshape(A.size, B.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(pcopy_relayout, ctx, HostTensor.from_numpy(x, i32, m["A, B"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), x)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_to_dm_view_pcopy_swaps_clusters(on):
    x = np.arange(C.size * A.size * E.size, dtype=np.int32).reshape(C.size, A.size, E.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(pcopy_into_tile, ctx, HostTensor.from_numpy(x, i32, m["C, A, E"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), x[::-1])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_parallel_copy_cluster_slice_picks_a_row_per_cluster(on):
    x = np.arange(C.size * A.size * R.size * E.size, dtype=np.int32).reshape(C.size, A.size, R.size, E.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(cluster_rows, ctx, HostTensor.from_numpy(x, i32, m["C, A, R, E"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), np.stack([x[0, :, 1], x[1, :, 3]]))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_parallel_copy_chip_slice_picks_a_row_per_chip(on):
    x = np.arange(H.size * A.size * R.size * E.size, dtype=np.int32).reshape(H.size, A.size, R.size, E.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(x, i32, m["H, A, R, E"]).to_hbm(ctx.pdma, m["H"], m["A, R, E"])
        got = launch_(chip_rows, ctx, hbm).to_host(ctx.pdma, m["H, A, E"]).to_numpy()
    np.testing.assert_array_equal(got, np.stack([x[c, :, r] for c, r in enumerate([3, 0, 1, 2])]))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_a_reshaped_view_out_parameter(on):
    x = np.arange(A.size * B.size, dtype=np.int32).reshape(A.size, B.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        out = HbmTensor.new(i32, m["1"], m["L, A / 16, B"])
        launch_(reshaped_view, ctx, HostTensor.from_numpy(x, i32, m["A, B"]).to_hbm(ctx.pdma), out.view_mut())
        np.testing.assert_array_equal(out.to_host(ctx.pdma).into_vec(), x.reshape(-1))  # x in wire order


def test_parallel_copies_run_on_the_sub_context():
    result = compile_kernel(cluster_rows)
    assert result.ok, result.diagnostics
    copies = [c for c in result.lir.commands if c.kind == "pcopy"]
    assert len(copies) == 2 and {c.context for c in copies} == {"sub"}


def test_pcopy_refusals():
    with Context.acquire() as ctx:
        dm = HostTensor.from_numpy(np.zeros((256, 64), np.int32), i32, m["A, B"]).to_hbm(ctx.pdma)
        dm = dm.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
        with pytest.raises(VerifyError, match=r"wrong-context.*to_dm_pcopy runs on `ctx.sub`"):
            dm.to_dm_pcopy(ctx.tdma, m["A"], m["B"])
        with pytest.raises(VerifyError, match=r"size-preserved"):
            dm.to_dm_pcopy(ctx.sub, m["A / 2"], m["A % 2, B"])


def test_bind_holds_the_first_device_and_guards_npu_launches():
    ctx = ContextClass()  # a context of its own: the process-wide one stays unbound for other tests
    assert ctx.bind(chip_rows.device) is ctx and ctx.bound == chip_rows.device
    assert ctx.bind(chip_rows.device) is ctx  # the same device again is fine
    with pytest.raises(VerifyError, match="context-bind"):
        ctx.bind(pcopy_relayout.device)
    x = HostTensor.from_numpy(np.zeros((256, 64), np.int32), i32, m["A, B"])
    with backend("npu"):
        hbm = x.to_hbm(ctx.pdma)
        with pytest.raises(VerifyError, match=r"launch-device.*compiled for Device\(chip=1, pe=8\)"):
            launch(pcopy_relayout, ctx, hbm)
    with backend("cpu"):  # the CPU backend ignores the binding
        got = launch(pcopy_relayout, ctx, x.to_hbm(ctx.pdma))
    np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), 0)
