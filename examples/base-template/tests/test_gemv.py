import numpy as np

from base_template.gemv import run
from base_template.oracle import round_bf16, sequential_dot, within


def test_equals_sequential_fold_and_is_close_to_float64(rng):
    matrix, vector, out = run(rng)
    assert out.shape == (256,)
    expected = round_bf16(sequential_dot(matrix, vector[None, :]))
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))
    assert within(out, matrix.astype(np.float64) @ vector.astype(np.float64), 0.02, 0.5).all()
