"""Port of upstream `furiosa-opt-examples/src/commit_view_tile.rs` and
`tests/commit_view_tile_answer_tests.rs`.

Two `commit_view` writes into different tiles of one fresh DM tensor, through the fetch → collect →
commit path with no arithmetic: the two halves of `X` change places. `X` is 32 because a collect
packet is one 32-byte flit (16 bf16), so each half must hold at least 16 elements. The tile starts are
element indices along `X`; a fetch offset taken in bytes would read element 8 for the second half.
"""

import ml_dtypes
import numpy as np

from furiosa_opt import *

A, X = axes(A=8, X=32)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["1 # 256"]


@device(chip=1)
def swap_halves(ctx: Context, x: HbmTensor[bf16, Chip, m["A, X"]]) -> HbmTensor[bf16, Chip, m["A, X"]]:
    x = x.to_dm(ctx.tdma, Cluster, Slice, m["A, X"])

    fst_half = x.view().tile(0, m["X"], 16, m["A, X = 16 # 32"])
    snd_half = x.view().tile(16, m["X"], 16, m["A, X = 16 # 32"])

    swapped = DmTensor.new(bf16, Chip, Cluster, Slice, m["A, X"])

    # first half of x → second half of swapped
    (
        ctx.main.begin(fst_half)
        .fetch(m["A"], m["X = 16"])
        .collect(m["A"], m["X = 16"])
        .commit_trim(m["X = 16"])
        .commit_view(swapped.view_mut().tile(16, m["X"], 16, m["A, X = 16 #{!} 32"]))
    )

    # second half of x → first half of swapped
    (
        ctx.main.begin(snd_half)
        .fetch(m["A"], m["X = 16"])
        .collect(m["A"], m["X = 16"])
        .commit_trim(m["X = 16"])
        .commit_view(swapped.view_mut().tile(0, m["X"], 16, m["A, X = 16 #{!} 32"]))
    )

    return swapped.to_hbm(ctx.tdma)


def test_answer_swap_halves():
    # A ramp 0, 1, 2, …: integers below 256 are exact in bf16, so the moves compare bit for bit.
    ramp = np.arange(8 * 32, dtype=np.float32).reshape(8, 32).astype(ml_dtypes.bfloat16)
    expected = np.concatenate([ramp[:, 16:], ramp[:, :16]], axis=1)
    assert not np.array_equal(expected, ramp), "the swap must move data"

    with Context.acquire() as ctx:
        x = HostTensor.from_numpy(ramp, bf16, m["A, X"]).to_hbm(ctx.pdma, Chip, m["A, X"])
        out = launch(swap_halves, ctx, x)
        got = out.to_host(ctx.pdma, m["A, X"]).to_numpy()

    np.testing.assert_array_equal(got.astype(np.float32), expected.astype(np.float32))
