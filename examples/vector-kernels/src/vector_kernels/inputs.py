"""Input generators shared by the host programs, their tests and the differential harness's hooks."""

from __future__ import annotations

import numpy as np

WIDE_ROWS = 8  # leading softmax rows whose spread makes exp underflow to subnormals and to zero


def logits(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Attention-like f32 logits: N(0, 4²) per row, except the first WIDE_ROWS rows at N(0, 40²), whose
    smallest exponentials fall below 2⁻¹²⁶ (subnormal) or below 2⁻¹⁴⁹ (zero)."""
    scale = np.full((rows, 1), 4.0)
    scale[:WIDE_ROWS] = 40.0
    return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)


def activations(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Hidden states whose rows differ in magnitude by up to 10⁴ (each row N(0, 1) times 10^U(-2, 2))."""
    scale = 10.0 ** rng.uniform(-2.0, 2.0, (rows, 1))
    return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)


def gains(rng: np.random.Generator, cols: int) -> np.ndarray:
    """Per-column RMSNorm weights near 1, as a trained model has them."""
    return (1.0 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
