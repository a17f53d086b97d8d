import numpy as np

from base_template.dot_product import run
from base_template.oracle import round_bf16, sequential_dot, within


def test_equals_sequential_fold_and_is_close_to_float64(rng):
    lhs, rhs, out = run(rng)
    assert out.shape == ()
    expected = round_bf16(sequential_dot(lhs, rhs))  # ascending a, f32, then hardware bf16 rounding
    assert out.view(np.uint16) == expected.view(np.uint16)
    reference = np.dot(lhs.astype(np.float64), rhs.astype(np.float64))
    assert within(out, reference, 0.02, 0.5)
