"""The numpy forward pass that `forward` (kernel.py) computes, bit for bit, written apart from furiosa-opt.

Upstream's counterpart is `Model.cpu` in `furiosa-opt-examples/src/mnist/mnist.py` (torch, f32 throughout);
this one follows the kernel's precision instead, step by step:

1. Every bf16 operand is widened to f32 the way the engines read bf16 (the fetch adapter and the Contraction
   Engine): exactly, except that a subnormal becomes a zero of its sign and a NaN the canonical 0x7fc00000.
2. fc1: for each hidden unit, `Σ_x w1[h, x] · image[x]` in f32, folded from +0.0 one term at a time in the
   order x = 0, 1, …, 799 (each product and each sum rounded once; no FMA, no pairwise sums).
3. That sum is narrowed to bf16 as the Cast Engine does: round to nearest even, an f32 subnormal flushed to a
   zero of its sign, NaN to 0x7fc0.
4. Widened again, the bias is added in f32 (the clip unit's Add), then ReLU is `max(v, 0.0)` as Rust's
   `f32::max` (a NaN gives 0.0; `-0.0` stays `-0.0`), and the result is narrowed to bf16.
5. fc2: `Σ_h w2[c, h] · hidden[h]` folded in f32 over h = 0, 1, …, 255, narrowed to bf16, the bias added in
   f32, narrowed to bf16: the 16 logits (classes 10…15 are padding: zero weights and bias give +0.0).

All functions take and give raw bf16 codes (`uint16`) or float32 arrays, and batch over leading axes.
"""

from __future__ import annotations

import numpy as np

EXP_MASK = np.uint32(0x7F800000)
MANT_MASK = np.uint32(0x007FFFFF)


def widen(codes: np.ndarray) -> np.ndarray:
    """bf16 codes → f32 as the engines read them: subnormals to signed zero, NaN to 0x7fc00000."""
    n = np.asarray(codes, dtype=np.uint16).astype(np.uint32) << 16
    exponent, mantissa = n & EXP_MASK, n & MANT_MASK
    n = np.where((exponent == 0) & (mantissa != 0), n & np.uint32(0x80000000), n)
    n = np.where((exponent == EXP_MASK) & (mantissa != 0), np.uint32(0x7FC00000), n)
    return n.view(np.float32)


def narrow(values: np.ndarray) -> np.ndarray:
    """f32 → bf16 codes as the Cast Engine rounds: nearest even, f32 subnormals to signed zero, NaN to 0x7fc0."""
    n = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    exponent, mantissa = n & EXP_MASK, n & MANT_MASK
    rounded = (n + np.uint32(0x7FFF) + ((n >> 16) & np.uint32(1))) >> 16  # RNE; a carry may reach inf
    out = np.where((exponent == 0) & (mantissa != 0), (n >> 16) & np.uint32(0x8000), rounded)
    out = np.where((exponent == EXP_MASK) & (mantissa != 0), np.uint32(0x7FC0), out)
    return out.astype(np.uint16)


def sequential_dot(weight: np.ndarray, x: np.ndarray) -> np.ndarray:
    """`out[..., o] = Σ_k weight[o, k] · x[..., k]` in f32, folded from +0.0 over k = 0, 1, … in order."""
    weight, x = np.asarray(weight, dtype=np.float32), np.asarray(x, dtype=np.float32)
    acc = np.zeros((*x.shape[:-1], weight.shape[0]), dtype=np.float32)
    with np.errstate(all="ignore"):
        for k in range(weight.shape[1]):
            acc = acc + weight[:, k] * x[..., k, None]
    return acc


def relu(values: np.ndarray) -> np.ndarray:
    """Rust's `v.max(0.0)`: 0.0 where v is NaN or negative; v otherwise (so -0.0 stays -0.0)."""
    return np.where(np.isnan(values) | (values < 0), np.float32(0.0), values).astype(np.float32)


def hidden(image: np.ndarray, w1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """bf16 codes of `relu(bf16(w1 · image) + b1)`: [..., 256] from image codes [..., 800]."""
    matmul = widen(narrow(sequential_dot(widen(w1), widen(image))))
    with np.errstate(all="ignore"):
        return narrow(relu(matmul + widen(b1)))


def forward(image: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """bf16 codes of the 16 logits for image codes [..., 800] (weights as the kernel takes them, bf16 codes:
    w1 [256, 800], b1 [256], w2 [16, 256], b2 [16])."""
    h = hidden(image, w1, b1)
    matmul = widen(narrow(sequential_dot(widen(w2), widen(h))))
    with np.errstate(all="ignore"):
        return narrow(matmul + widen(b2))


def predict(logits: np.ndarray, classes: int = 10) -> np.ndarray:
    """The class of bf16 logit codes [..., 16] as upstream's test picks it: the largest of the first `classes`
    logits under `f32::total_cmp` (-0.0 below +0.0, NaNs at the ends by sign), the last one on a tie
    (`Iterator::max_by` keeps the last maximum)."""
    bits = widen(logits)[..., :classes].view(np.int32)
    keys = bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))  # total order as signed integers
    return classes - 1 - np.argmax(keys[..., ::-1], axis=-1)
