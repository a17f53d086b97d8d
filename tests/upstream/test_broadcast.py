"""Port of upstream `tests/broadcast.rs`: an HBM → HBM tensor-DMA move that adds an axis broadcasts.

`[A]` moved to `[A, B]` repeats every value over the `B` axis the source lacks. No kernel: the moves run
on the host, as upstream's test does.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=512, B=4)


def test_view_broadcast():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(np.arange(512, dtype=np.int32), i32, m["A"])
        hbm1 = input.to_hbm(ctx.pdma, m["1"], m["A"])
        hbm2 = hbm1.to_hbm(ctx.tdma, m["A, B"])  # upstream: `to_hbm::<{ Dma::Tensor }, m![A, B]>`
        output = hbm2.to_host(ctx.pdma, m["A, B"])

    expected = np.repeat(np.arange(A.size, dtype=np.int32), B.size)  # each x, B times, in `[A, B]` order
    assert output.values().tolist() == expected.tolist()
