"""The transformer example on the backend the run selects: the CPU backend under `pytest`, the EDFs on the
simulator under `furiosa-opt test`. Each entry point against the numpy reference bit for bit (upstream's
`transformer.py verify`, which diffs each kernel against its torch reference), the reference's own pieces
against upstream's formulas, and the host program. Upstream's `tests/transformer_tests.rs` is ported in
`tests/upstream/test_transformer.py`.

Every check runs on both backends.
"""

from __future__ import annotations

import numpy as np
import pytest

from furiosa_opt import Context
from transformer import host
from transformer import reference as R
from transformer.__main__ import main
from transformer.host import DecoderWeights, ProjectionWeights, seeded_bf16, seeded_norm

H, Q, P, D, L, T, W = 1024, 2048, 1024, 128, 3072, 512, 151936


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_embedding_copies_the_row():
    row = seeded_bf16(np.random.default_rng(3), H, 2.0)
    with Context.acquire() as ctx:
        assert same_bits(host.run_embedding(ctx, row), row)


def test_projection_equals_the_reference():
    rng = np.random.default_rng(11)
    x = seeded_bf16(rng, H, 1.0)
    w = ProjectionWeights(
        seeded_bf16(rng, (Q, H), 0.05), seeded_bf16(rng, (P, H), 0.05), seeded_bf16(rng, (P, H), 0.05),
        seeded_norm(rng, H), seeded_norm(rng, D), seeded_norm(rng, D),
    )  # fmt: skip
    cos, sin = R.rope_tables(517)  # chunk 1, row 5
    with Context.acquire() as ctx:
        q, k_cache, v_cache = host.run_projection(ctx, x, w, 5, cos, sin)
    rq, rk, rv = R.projection(x, w.q, w.k, w.v, w.input_rms, w.q_rms, w.k_rms, cos, sin)
    assert same_bits(q, rq) and same_bits(k_cache[5], rk) and same_bits(v_cache[5], rv)


def test_decoder_equals_the_reference():
    rng = np.random.default_rng(12)
    x, rx = seeded_bf16(rng, (8, 2, D), 1.0), seeded_bf16(rng, H, 1.0)
    sum_ = rng.uniform(0.5, 4.0, (8, 2)).astype(np.float32)
    w = DecoderWeights(
        seeded_bf16(rng, (H, Q), 0.02), seeded_norm(rng, H), seeded_bf16(rng, (L, H), 0.03),
        seeded_bf16(rng, (L, H), 0.03), seeded_bf16(rng, (H, L), 0.02),
    )  # fmt: skip
    with Context.acquire() as ctx:
        got = host.run_decoder(ctx, x, sum_, rx, w)
    assert same_bits(got, R.decoder(x, sum_, rx, w.o, w.post_rms, w.up, w.gate, w.down))


def test_final_layer_equals_the_reference_on_a_band_of_rows():
    """Rows 0…8191 (tile 0) and the last real rows carry random weights, the rest zero: the reference folds
    only the band (a zero row gives +0 logits), which keeps it fast."""
    rng = np.random.default_rng(13)
    x, norm = seeded_bf16(rng, H, 1.0), seeded_norm(rng, H)
    weight = np.zeros((W, H), np.float32)
    band = np.r_[0:8192, W - 100 : W]
    weight[band] = seeded_bf16(rng, (band.size, H), 0.05)
    with Context.acquire() as ctx:
        logits = host.run_final_layer(ctx, x, norm, host.upload_lm_head(ctx, weight))
    expected = np.zeros(155648, np.float32)
    expected[band] = R.final_layer(x, norm, weight[band])
    assert same_bits(logits, expected)


def test_attention_over_two_chunks_equals_the_reference():
    rng = np.random.default_rng(14)
    q = seeded_bf16(rng, (8, 2, D), 1.0)
    chunks = [(seeded_bf16(rng, (T, 8, D), 1.0), seeded_bf16(rng, (T, 8, D), 1.0)) for _ in range(2)]
    mask = (np.arange(T) <= 40).astype(np.float32)
    with Context.acquire() as ctx:
        got = host.run_attention(ctx, q, [(*chunks[0], np.ones(T, np.float32)), (*chunks[1], mask)])
    state = R.attention_first(q, *chunks[0], np.ones(T, np.float32))
    expected = R.attention_next(q, *chunks[1], mask, *state)
    assert all(same_bits(a, b) for a, b in zip(got, expected, strict=True))


# ---- the reference's pieces against upstream's formulas ----


def test_rope_tables_are_upstreams():
    """transformer.py's `Pipeline.rope`: theta 1e6, cos over both halves, sin negated on the first half."""
    position = 777
    inv_freq = 1.0 / (1_000_000.0 ** (np.arange(0, D, 2) / D))
    freqs = position * inv_freq
    cos, sin = R.rope_tables(position)
    assert np.allclose(cos, np.r_[np.cos(freqs), np.cos(freqs)], atol=2**-8)
    assert np.allclose(sin, np.r_[-np.sin(freqs), np.sin(freqs)], atol=2**-8)
    assert same_bits(cos, R.to_bf16(cos)) and same_bits(sin, R.to_bf16(sin))


def test_bf_rounds_to_nearest_even_and_flushes_subnormals():
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-9), 1e-40, -1e-40, np.inf], np.float32)
    got = R.bf(x)
    assert same_bits(got, np.array([1.0, 1 + 2**-6, -1.0, 0.0, -0.0, np.inf], np.float32))


def test_reference_projection_is_upstreams_torch_math_within_bf16():
    """reference.projection against float64 math of upstream's torch model (RMSNorm, q/k norms, RoPE with the
    sign folded into sin): within a few bf16 ulps."""
    rng = np.random.default_rng(15)
    x = seeded_bf16(rng, H, 1.0)
    w = [seeded_bf16(rng, s, 0.05) for s in ((Q, H), (P, H), (P, H))]
    norms = [seeded_norm(rng, n) for n in (H, D, D)]
    cos, sin = R.rope_tables(9)

    def rms(v, weight):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + 6.25e-8) * weight

    h = rms(x.astype(np.float64), norms[0])
    q = rms((w[0] @ h).reshape(8, 2, D), norms[1])
    k = rms((w[1] @ h).reshape(8, D), norms[2])
    half = D // 2
    rot = lambda t: np.concatenate([t[..., half:], t[..., :half]], -1)  # noqa: E731
    rq, rk, rv = R.projection(x, *w, *norms, cos, sin)
    assert np.allclose(rq, q * cos + rot(q) * sin, atol=0.05, rtol=0.03)
    assert np.allclose(rk, k * cos + rot(k) * sin, atol=0.05, rtol=0.03)
    assert np.allclose(rv, (w[2] @ h).reshape(8, D), atol=0.02, rtol=0.02)


# ---- the host program ----


def test_verify_passes(capsys):
    assert main(["verify", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "e+" in line or "e-" in line]  # one per output checked
    assert "PASS" in out and len(rows) == 9  # embedding, q, k, v, attention max / sum / out, decoder, final_layer
    assert all(row.endswith("bit-exact") for row in rows)


def test_the_command_line_refuses_a_run_without_layers():
    with pytest.raises(SystemExit):
        main(["run"])
