"""Port of upstream `furiosa-opt-examples/src/dma.rs` (its `tests/dma_tests.rs` holds no test): HBM → DM → HBM
copies with one, two and eight returned tensors, both in-place output forms next to a returned one, and a
tail axis padded to a DMA-aligned packet.

Upstream's kernels guard its multiple-output lowering and its EDF byte images (`compare_edf!`). Here every
kernel is launched on the CPU backend and, from its compiled EDF, on the simulator (`tests/backends.py`)
with the same inputs: every result and every argument afterwards must agree bit for bit between the two
(buffers compared whole, padding included) and equal its numpy oracle. Inputs are distinct ramps so that a
permuted output order cannot go unnoticed.

Differences from upstream: upstream's `&mut HbmTensor` out-parameter is a plain `HbmTensor` parameter that
the kernel writes through `view_mut()`; its `HbmTensorViewMut<'_, i32, Chip, m![1 #{!} 2, PA, PD]>` parameter
is passed here as the write tile `PV = 1` of a `[PV, PA, PD]` tensor (upstream declares `PV = 2` and never
uses it), so the test also sees that the other `PV` half is left alone. `A` and `B` serve the refused
fixture `tests/negative/upstream_dma.py`.
"""

import numpy as np
from backends import backend

from furiosa_opt import *

A, B, PA, PC, PD, PV = axes(A=65536, B=1024, PA=256, PC=5, PD=8, PV=2)

Chip = m["1"]
Cluster = m["1 # 2"]

DupHbm = HbmTensor[i32, Chip, m["PA, PD"]]  # upstream's `DupHbm`; its DM landing shape is `[PA], [PD]`


@device(chip=1)
def dup_two(ctx: Context, lhs: DupHbm, rhs: DupHbm) -> tuple[DupHbm, DupHbm]:
    """`(lhs, rhs)`, each through DM."""
    dl = lhs.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    dr = rhs.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    return dl.to_hbm(ctx.tdma, m["PA, PD"]), dr.to_hbm(ctx.tdma, m["PA, PD"])


@device(chip=1)
def dup_one(ctx: Context, input: DupHbm) -> DupHbm:
    """A single (non-tuple) returned copy."""
    dm = input.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    return dm.to_hbm(ctx.tdma, m["PA, PD"])


@device(chip=1)
def dup_many(
    ctx: Context, a: DupHbm, b: DupHbm
) -> tuple[DupHbm, DupHbm, DupHbm, DupHbm, DupHbm, DupHbm, DupHbm, DupHbm]:
    """Eight outputs alternating `a, b, a, b, ...`."""
    da = a.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    db = b.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    return (
        da.to_hbm(ctx.tdma, m["PA, PD"]),
        db.to_hbm(ctx.tdma, m["PA, PD"]),
        da.to_hbm(ctx.tdma, m["PA, PD"]),
        db.to_hbm(ctx.tdma, m["PA, PD"]),
        da.to_hbm(ctx.tdma, m["PA, PD"]),
        db.to_hbm(ctx.tdma, m["PA, PD"]),
        da.to_hbm(ctx.tdma, m["PA, PD"]),
        db.to_hbm(ctx.tdma, m["PA, PD"]),
    )


@device(chip=1)
def mixed_inplace_and_returned_outputs(
    ctx: Context,
    for_ref: DupHbm,
    for_view: DupHbm,
    for_return: DupHbm,
    by_ref: DupHbm,
    by_view: HbmTensorViewMut[i32, Chip, m["1 #{!} 2, PA, PD"]],
) -> DupHbm:
    """`by_ref = for_ref` and `by_view = for_view` in place; returns a copy of `for_return`."""
    for_ref = for_ref.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    for_view = for_view.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    for_return = for_return.to_dm(ctx.tdma, Cluster, m["PA"], m["PD"])
    for_ref.view().to_hbm_view(ctx.tdma, by_ref.view_mut())
    for_view.view().to_hbm_view(ctx.tdma, by_view)
    return for_return.to_hbm(ctx.tdma, m["PA, PD"])


@device(chip=1)
def padded_tail_alignment(
    ctx: Context, input: HbmTensor[i32, Chip, m["PA, PC # 8"]]
) -> HbmTensor[i32, Chip, m["PA, PC # 8"]]:
    """A round trip of a 5-cell (20-byte) tail padded to 8 cells (32 bytes) on both sides."""
    dm = input.to_dm(ctx.tdma, Cluster, m["PA"], m["PC # 8"])
    return dm.to_hbm(ctx.tdma, m["PA, PC # 8"])


# ---- tests ----------------------------------------------------------------------------------------------


