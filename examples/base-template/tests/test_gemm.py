import numpy as np

from base_template.gemm import run
from base_template.oracle import round_bf16, sequential_dot, within


def test_equals_sequential_fold_and_is_close_to_float64(rng):
    a, b, out = run(rng)
    assert out.shape == (512, 512)
    expected = round_bf16(sequential_dot(a[:, None, :], b[None, :, :]))  # k = 0, 1, … in f32
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))
    assert within(out, a.astype(np.float64) @ b.astype(np.float64).T, 0.05, 1.0).all()


def test_a_different_fold_order_would_be_seen(rng):
    """The exact comparison is sharp: reversing the fold order changes some results."""
    a, b, out = run(rng)
    reversed_fold = round_bf16(sequential_dot(a[:, None, ::-1], b[None, :, ::-1]))
    assert not np.array_equal(out.view(np.uint16), reversed_fold.view(np.uint16))
