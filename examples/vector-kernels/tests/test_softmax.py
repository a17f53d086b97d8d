"""softmax_kernel against the sequential-f32 oracle (bit for bit) and float64 (rtol 1e-5)."""

import numpy as np

from furiosa_opt import Context, HostTensor, f32, m, runtime
from vector_kernels import oracle
from vector_kernels.inputs import WIDE_ROWS, logits
from vector_kernels.kernel.softmax_kernel import D, N, softmax_kernel
from vector_kernels.softmax import TINY, compute, reference64, run


def bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def test_equals_the_sequential_f32_oracle_bit_for_bit(rng):
    x, out = run(rng)
    assert out.shape == (N.size, D.size) and out.dtype == np.float32
    assert np.array_equal(bits(out), bits(oracle.softmax(x)))


def test_is_close_to_float64_softmax(rng):
    x, out = run(rng)
    np.testing.assert_allclose(out, reference64(x), rtol=1e-5, atol=TINY)
    assert np.abs(out.astype(np.float64).sum(axis=1) - 1).max() < 1e-5


def test_wide_rows_reach_subnormal_and_zero_probabilities(rng):
    """The inputs exercise exp's underflow: the bit-for-bit test covers gradual underflow and zeros."""
    _, out = run(rng)
    wide = out[:WIDE_ROWS]
    assert (wide == 0).any() and ((wide > 0) & (wide < TINY)).any()
    assert (out[WIDE_ROWS:] > 0).all()


def test_the_summation_order_is_observable(rng):
    """Folding the row sum right to left changes some bits, so the bit-for-bit test pins the order."""
    x, out = run(rng)
    assert not np.array_equal(bits(out), bits(oracle.softmax(x, reverse_sum=True)))


def test_constant_and_dominated_rows_are_exact(rng):
    x = logits(rng, N.size, D.size)
    x[0] = 3.5  # every exponential is 1 and the sum 256: exactly 1/256 each
    x[1] = 0.0
    x[1, 17] = 200.0  # exp(-200) underflows to 0 in f32: a one-hot row
    out = compute(x)
    assert np.array_equal(out[0], np.full(D.size, 1 / 256, dtype=np.float32))
    assert out[1, 17] == 1.0 and np.count_nonzero(out[1]) == 1
    assert np.array_equal(bits(out), bits(oracle.softmax(x)))


def test_the_simulator_matches_the_oracle(monkeypatch, rng):
    """The compiled EDF on the simulator gives the oracle's bits too (the differential harness only
    compares the two backends with each other)."""
    x = logits(rng, N.size, D.size)
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "npu")
    with Context.acquire() as ctx:
        out = runtime.launch_here(softmax_kernel, ctx, HostTensor.from_numpy(x, f32, m[N, D]).to_hbm(ctx.pdma))
        got = out.to_host(ctx.pdma).to_numpy()
    assert np.array_equal(bits(got), bits(oracle.softmax(x)))
