"""The numpy math of the six entry points (kernel.py), written apart from furiosa-opt.

Upstream's counterpart is the torch model of `furiosa-opt-examples/src/transformer/transformer.py` (f32 with
bf16 parameters). This one follows the kernels' precision step by step instead:

* bf16 values are carried as float32 arrays holding bf16 values; `bf` narrows f32 to bf16 as the Cast
  Engine does (round to nearest even, an f32 subnormal flushed to a zero of its sign) and widens back.
* every f32 op is rounded once (numpy float32); sums fold from +0.0 one term at a time in the order the
  kernel reads them (`fold`), never pairwise; `exp` is the C library's `expf`, `sqrt` is IEEE.
* a projection `W · x` multiplies bf16 by bf16 (exact in f32) and folds over the contracted axis in index
  order, then narrows to bf16 (the down projection narrows after its switch, the same value).

Functions take float32 arrays and return float32 arrays (bf16-valued where the kernel stores bf16).
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

H, Q, P, N, G, D, L, T = 1024, 2048, 1024, 8, 2, 128, 3072, 512
W, Wp = 151936, 155648
EPS = np.float32(6.25e-8)
SQRT_HEAD_DIM = np.float32(11.313708)
ROPE_THETA = 1_000_000.0

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.expf.restype = ctypes.c_float
_libm.expf.argtypes = [ctypes.c_float]
_expf = np.frompyfunc(lambda v: _libm.expf(float(v)), 1, 1)


def expf(x: np.ndarray) -> np.ndarray:
    """The C library's `expf`, elementwise, float32 in and out."""
    x = np.asarray(x, dtype=np.float32)
    return np.asarray(_expf(x), dtype=np.float32).reshape(x.shape)


