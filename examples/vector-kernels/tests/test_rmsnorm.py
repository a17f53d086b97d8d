"""rmsnorm_kernel against the sequential-f32 oracle (bit for bit) and float64 (rtol 1e-5)."""

import numpy as np

from furiosa_opt import *
from furiosa_opt import runtime
from furiosa_opt.compiler.driver import compile_kernel, compile_visa
from vector_kernels import oracle
from vector_kernels.inputs import activations, gains
from vector_kernels.kernel.rmsnorm_kernel import EPS, D, N, rmsnorm_kernel
from vector_kernels.rmsnorm import compute, reference64, run


def bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def test_equals_the_sequential_f32_oracle_bit_for_bit(rng):
    x, w, out = run(rng)
    assert out.shape == (N.size, D.size) and out.dtype == np.float32
    assert np.array_equal(bits(out), bits(oracle.rmsnorm(x, w, EPS)))


def test_is_close_to_float64_rmsnorm(rng):
    x, w, out = run(rng)
    np.testing.assert_allclose(out, reference64(x, w), rtol=1e-5, atol=0)


def test_the_op_order_and_the_summation_order_are_observable(rng):
    """(x / rms) · w and a right-to-left sum of squares each change some bits: the bit-for-bit test pins
    both the kernel's op order and its fold order."""
    x, w, out = run(rng)
    assert not np.array_equal(bits(out), bits(oracle.rmsnorm(x, w, EPS, scale_first=False)))
    assert not np.array_equal(bits(out), bits(oracle.rmsnorm(x, w, EPS, reverse_sum=True)))


def test_eps_keeps_a_zero_row_finite(rng):
    x, w = activations(rng, N.size, D.size), gains(rng, D.size)
    x[5] = 0.0  # 0 / sqrt(0 + eps) = 0; without eps it would be 0 / 0 = NaN
    out = compute(x, w)
    assert np.array_equal(bits(out[5]), np.zeros(D.size, dtype=np.uint32))
    assert np.array_equal(bits(out), bits(oracle.rmsnorm(x, w, EPS)))


def test_the_simulator_matches_the_oracle(monkeypatch, rng):
    """The compiled EDF on the simulator gives the oracle's bits too (the differential harness only
    compares the two backends with each other)."""
    x, w = activations(rng, N.size, D.size), gains(rng, D.size)
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "npu")
    with Context.acquire() as ctx:
        x_hbm = HostTensor.from_numpy(x, f32, m[N, D]).to_hbm(ctx.pdma)
        w_hbm = HostTensor.from_numpy(w, f32, m[D]).to_hbm(ctx.pdma)
        got = runtime.launch_here(rmsnorm_kernel, ctx, x_hbm, w_hbm).to_host(ctx.pdma).to_numpy()
    assert np.array_equal(bits(got), bits(oracle.rmsnorm(x, w, EPS)))


A = axes(A=2048)


@device(chip=1)
def add_eps(ctx: Context, x: HbmTensor[f32, m["1"], m["A"]]) -> HbmTensor[f32, m["1"], m["A"]]:
    """The clip unit adding eps = 1e-6 (a common RMSNorm eps), the step of rmsnorm_kernel's first pass."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
    out = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["A % 8"])
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip(ClipBinaryOpF32.Add, 1e-6)
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return out.to_hbm(ctx.tdma, m["A"])


def test_an_eps_of_1e_6_replays_from_its_visa_text(tmp_path):
    traced = compile_kernel(add_eps)
    assert traced.ok, traced.diagnostics
    path = tmp_path / "add_eps.visa"
    path.write_text(traced.visa_text)
    replayed = compile_visa(path)
    assert replayed.ok, replayed.diagnostics
    assert replayed.visa_text == traced.visa_text
