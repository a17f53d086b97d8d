"""Integer narrowing and widening as the engines do them, and the Vector Engine's fixed-point conversions.

Narrowing wraps (Rust's ``as``), never saturates or refuses: the Cast Engine and upstream's ``from_i32``
keep the low bits. User data is range-checked instead, by ``convert.from_user``.
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.dtypes.bits import DTypeError, Format, _round_half_away


def _check_int(dtype: Format) -> tuple[int, int]:
    if dtype.int_range is None:
        raise DTypeError(f"{dtype.name} is not an integer dtype")
    return dtype.int_range


def _int_array(x) -> np.ndarray:
    v = np.asarray(x)
    if v.dtype.kind not in "biu":
        raise DTypeError(f"expected an integer array, got {v.dtype}")
    return v


def wrap_int(x, dtype: Format) -> np.ndarray:
    """Rust ``as`` / ``from_i32`` narrowing: keep the low bits of the type's range and sign-extend."""
    lo, hi = _check_int(dtype)
    return (((_int_array(x).astype(np.int64) - lo) & (hi - lo)) + lo).astype(dtype.storage)


def widen_int(x) -> np.ndarray:
    """Sign extension (zero extension for u8) of integer storage to the i32 compute width."""
    return _int_array(x).astype(np.int32)


def _check_int_width(int_width: int) -> None:
    if not 0 <= int_width < 32:
        raise DTypeError(f"fixed-point integer width must be in [0, 31], got {int_width}")


def fxp_to_fp(x, int_width: int) -> np.ndarray:
    """VE ``fxp_to_fp``: ``float32(RNE(x * 2^(iw - 31)))``; the f64 product is exact, the cast rounds once."""
    _check_int_width(int_width)
    return (np.asarray(x, dtype=np.int32).astype(np.float64) * 2.0 ** (int_width - 31)).astype(np.float32)


def fp_to_fxp(x, int_width: int) -> np.ndarray:
    """VE ``fp_to_fxp``: NaN -> i32 max/min by sign, else ``round_half_away(x * 2^(31 - iw))`` saturated."""
    _check_int_width(int_width)
    v = np.asarray(x, dtype=np.float32)
    nan = np.isnan(v)
    scaled = _round_half_away(np.where(nan, 0, v).astype(np.float64) * 2.0 ** (31 - int_width))
    out = np.clip(scaled, -(2**31), 2**31 - 1).astype(np.int32)
    nan_fill = np.where(np.signbit(v), np.int32(-(2**31)), np.int32(2**31 - 1))
    return np.where(nan, nan_fill, out)
