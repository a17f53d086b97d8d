"""Port of upstream `furiosa-opt-examples/src/fetch_commit.rs` and `tests/fetch_commit_tests.rs`.

The Tensor Unit's shortest path: fetch an i8 DM tensor, widen it to i32 on the fetch side, collect one
8-element packet per cycle and commit it straight back to DM; the HBM result is stored transposed.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=4096, B=8)

Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def fetch_commit_simple(ctx: Context, input: HbmTensor[i8, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["B, A"]]:
    # The element keeps B (stride 1 in HBM) innermost, so each DMA tail is the whole B row: 8 × i8 =
    # 8 bytes, the DMA's minimum alignment.
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B"])
    fetch_and_commit_tensor = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A / 8 % 2"], m["A % 8, B"])
        .fetch_cast(i32)
        .collect(m["A / 8 % 2, A % 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A / 8 % 2, A % 8, B"])
    )
    return fetch_and_commit_tensor.to_hbm(ctx.tdma, m["B, A"])


def test_fetch_commit_simple_host():
    # Element (a, b) holds (8a + b) wrapped to i8, as upstream's `(0..32768).map(|x| x as i8)`.
    values = np.arange(4096 * 8).reshape(4096, 8).astype(np.int8)
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(values, i8, m["A, B"]).to_hbm(ctx.pdma, Chip, m["A, B"])
        output = launch(fetch_commit_simple, ctx, input)
        got = output.to_host(ctx.pdma, m["B, A"]).to_numpy()

    a, b = np.indices((4096, 8))
    expected = ((a * 8 + b + 128) % 256 - 128).astype(np.int32)  # i8 wrap, then sign-extended to i32
    np.testing.assert_array_equal(got, expected.T)
    assert got.dtype == np.int32