def bf(x: np.ndarray) -> np.ndarray:
    """f32 → bf16 → f32 as the Cast Engine narrows: nearest even, f32 subnormals to signed zero."""
    n = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    subnormal = ((n & 0x7F800000) == 0) & ((n & 0x007FFFFF) != 0)
    n = np.where(subnormal, n & np.uint32(0x80000000), n)
    rounded = (n + np.uint32(0x7FFF) + ((n >> 16) & 1)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), np.float32(np.nan), rounded.view(np.float32)).astype(np.float32)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Host-side rounding of any array to bf16 values (float32 carrier): nearest even, subnormals kept."""
    import ml_dtypes

    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def fold(terms: np.ndarray, axis: int = -1) -> np.ndarray:
    """Σ over `axis` in f32, from +0.0, one term at a time in index order."""
    terms = np.moveaxis(np.asarray(terms, dtype=np.float32), axis, 0)
    total = np.zeros(terms.shape[1:], dtype=np.float32)
    for term in terms:
        total = total + term
    return total


def matvec(weight: np.ndarray, x: np.ndarray) -> np.ndarray:
    """`weight · x` folded in f32 over the last axis in index order (the Contraction Engine's order), not
    narrowed: `[..., K] · [K]` → `[...]`."""
    weight = np.asarray(weight, dtype=np.float32)
    total = np.zeros(weight.shape[:-1], dtype=np.float32)
    for k in range(weight.shape[-1]):
        total = total + weight[..., k] * np.float32(x[k])
    return total


def rmsnorm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """`rmsnorm::forward` (and forward_q / forward_k over the last axis): `x · w / sqrt(Σx²/n + eps)`."""
    x = np.asarray(x, dtype=np.float32)
    n = np.float32(x.shape[-1])
    ms = fold(x * x) / n + EPS
    rms = np.sqrt(ms).astype(np.float32)
    return bf((x * np.asarray(weight, dtype=np.float32)) / rms[..., None])


def rotate_half(x: np.ndarray) -> np.ndarray:
    """The halves of the last axis swapped (the sign lives in the host's `sin`)."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., half:], x[..., :half]], axis=-1)


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    return bf(x * cos + rotate_half(x) * sin)


def projection(x, q_weight, k_weight, v_weight, input_rms, q_rms, k_rms, cos, sin):
    """`ops::projection` for one token: `(q [N, G, D], k [N, D], v [N, D])`; k and v are the rows the kernel
    scatters into the caches."""
    h = rmsnorm(x, input_rms)
    q = bf(matvec(q_weight, h)).reshape(N, G, D)
    k = bf(matvec(k_weight, h)).reshape(N, D)
    v = bf(matvec(v_weight, h)).reshape(N, D)
    q = rmsnorm(q, q_rms)
    k = rmsnorm(k, k_rms)
    return rope(q, cos, sin), rope(k, cos, sin), v


def _chunk(q, k, v, mask, max_):
    """One KV chunk against the (running) max: `(exp [N, G, T], Σexp + eps [N, G], exp · V [N, G, D])`."""
    scores = np.zeros((N, G, T), dtype=np.float32)
    kh = np.asarray(k, dtype=np.float32).transpose(1, 0, 2)  # [N, T, D]
    for d in range(D):
        scores = scores + q[:, :, d, None] * kh[:, None, :, d]
    scores = bf(scores / SQRT_HEAD_DIM)
    exp = np.minimum(expf(scores - max_[..., None]), np.asarray(mask, dtype=np.float32))
    sum_ = fold(exp) + EPS
    weight = bf(exp).reshape(N, G, T // 16, 16)
    vh = np.asarray(v, dtype=np.float32).transpose(1, 0, 2).reshape(N, T // 16, 16, D)  # [N, T/16, 16, D]
    partial = np.zeros((N, G, T // 16, D), dtype=np.float32)
    for t in range(16):  # each slice folds its 16 keys
        partial = partial + weight[:, :, :, t, None] * vh[:, None, :, t, :]
    out = bf(fold(bf(partial), axis=2))  # the inter-slice Add over the 32 slices of a head
    return exp, sum_, out


def row_max(q, k) -> np.ndarray:
    kh = np.asarray(k, dtype=np.float32).transpose(1, 0, 2)
    scores = np.zeros((N, G, T), dtype=np.float32)
    for d in range(D):
        scores = scores + q[:, :, d, None] * kh[:, None, :, d]
    return bf(scores / SQRT_HEAD_DIM).max(axis=-1)


def attention_first(q, k, v, mask):
    """`ops::attention_forward_first`: `(max [N, G], sum [N, G], out [N, G, D])` (out unnormalised)."""
    max_ = row_max(q, k)
    _, sum_, out = _chunk(q, k, v, mask, max_)
    return max_, sum_, out


def attention_next(q, k, v, mask, max_, sum_, out):
    """`ops::attention_forward`: the chunk folded into the running state."""
    new_max = np.maximum(row_max(q, k), max_)
    alpha = expf(max_ - new_max)
    _, expsum, result = _chunk(q, k, v, mask, new_max)
    new_sum = sum_ * alpha + expsum
    new_out = bf(bf(out * alpha[..., None]) + result)
    return new_max, new_sum.astype(np.float32), new_out


def decoder(x, sum_, rx, o_weight, post_rms, up_weight, gate_weight, down_weight):
    """`ops::decoder`: the new hidden state `[H]`."""
    with np.errstate(invalid="ignore", divide="ignore"):  # a zero sum gives NaN / inf, as the kernel does
        attn = bf(np.asarray(x, dtype=np.float32) / sum_[..., None]).reshape(Q)
    o = bf(matvec(o_weight, attn))
    rx = bf(o + rx)
    h = rmsnorm(rx, post_rms)
    up = bf(matvec(up_weight, h))
    gate = bf(matvec(gate_weight, h))
    silu = gate * (np.float32(1) / (np.float32(1) + expf(-gate)))
    act = bf(up * silu)
    down = bf(matvec(down_weight, act))
    return bf(down + rx)


def final_layer(x, rms_weight, lm_head_weight):
    """`ops::final_layer`: logits `[rows of lm_head_weight]`."""
    return bf(matvec(lm_head_weight, rmsnorm(x, rms_weight)))


def rope_tables(position: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin `[D]` for one position, bf16-valued, sin's first half negated (rotate_half's sign), as
    upstream's host program builds them."""
    inv_freq = 1.0 / (ROPE_THETA ** (np.arange(0, D, 2, dtype=np.float32) / D))
    freqs = np.float32(position) * inv_freq.astype(np.float32)
    cos = np.concatenate([np.cos(freqs), np.cos(freqs)])
    sin = np.concatenate([-np.sin(freqs), np.sin(freqs)])
    return to_bf16(cos), to_bf16(sin)