def ramp(start: int, shape: tuple[int, ...] = (PA.size, PD.size)) -> np.ndarray:
    return (start + np.arange(np.prod(shape))).reshape(shape).astype(np.int32)


def upload(ctx: Context, values: np.ndarray, mapping: str = "PA, PD") -> HbmTensor:
    return HostTensor.from_numpy(values, i32, m[mapping]).to_hbm(ctx.pdma)


def download(tensor: HbmTensor, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """The logical array and the whole buffer (padding included) of an HBM tensor."""
    return tensor.to_host(ctx.pdma).to_numpy(), np.array(tensor.values())


def on_both(scenario) -> list[tuple[np.ndarray, np.ndarray]]:
    """Run `scenario(launch, ctx)` on the CPU backend and on the simulator; every (array, buffer) it returns
    must be bit-identical between the two. Returns the simulator's."""
    results = {}
    for name in ("cpu", "npu"):
        with backend(name) as launch_, Context.acquire() as ctx:
            results[name] = [download(t, ctx) for t in scenario(launch_, ctx)]
    assert len(results["cpu"]) == len(results["npu"])
    for i, (cpu, npu) in enumerate(zip(results["cpu"], results["npu"], strict=True)):
        for a, b in zip(cpu, npu, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape, f"tensor {i}"
            assert a.tobytes() == b.tobytes(), f"tensor {i} differs between the CPU backend and the simulator"
    return results["npu"]


def test_dup_two():
    lhs, rhs = ramp(0), ramp(100_000)

    def scenario(launch_, ctx):
        out = launch_(dup_two, ctx, upload(ctx, lhs), upload(ctx, rhs))
        assert isinstance(out, tuple) and len(out) == 2
        return out

    (first, _), (second, _) = on_both(scenario)
    np.testing.assert_array_equal(first, lhs)  # tuple order is (lhs, rhs)
    np.testing.assert_array_equal(second, rhs)


def test_dup_one():
    x = ramp(-5000)

    def scenario(launch_, ctx):
        out = launch_(dup_one, ctx, upload(ctx, x))
        assert isinstance(out, HbmTensor)
        return (out,)

    ((got, buffer),) = on_both(scenario)
    np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(buffer, x.ravel())  # `[PA, PD]` is dense: the buffer is the array


def test_dup_many():
    a, b = ramp(0), ramp(1 << 20)

    def scenario(launch_, ctx):
        out = launch_(dup_many, ctx, upload(ctx, a), upload(ctx, b))
        assert isinstance(out, tuple) and len(out) == 8
        return out

    results = on_both(scenario)
    for i, (got, _) in enumerate(results):
        np.testing.assert_array_equal(got, a if i % 2 == 0 else b, f"output {i}")


def test_mixed_inplace_and_returned_outputs():
    for_ref, for_view, for_return = ramp(1), ramp(10_001), ramp(20_001)
    by_ref_before = np.full((PA.size, PD.size), -1, np.int32)
    pair_before = np.stack([np.full((PA.size, PD.size), -2, np.int32), np.full((PA.size, PD.size), -3, np.int32)])

    def scenario(launch_, ctx):
        by_ref = upload(ctx, by_ref_before)
        pair = upload(ctx, pair_before, "PV, PA, PD")
        by_view = pair.view_mut().tile(1, m["PV"], 1, m["1 #{!} 2, PA, PD"])
        returned = launch_(
            mixed_inplace_and_returned_outputs,
            ctx,
            upload(ctx, for_ref),
            upload(ctx, for_view),
            upload(ctx, for_return),
            by_ref,
            by_view,
        )
        return returned, by_ref, pair

    (returned, _), (by_ref, _), (pair, _) = on_both(scenario)
    np.testing.assert_array_equal(returned, for_return)
    np.testing.assert_array_equal(by_ref, for_ref)
    np.testing.assert_array_equal(pair[1], for_view)  # the tile the view covers
    np.testing.assert_array_equal(pair[0], pair_before[0])  # its other half is not written


def test_padded_tail_alignment():
    x = ramp(7, (PA.size, PC.size))

    def scenario(launch_, ctx):
        source = upload(ctx, x, "PA, PC # 8")
        return launch_(padded_tail_alignment, ctx, source), source

    (got, buffer), (source, source_buffer) = on_both(scenario)
    assert got.shape == (PA.size, PC.size)
    np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(source, x)
    # 8 cells per `PA` row, the 5 live ones first; the padding bytes round-trip with the live ones
    assert buffer.shape == (PA.size * 8,)
    np.testing.assert_array_equal(buffer.reshape(PA.size, 8)[:, : PC.size], x)
    np.testing.assert_array_equal(buffer, source_buffer)
