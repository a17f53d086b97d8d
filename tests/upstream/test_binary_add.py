"""Port of upstream `binary_add.rs` and `binary_add_tests.rs`: i8 + i8 → i32 over 2048 elements through
the Vector Engine's pair mode.

`begin_interleaved` puts lhs and rhs on a new size-2 time axis `I`; `vector_intra_slice_unzip` splits
the stream into group 0 (lhs) and group 1 (rhs); `vector_clip_zip` adds the groups into one stream.
"""

import numpy as np

from furiosa_opt import *

A, I = axes(A=2048, I=2)

Chip = m["1"]
Cluster = m["1 # 2"]


def binary_add_kernel(ctx: Context, lhs: HbmTensorView, rhs: HbmTensorView, out: DmTensorViewMut) -> None:
    """Add lhs and rhs (slice `A / 8`, element `A % 8`) as i32 into the caller's DM view `out`."""
    lhs = lhs.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    rhs = rhs.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    (
        ctx.main.begin_interleaved(lhs.view(), rhs.view(), I)  # I = 0: lhs, I = 1: rhs
        .fetch(m["I"], m["A % 8"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])  # group 0 = lhs, group 1 = rhs
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)  # one stream: group 0 + group 1
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit_view(out)
    )


@device(chip=1)
def binary_add_2048(
    ctx: Context, lhs: HbmTensor[i8, m["1"], m["A"]], rhs: HbmTensor[i8, m["1"], m["A"]]
) -> HbmTensor[i32, m["1"], m["A"]]:
    result = DmTensor.new(i32, Chip, Cluster, m["A / 8"], m["A % 8"])
    binary_add_kernel(ctx, lhs.view(), rhs.view(), result.view_mut())
    return result.to_hbm(ctx.tdma, m["A"])


def test_binary_add_2048():
    rng = np.random.default_rng(42)
    lhs, rhs = HostTensor.rand(i8, m["A"], rng), HostTensor.rand(i8, m["A"], rng)
    with Context.acquire() as ctx:
        out = launch(binary_add_2048, ctx, lhs.to_hbm(ctx.pdma), rhs.to_hbm(ctx.pdma))
        actual = out.to_host(ctx.pdma, m["A"]).to_numpy()

    expected = lhs.to_numpy().astype(np.int32) + rhs.to_numpy().astype(np.int32)
    assert actual.dtype == np.int32
    assert np.array_equal(actual, expected)
