"""Port of upstream `furiosa-opt-examples/tests/transformer_tests.rs` (12 tests) for the six entry points of
`examples/transformer` (`transformer.kernel`), plus each entry point against the numpy reference
(`transformer.reference`, bit for bit) and on the simulator (bit for bit against the CPU backend).

Differences from upstream:

* Inputs: upstream draws from Rust's `SmallRng` with the seeds kept here; numpy's generator with the same
  seeds gives other values from the same distributions (`seeded_bf16`: uniform in [-scale, scale), bf16).
* The smoke tests (upstream launches zeros and checks nothing) assert what zeros give: zero outputs, the
  running state `eps`, and for `decoder` the NaN of `0 / 0` (a zero softmax sum) propagated as the reference
  propagates it. `test_embedding` copies a random row instead of zeros, so the copy is visible.
* The scalar oracles (upstream's `rms`, its dot products) and tolerances are upstream's: 0.08 abs + 0.08 rel
  for projection and final layer, 0.12 / 0.12 for attention (running max within 0.1, and within 0.05 for
  the three-chunk test), 0.25 / 0.2 for the decoder, 0.05 / 0.05 for the wiring test.
* Every entry point also runs on the simulator and matches the CPU backend bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from backends import backend

from furiosa_opt import Context, HbmTensor, bf16, f32, launch, m
from transformer import host
from transformer import kernel as K
from transformer import reference as R
from transformer.host import DecoderWeights, ProjectionWeights, seeded_bf16

H, Q, P, N, G, D, L, T, W, Wp = (a.size for a in (K.H, K.Q, K.P, K.N, K.G, K.D, K.L, K.T, K.W, K.Wp))
EPS = np.float32(6.25e-8)
NGD, TND, NG, TM = m[K.N, K.G, K.D], m[K.T, K.N, K.D], m[K.N, K.G], m[K.T]  # mappings of the HBM tensors


def assert_close(actual: np.ndarray, expected: np.ndarray, abs_: float, rel: float) -> None:
    """Upstream's `assert_close`: |actual - expected| <= abs + rel·|expected| at every index."""
    actual, expected = np.ravel(actual), np.ravel(expected).astype(np.float32)
    assert actual.shape == expected.shape
    diff = np.abs(actual - expected)
    bad = np.flatnonzero(~(diff <= abs_ + rel * np.abs(expected)))
    assert bad.size == 0, f"index {bad[0]}: actual={actual[bad[0]]} expected={expected[bad[0]]} ({bad.size} bad)"


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def rms(values: np.ndarray, weight: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Upstream's scalar `rms` over the last axis."""
    values = np.asarray(values, np.float32)
    mean = (values * values).sum(-1, keepdims=True) / np.float32(values.shape[-1])
    return values / np.sqrt(mean + np.float32(eps)) * weight


# ---- embedding ------------------------------------------------------------------------------------------


def test_embedding():
    row = seeded_bf16(np.random.default_rng(1), H, 1.0)
    with Context.acquire() as ctx:
        assert same_bits(host.run_embedding(ctx, row), row)


def test_embedding_on_the_simulator():
    row = seeded_bf16(np.random.default_rng(2), H, 1.0)
    with backend("npu") as launch_, Context.acquire() as ctx:
        assert same_bits(host.run_embedding(ctx, row, launch_), row)


# ---- projection -----------------------------------------------------------------------------------------


def projection_inputs(seed: int = 0x517E):
    """upstream's `test_projection_matches_scalar_reference` inputs: x, weights; cos = 1, sin = 0, offset 0."""
    rng = np.random.default_rng(seed)
    x = seeded_bf16(rng, H, 0.25)
    weights = ProjectionWeights(
        seeded_bf16(rng, (Q, H), 0.1),
        seeded_bf16(rng, (P, H), 0.1),
        seeded_bf16(rng, (P, H), 0.1),
        seeded_bf16(rng, H, 1.0),
        seeded_bf16(rng, D, 1.0),
        seeded_bf16(rng, D, 1.0),
    )
    return x, weights


@pytest.fixture(scope="module")
def projection_cpu():
    x, weights = projection_inputs()
    with Context.acquire() as ctx:
        return host.run_projection(ctx, x, weights, 0, np.ones(D, np.float32), np.zeros(D, np.float32))


def test_projection():
    """Zeros in, zeros out (the rmsnorm of 0 is 0: `0 / sqrt(eps)`)."""
    zeros = ProjectionWeights(*(np.zeros(s, np.float32) for s in ((Q, H), (P, H), (P, H), H, D, D)))
    with Context.acquire() as ctx:
        q, k, v = host.run_projection(ctx, np.zeros(H), zeros, 0, np.zeros(D), np.zeros(D))
    assert q.shape == (N, G, D) and k.shape == v.shape == (T, N, D)
    assert not q.any() and not k.any() and not v.any()


def test_projection_matches_scalar_reference(projection_cpu):
    q_out, k_cache, v_cache = projection_cpu
    x, w = projection_inputs()
    x_norm = rms(x, w.input_rms)
    q = (w.q * x_norm).sum(-1)  # upstream's scalar dot products, f32
    k = (w.k * x_norm).sum(-1)
    v = (w.v * x_norm).sum(-1)
    q = rms(q.reshape(N * G, D), w.q_rms)
    k = rms(k.reshape(N, D), w.k_rms)
    assert_close(q_out, q, 0.08, 0.08)
    assert_close(k_cache[0], k, 0.08, 0.08)
    assert_close(v_cache[0], v.reshape(N, D), 0.08, 0.08)


def test_projection_equals_the_reference_bit_for_bit(projection_cpu):
    q_out, k_cache, v_cache = projection_cpu
    x, w = projection_inputs()
    q, k, v = R.projection(x, w.q, w.k, w.v, w.input_rms, w.q_rms, w.k_rms, np.ones(D, np.float32), np.zeros(D))
    assert same_bits(q_out, q) and same_bits(k_cache[0], k) and same_bits(v_cache[0], v)
    assert not k_cache[1:].any() and not v_cache[1:].any()


def test_projection_scatters_at_a_runtime_offset_with_rope():
    """Row 300 of filled caches gets k and v (RoPE at position 300 with upstream's tables); every other row is
    left as it was."""
    x, w = projection_inputs(7)
    rng = np.random.default_rng(8)
    k_before, v_before = seeded_bf16(rng, (T, N, D), 1.0), seeded_bf16(rng, (T, N, D), 1.0)
    cos, sin = R.rope_tables(300)
    with Context.acquire() as ctx:
        q_out, k_cache, v_cache = host.run_projection(ctx, x, w, 300, cos, sin, k_before, v_before)
    q, k, v = R.projection(x, w.q, w.k, w.v, w.input_rms, w.q_rms, w.k_rms, cos, sin)
    assert same_bits(q_out, q) and same_bits(k_cache[300], k) and same_bits(v_cache[300], v)
    keep = np.arange(T) != 300
    assert same_bits(k_cache[keep], k_before[keep]) and same_bits(v_cache[keep], v_before[keep])
    assert not same_bits(q, R.projection(x, w.q, w.k, w.v, w.input_rms, w.q_rms, w.k_rms, cos, -sin)[0])


def test_projection_on_the_simulator(projection_cpu):
    x, weights = projection_inputs()
    with backend("npu") as launch_, Context.acquire() as ctx:
        got = host.run_projection(ctx, x, weights, 0, np.ones(D, np.float32), np.zeros(D, np.float32), None, None,
                                  launch_)  # fmt: skip
    assert all(same_bits(a, b) for a, b in zip(got, projection_cpu, strict=True))


# ---- attention ------------------------------------------------------------------------------------------


def zero_chunk(mask: float = 0.0):
    return np.zeros((T, N, D), np.float32), np.zeros((T, N, D), np.float32), np.full(T, mask, np.float32)


def test_attention_forward_first():
    """Zeros: every logit 0, the max 0, every exponential masked to 0, so the sum is eps and the output 0."""
    with Context.acquire() as ctx:
        max_, sum_, out = host.run_attention(ctx, np.zeros((N, G, D)), [zero_chunk()])
    assert not max_.any() and not out.any() and np.all(sum_ == EPS)


def test_attention_forward():
    """`attention_forward` alone on zeroed state: max stays 0, alpha = 1, the sum `0 · 1 + eps`."""
    with Context.acquire() as ctx:
        q_hbm = host.upload(ctx, np.zeros((N, G, D)), bf16, NGD)
        zeros = host.upload(ctx, np.zeros((T, N, D)), bf16, TND)
        state = [HbmTensor.new(f32, K.Chip, NG) for _ in range(2)]
        out = HbmTensor.new(bf16, K.Chip, NGD)
        mask = host.upload(ctx, np.zeros(T), f32, TM)
        launch(K.attention_forward, ctx, q_hbm, zeros, zeros, mask, *state, out)
        max_, sum_, out = (host.read(ctx, t) for t in (*state, out))
    assert not max_.any() and not out.any() and np.all(sum_ == EPS)


def test_attention_forward_persists_running_max():
    """Upstream: keys of 1 in the middle chunk raise the max to `D / sqrt(D)`; the third (zero) chunk sees it
    only if the second stored it."""
    ones = np.ones((T, N, D), np.float32)
    zero = zero_chunk()
    with Context.acquire() as ctx:
        max_, _, _ = host.run_attention(ctx, np.ones((N, G, D)), [zero, (ones, zero[1], zero[2]), zero])
    assert np.all(np.abs(max_ - np.sqrt(D)) < 0.05), max_


def attention_inputs():
    rng = np.random.default_rng(0x00A77E17)
    q = seeded_bf16(rng, (N, G, D), 0.2)
    k0, k1, v0, v1 = (seeded_bf16(rng, (T, N, D), 0.2) for _ in range(4))
    return q, (k0, v0), (k1, v1)


@pytest.fixture(scope="module")
def attention_cpu():
    q, (k0, v0), (k1, v1) = attention_inputs()
    ones = np.ones(T, np.float32)
    with Context.acquire() as ctx:
        return host.run_attention(ctx, q, [(k0, v0, ones), (k1, v1, ones)])


def test_attention_two_chunks_matches_scalar_reference(attention_cpu):
    max_, sum_, out = attention_cpu
    q, (k0, v0), (k1, v1) = attention_inputs()
    keys, values = np.concatenate([k0, k1]), np.concatenate([v0, v1])  # [2T, N, D]
    heads = np.repeat(np.arange(N), G)  # query head → its KV head
    scores = np.einsum("hd,thd->ht", q.reshape(N * G, D), keys[:, heads]) / np.float32(np.sqrt(D))
    expected_max = scores.max(-1)
    weight = np.exp(scores - expected_max[:, None])
    expected = np.einsum("ht,thd->hd", weight, values[:, heads]) / weight.sum(-1, keepdims=True)
    normalized = R.to_bf16(out.reshape(N * G, D) / sum_.reshape(N * G, 1))
    assert_close(normalized, expected, 0.12, 0.12)
    assert np.all(np.abs(max_.ravel() - expected_max) < 0.1)


def test_attention_two_chunks_equal_the_reference_bit_for_bit(attention_cpu):
    q, (k0, v0), (k1, v1) = attention_inputs()
    ones = np.ones(T, np.float32)
    state = R.attention_first(q, k0, v0, ones)
    expected = R.attention_next(q, k1, v1, ones, *state)
    assert all(same_bits(a, b) for a, b in zip(attention_cpu, expected, strict=True))


@pytest.mark.parametrize("kernel", [K.attention_forward_first, K.attention_forward], ids=lambda k: k.__name__)
def test_attention_on_the_simulator(kernel):
    """The simulator, then the CPU backend, bit for bit."""
    q, (k0, v0), _ = attention_inputs()
    mask = (np.arange(T) < 300).astype(np.float32)

    def scenario(launch_):
        with Context.acquire() as ctx:
            state = [host.upload(ctx, [[0.5, -0.5]] * N, f32, NG), host.upload(ctx, np.ones((N, G)), f32,
                                                                                        NG)]  # fmt: skip
            out = host.upload(ctx, q, bf16, NGD)
            args = [host.upload(ctx, a, bf16, NGD if a is q else TND) for a in (q, k0, v0)]
            launch_(kernel, ctx, *args, host.upload(ctx, mask, f32, TM), *state, out)
            return [host.read(ctx, t) for t in (*state, out)]

    with backend("npu") as launch_:
        npu = scenario(launch_)
    with backend("cpu") as launch_:
        cpu = scenario(launch_)
    assert all(same_bits(a, b) for a, b in zip(npu, cpu, strict=True))


# ---- decoder --------------------------------------------------------------------------------------------


def test_decoder_step_wires_kernel_boundaries():
    """Upstream: projection → attention (one chunk) → decoder with zero weights is the residual identity."""
    rng = np.random.default_rng(0xDEC0DE)
    x, residual = seeded_bf16(rng, H, 0.2), seeded_bf16(rng, H, 0.2)
    ones = lambda n: np.ones(n, np.float32)  # noqa: E731
    proj = ProjectionWeights(np.zeros((Q, H)), np.zeros((P, H)), np.zeros((P, H)), ones(H), ones(D), ones(D))
    dec = DecoderWeights(np.zeros((H, Q)), np.zeros(H), np.zeros((L, H)), np.zeros((L, H)), np.zeros((H, L)))
    with Context.acquire() as ctx:
        q, k_cache, v_cache = host.run_projection(ctx, x, proj, 0, ones(D), np.zeros(D))
        _, sum_, out = host.run_attention(ctx, q, [(k_cache, v_cache, ones(T))])
        result = host.run_decoder(ctx, out, sum_, residual, dec)
    assert_close(result, residual, 0.05, 0.05)


def decoder_inputs():
    rng = np.random.default_rng(0xDEC0DE)
    x = seeded_bf16(rng, (N, G, D), 0.05)
    residual = seeded_bf16(rng, H, 0.05)
    weights = DecoderWeights(
        seeded_bf16(rng, (H, Q), 0.02),
        seeded_bf16(rng, H, 1.0),
        seeded_bf16(rng, (L, H), 0.01),
        seeded_bf16(rng, (L, H), 0.01),
        seeded_bf16(rng, (H, L), 0.01),
    )
    return x, np.ones((N, G), np.float32), residual, weights


@pytest.fixture(scope="module")
def decoder_cpu():
    with Context.acquire() as ctx:
        return host.run_decoder(ctx, *decoder_inputs())


def test_decoder():
    """Zeros: the softmax sum 0 makes the attention `0 / 0`, NaN, and the NaN reaches every output, as in the
    reference (upstream checks nothing here)."""
    zeros = DecoderWeights(np.zeros((H, Q)), np.zeros(H), np.zeros((L, H)), np.zeros((L, H)), np.zeros((H, L)))
    with Context.acquire() as ctx:
        out = host.run_decoder(ctx, np.zeros((N, G, D)), np.zeros((N, G)), np.zeros(H), zeros)
    expected = R.decoder(np.zeros((N, G, D)), np.zeros((N, G), np.float32), np.zeros(H), *vars(zeros).values())
    assert np.all(np.isnan(expected)) and np.all(np.isnan(out))


def test_decoder_matches_scalar_reference(decoder_cpu):
    x, _, residual, w = decoder_inputs()
    after_attention = residual + (w.o * x.reshape(Q)).sum(-1)
    after_norm = rms(after_attention, w.post_rms)
    up, gate = (w.up * after_norm).sum(-1), (w.gate * after_norm).sum(-1)
    expected = after_attention + (w.down * (gate / (1 + np.exp(-gate)) * up)).sum(-1)
    assert_close(decoder_cpu, expected, 0.25, 0.2)


def test_decoder_equals_the_reference_bit_for_bit(decoder_cpu):
    x, sum_, residual, w = decoder_inputs()
    assert same_bits(decoder_cpu, R.decoder(x, sum_, residual, w.o, w.post_rms, w.up, w.gate, w.down))


def test_decoder_on_the_simulator(decoder_cpu):
    with backend("npu") as launch_, Context.acquire() as ctx:
        assert same_bits(host.run_decoder(ctx, *decoder_inputs(), launch_), decoder_cpu)


# ---- final layer ----------------------------------------------------------------------------------------


def final_inputs():
    """Upstream's: a random input and norm weight; the lm_head weight zero but for column 0 of the W real rows."""
    rng = np.random.default_rng(0xF1A1)
    x, rms_weight = seeded_bf16(rng, H, 0.1), seeded_bf16(rng, H, 1.0)
    column = R.to_bf16((np.arange(W) % 17) * np.float32(0.01) - np.float32(0.08))
    weight = np.zeros((W, H), np.float32)
    weight[:, 0] = column
    return x, rms_weight, weight


@pytest.fixture(scope="module")
def final_cpu():
    x, rms_weight, weight = final_inputs()
    with Context.acquire() as ctx:
        return host.run_final_layer(ctx, x, rms_weight, host.upload_lm_head(ctx, weight))


def test_final_layer():
    """Zeros: a zero norm weight gives zero logits."""
    with Context.acquire() as ctx:
        lm_head = HbmTensor.new(bf16, K.Chip, K.LmHeadWeight)
        logits = host.run_final_layer(ctx, np.zeros(H), np.zeros(H), lm_head)
    assert logits.shape == (Wp,) and not logits.any()


def test_final_layer_matches_scalar_reference(final_cpu):
    x, rms_weight, weight = final_inputs()
    expected = rms(x, rms_weight)[0] * weight[:, 0]
    assert_close(final_cpu[:W], expected, 0.08, 0.08)


def test_final_layer_equals_the_reference_bit_for_bit(final_cpu):
    """Only column 0 is non-zero, so the reference's fold over H is its first term (adding ±0 changes nothing)."""
    x, rms_weight, weight = final_inputs()
    expected = R.bf(R.matvec(weight[:, :1], R.rmsnorm(x, rms_weight)[:1]))
    assert same_bits(final_cpu[:W], expected)
    assert not final_cpu[W:].any()  # the padding rows are zero in HBM


def test_final_layer_on_the_simulator(final_cpu):
    x, rms_weight, weight = final_inputs()
    with backend("npu") as launch_, Context.acquire() as ctx:
        assert same_bits(host.run_final_layer(ctx, x, rms_weight, host.upload_lm_head(ctx, weight), launch_), final_cpu)
