"""Plain-numpy references for the vector-kernels kernels, written apart from furiosa-opt.

They compute what the kernels compute, in the same order and precision: every value is f32 and every
op rounds once (IEEE single precision, subnormals kept); a row reduction folds one column at a time,
d = 0, 1, …, D - 1, from -inf (max) or +0.0 (sum), never pairwise; `exp` and `sqrt` are the C
library's `expf` and `sqrtf`, called through ctypes.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.expf.restype, _LIBM.expf.argtypes = ctypes.c_float, [ctypes.c_float]
_LIBM.sqrtf.restype, _LIBM.sqrtf.argtypes = ctypes.c_float, [ctypes.c_float]


def _libm(fn, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return np.array([fn(v) for v in x.ravel().tolist()], dtype=np.float32).reshape(x.shape)


def expf(x: np.ndarray) -> np.ndarray:
    return _libm(_LIBM.expf, x)


def sqrtf(x: np.ndarray) -> np.ndarray:
    return _libm(_LIBM.sqrtf, x)


def row_max(x: np.ndarray) -> np.ndarray:
    """max over the last axis, folded left to right from -inf; a tie keeps the value held."""
    acc = np.full(x.shape[:-1], -np.inf, dtype=np.float32)
    for d in range(x.shape[-1]):
        acc = np.where(x[..., d] > acc, x[..., d], acc)
    return acc


def row_sum(x: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Σ over the last axis in f32, folded one column at a time from +0.0 (right to left if `reverse`)."""
    acc = np.zeros(x.shape[:-1], dtype=np.float32)
    columns = range(x.shape[-1])
    for d in reversed(columns) if reverse else columns:
        acc = acc + x[..., d]
    return acc


def softmax(x: np.ndarray, reverse_sum: bool = False) -> np.ndarray:
    """exp(x - max) / Σ exp(x - max) per row, as softmax_kernel computes it."""
    x = np.asarray(x, dtype=np.float32)
    e = expf(x - row_max(x)[:, None])
    return e / row_sum(e, reverse_sum)[:, None]


def rmsnorm(
    x: np.ndarray, w: np.ndarray, eps: float, scale_first: bool = True, reverse_sum: bool = False
) -> np.ndarray:
    """(x · w) / sqrtf(Σ x² / D + eps) per row, as rmsnorm_kernel computes it; `scale_first=False`
    gives the other order, (x / rms) · w, and `reverse_sum=True` the other fold order, neither of which
    the kernel uses."""
    x, w = np.asarray(x, dtype=np.float32), np.asarray(w, dtype=np.float32)
    mean_square = row_sum(x * x, reverse_sum) / np.float32(x.shape[-1]) + np.float32(eps)
    rms = sqrtf(mean_square)[:, None]
    return (x * w) / rms if scale_first else (x / rms) * w
