"""Port of upstream `fetch_assertions`: the smallest legal fetch → collect → commit copy, on a 2-cluster,
256-slice device where every slice holds the whole `[A, B]` tensor.

Upstream keeps the two kernels in `cluster_size` and `slice_size` modules (the names of the static rules
they exercise: Cluster::SIZE ∈ {1, 2}, Slice::SIZE ∈ {64, 128, 256}); Python has one module namespace, so
the module name is kept as the kernel's prefix in the test names instead. Upstream's tests only launch the
kernels; ours also check the copy against its numpy meaning (the output is the input).
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=8, B=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def valid_cluster_size(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def valid_slice_size(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


def ramp() -> np.ndarray:
    """Upstream's input: cell x holds `(x % 256) as i8`, i.e. 0..127 then -128..-1 (two's complement wrap)."""
    return (np.arange(A.size * B.size) % 256).astype(np.uint8).view(np.int8).reshape(A.size, B.size)


def copied_by(kernel) -> np.ndarray:
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(ramp(), i8, m["A, B"]).to_hbm(ctx.pdma)
        output = HbmTensor.new(i8, Chip, m["A, B"])
        launch(kernel, ctx, input, output)
        return output.to_host(ctx.pdma).to_numpy()


def test_cluster_size_valid_cluster_size():
    actual = copied_by(valid_cluster_size)
    assert actual.dtype == np.int8
    np.testing.assert_array_equal(actual, ramp())


def test_slice_size_valid_slice_size():
    actual = copied_by(valid_slice_size)
    assert actual.dtype == np.int8
    np.testing.assert_array_equal(actual, ramp())
