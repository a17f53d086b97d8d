"""Port of upstream `typelevel_const.rs`: a helper's loop bound given by its caller.

Upstream pins that a const-generic loop bound `N` (`for b in 0..N` in a helper) is evaluated when the
kernel is compiled. A Python helper takes `n` as an ordinary argument and the trace unrolls the loop, so
the port checks the same program end to end: the first `n = 32` rows of `[A, B]` (all of them)
transposed into `[B, A]`. Upstream has no test for it; ours compares with numpy's transpose.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=512, B=32)


def transpose_rows(ctx: Context, input: HbmTensorView, output: HbmTensor, n: int) -> None:
    """Move `B` position b of the input to row b of the output, for b < n (upstream's `N`)."""
    for b in range(n):
        input_slice = input.tile(b, m["B"], 1, m["A, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["B"], 1, m["1 #{!} 32, A"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)


@device(chip=1)
def typelevel_const(ctx: Context, input: HbmTensorView[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["B, A"]]:
    output = HbmTensor.new(i8, m["1"], m["B, A"])
    transpose_rows(ctx, input, output, 32)  # upstream: `transpose_rows::<32>`, N = <m![B]>::SIZE
    return output


def test_typelevel_const_transposes():
    rng = np.random.default_rng(11)
    input = HostTensor.rand(i8, m["A, B"], rng)
    with Context.acquire() as ctx:
        hbm = input.to_hbm(ctx.pdma)
        output = launch(typelevel_const, ctx, hbm.view()).to_host(ctx.pdma, m["B, A"])

    source = input.to_numpy()
    assert len(np.unique(source)) > 1
    assert np.array_equal(output.to_numpy(), source.T)
