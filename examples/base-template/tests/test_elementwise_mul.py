import numpy as np

from base_template.elementwise_mul import run


def test_multiplies_with_wraparound(rng):
    lhs, rhs, out = run(rng)
    wide = lhs.astype(object) * rhs.astype(object)  # exact products, then i32 wrap by hand
    expected = np.array([(int(v) + 2**31) % 2**32 - 2**31 for v in wide], dtype=np.int32)
    assert np.array_equal(out, expected)
    assert np.any(np.abs(wide.astype(float)) > 2**31)  # the inputs really exercise the wrap
