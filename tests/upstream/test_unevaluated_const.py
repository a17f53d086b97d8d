"""Port of upstream `unevaluated_const.rs`: an axis size read as a value, guarded by a compile-time
assertion.

Upstream pins that `<m![B]>::SIZE` used as a loop bound and in a `const { assert!(..) }` is evaluated
when the kernel is compiled. In Python `B.size` is a plain int and the assertion runs while the kernel
is traced. Upstream has no test for it; ours compares the transpose with numpy's.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=512, B=32)


@device(chip=1)
def unevaluated_const(ctx: Context, input: HbmTensorView[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["B, A"]]:
    """Transpose `[A, B]` to `[B, A]` one `B` row at a time."""
    assert B.size % 32 == 0, "B must be a multiple of 32"
    output = HbmTensor.new(i8, m["1"], m["B, A"])
    for b in range(B.size):
        input_slice = input.tile(b, m["B"], 1, m["A, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["B"], 1, m["1 #{!} 32, A"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


def test_unevaluated_const_transposes():
    rng = np.random.default_rng(13)
    input = HostTensor.rand(i8, m["A, B"], rng)
    with Context.acquire() as ctx:
        hbm = input.to_hbm(ctx.pdma)
        output = launch(unevaluated_const, ctx, hbm.view()).to_host(ctx.pdma, m["B, A"])

    source = input.to_numpy()
    assert len(np.unique(source)) > 1
    assert np.array_equal(output.to_numpy(), source.T)
