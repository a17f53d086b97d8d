"""Plain-numpy references for the base-template kernels, written apart from furiosa-opt.

Floats fold the way the hardware's CPU model does: sequentially in f32 from +0.0, in ascending
contracted index, no FMA and no pairwise sums; the f32 result then takes the hardware f32 → bf16
conversion (round to nearest even, subnormals flushed to zero, one canonical NaN).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

F32_TINY = np.float32(2.0**-126)  # smallest normal f32; bf16 shares the exponent range


def widen_bf16(x: np.ndarray) -> np.ndarray:
    """bf16 → f32 as the hardware does it: subnormals become signed zero."""
    wide = np.asarray(x).astype(np.float32)
    return np.where(np.abs(wide) < F32_TINY, np.float32(0.0) * wide, wide)


def round_bf16(x: np.ndarray) -> np.ndarray:
    """f32 → bf16 as the hardware does it."""
    x = np.asarray(x, dtype=np.float32)
    flushed = np.where(np.abs(x) < F32_TINY, np.float32(0.0) * x, x)
    out = flushed.astype(ml_dtypes.bfloat16)
    return np.where(np.isnan(x), np.array(np.nan, dtype=ml_dtypes.bfloat16), out)


def sequential_dot(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Σ_k lhs[..., k]·rhs[..., k] folded one k at a time in f32 (broadcasting over the rest)."""
    lhs, rhs = widen_bf16(lhs), widen_bf16(rhs)
    acc = np.zeros(np.broadcast_shapes(lhs.shape[:-1], rhs.shape[:-1]), dtype=np.float32)
    for k in range(lhs.shape[-1]):
        acc = acc + lhs[..., k] * rhs[..., k]
    return acc


def within(actual: np.ndarray, expected64: np.ndarray, relative: float, absolute: float) -> np.ndarray:
    """Upstream's tolerance: |actual − expected| ≤ max(relative·|expected|, absolute)."""
    diff = np.abs(np.asarray(actual, dtype=np.float64) - expected64)
    return diff <= np.maximum(relative * np.abs(expected64), absolute)
