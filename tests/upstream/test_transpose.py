"""Port of upstream `furiosa-opt-examples/src/transpose.rs` and `tests/transpose_tests.rs`.

`transpose_simple` permutes an f32 HBM tensor `[A, B, C]` into `[C, A, B]` in two tensor-DMA moves
(`[A, B, C] → [A, C, B] → [C, A, B]`): the DMA engine reorders the axes, the Transpose Engine is not
involved. The test is upstream's: the input counts 0, 1, 2, … in `[A, B, C]` order and the output must
equal, exactly, the array built by walking `c, a, b` and writing `a·B·C + b·C + c`. Upstream's test
builds that expectation with three loops; we build the same array twice — with the loops and with
numpy's axis transpose — and compare against both.
"""

import numpy as np

from furiosa_opt import *

A, B, C = axes(A=8, B=16, C=32)
Chip = m["1"]


@device(chip=1)
def transpose_simple(ctx: Context, input: HbmTensor[f32, Chip, m["A, B, C"]]) -> HbmTensor[f32, Chip, m["C, A, B"]]:
    # transpose: [A, B, C] -> [A, C, B]
    intermediate = input.to_hbm(ctx.tdma, m["A, C, B"])
    # transpose: [A, C, B] -> [C, A, B]
    return intermediate.to_hbm(ctx.tdma, m["C, A, B"])


def expected_by_loops() -> np.ndarray:
    """Upstream's hand-built expectation: walk (c, a, b) and write the input's index of (a, b, c)."""
    expected = []
    for c in range(32):
        for a in range(8):
            for b in range(16):
                expected.append(float(a * 16 * 32 + b * 32 + c))
    return np.array(expected, dtype=np.float32).reshape(32, 8, 16)


def test_transpose_simple():
    total = 8 * 16 * 32
    input_data = np.arange(total, dtype=np.float32).reshape(8, 16, 32)
    with Context.acquire() as ctx:
        hbm_input = HostTensor.from_numpy(input_data, f32, m["A, B, C"]).to_hbm(ctx.pdma, Chip, m["A, B, C"])
        output = launch(transpose_simple, ctx, hbm_input)
        actual = output.to_host(ctx.pdma, m["C, A, B"]).to_numpy()

    assert actual.dtype == np.float32
    assert actual.shape == (32, 8, 16)
    np.testing.assert_array_equal(actual, expected_by_loops())  # exact equality, as upstream's assert_eq
    np.testing.assert_array_equal(actual, input_data.transpose(2, 0, 1))
