"""Conversions by dtype: the engines' hardware legs (``to_f32``, ``from_f32``, ``convert``, the Fetch
Adapter's ``table_lookup``) and the user's (``from_user``, upstream's ``rand``).

The two families differ as the package docstring says; both dispatch through the dtype table's tables.
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.dtypes.bits import DTypeError
from furiosa_opt.dtypes.floats import bf16_from_f32_hw, bf16_from_f32_relu_hw
from furiosa_opt.dtypes.ints import _check_int, widen_int, wrap_int
from furiosa_opt.dtypes.table import _FROM_F32, _FROM_USER, _TO_F32, DType, bf16, f4e2m1, f8e4m3, f8e5m2, f32, i32


def _float_only(dtype: DType) -> None:
    if not dtype.is_float:
        raise DTypeError(f"expected a float dtype, got {dtype.name}")


def to_f32(x, dtype: DType) -> np.ndarray:
    """Hardware widening of a float ``dtype`` storage array to f32."""
    _float_only(dtype)
    return _TO_F32[dtype](x)


def from_f32(x, dtype: DType) -> np.ndarray:
    """Hardware narrowing of an f32 array to a float ``dtype`` (flushing bf16 leg, f8 rules)."""
    _float_only(dtype)
    return _FROM_F32[dtype](x)


def table_lookup(values, source: DType, target: DType) -> np.ndarray:
    """The fetch adapter's lookup table: each code's value in `target`. Upstream fills the table with
    `target::from_f32(code.to_f32())` through the user conversion, so a NaN keeps its sign (f8e5m2's
    negative NaNs decode to bf16 0xffc0); every other code is exact in its target."""
    return _FROM_USER[target](to_f32(values, source))


def convert(values, source: DType, target: DType) -> np.ndarray:
    """Element conversions of the fetch adapter and the Cast Engine (hardware rounding rules)."""
    if source == target:
        return values
    if not source.is_float and not target.is_float:
        wide = widen_int(values)
        return wide if target == i32 else wrap_int(wide, target)
    wide = values if source == f32 else to_f32(values, source)
    return wide if target == f32 else from_f32(wide, target)


def zero_point_sub(values, zero_point: int, target: DType) -> np.ndarray:
    """The Fetch Adapter's zero-point subtraction: `values − zero_point` in the one-bit-wider staging type
    (i4 → i5, i8 → i9), which holds every difference, so nothing wraps.

        zero_point_sub(np.array([0, 7], np.int8), 3, i9)   # [-3, 4]
    """
    return (np.asarray(values).astype(np.int32) - zero_point).astype(target.storage)


def commit_cast(values, relu: bool) -> np.ndarray:
    """The Commit Adapter's f32 → bf16 as the hardware rounds it; with `relu`, negatives (and -0.0) become
    zero on the way."""
    return bf16_from_f32_relu_hw(values) if relu else bf16_from_f32_hw(values)


def from_user(values, dtype: DType, copy: bool = True) -> np.ndarray:
    """Converts user data with the user constructors; integers are range-checked, never wrapped. With
    `copy=False`, data already in the storage type comes back as it is."""
    v = np.asarray(values)
    if dtype.is_float:
        if v.dtype == dtype.storage:
            return v.copy() if copy else v
        return _FROM_USER[dtype](v)
    lo, hi = _check_int(dtype)
    if v.dtype.kind in "fV":  # V: the ml_dtypes floats
        with np.errstate(invalid="ignore"):
            v64 = v.astype(np.float64)
            bad = ~np.isfinite(v64) | (v64 != np.trunc(v64)) | (v64 < lo) | (v64 > hi)
    elif v.dtype.kind in "biu":
        bad = (v > hi) | (v < lo) if v.dtype.kind == "i" else v > hi
    else:
        raise DTypeError(f"cannot convert {v.dtype} values to {dtype.name}")
    if bad.any():
        index = np.unravel_index(np.flatnonzero(bad)[0], v.shape)
        raise DTypeError(
            f"value {v[index].item()} at index {tuple(int(i) for i in index)} is not an integer in "
            f"{dtype.name}'s range [{lo}, {hi}]"
        )
    return v.astype(dtype.storage, copy=copy)


def rand(dtype: DType, count: int, rng: np.random.Generator) -> np.ndarray:
    """Upstream ``rand``: narrow floats from U[-1, 1), f4e2m1 and integers uniform over all codes."""
    if dtype in (bf16, f8e4m3, f8e5m2):
        # 2u - 1 is exact in f32 for the 2^-24 grid numpy draws on, so 1.0 is never produced.
        return _FROM_USER[dtype](rng.random(count, dtype=np.float32) * np.float32(2) - np.float32(1))
    if dtype == f32:
        return rng.random(count, dtype=np.float32)
    if dtype == f4e2m1:
        return rng.integers(0, 16, count, dtype=np.uint8).view(f4e2m1.storage)
    lo, hi = _check_int(dtype)
    return rng.integers(lo, hi, count, dtype=dtype.storage, endpoint=True)
