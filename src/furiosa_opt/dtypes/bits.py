"""The error every conversion raises and the bit-level helpers they share.

Conversions work on raw bit patterns held in wide integers, so no intermediate step wraps; these helpers
move between a type's numpy storage and those patterns. They sit below everything else in the package,
the dtype table included, so they read a scalar type only through a `Format`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class DTypeError(ValueError):
    """A value, element count or byte image that a scalar type cannot represent."""


class Format(NamedTuple):
    """What the conversions below the dtype table read of a scalar type: its name (for messages), its numpy
    storage and, for an integer, its value range.

    A `DType` (table.py) has these attributes and is passed as it is. The float codecs (floats.py) describe
    their types with these instead: the table's scalar methods call them, so they cannot use its dtypes.
    """

    name: str
    storage: np.dtype
    int_range: tuple[int, int] | None = None


_F32_QNAN = 0x7FC00000
_BF16_QNAN = 0x7FC0


def _f32_bits(x) -> np.ndarray:
    """The f32 bit patterns of ``x`` as int64, so intermediate arithmetic never wraps."""
    with np.errstate(invalid="ignore"):  # a signalling NaN input raises the invalid flag when cast
        return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def _codes(x, dtype: Format) -> np.ndarray:
    """The raw codes of a ``dtype``-storage array, unwidened (unsigned arrays of the same width pass)."""
    arr = np.asarray(x)
    raw = np.dtype(f"u{dtype.storage.itemsize}")
    if arr.dtype not in (dtype.storage, raw):
        raise DTypeError(f"expected a {dtype.name} array ({dtype.storage}) or raw {raw} codes, got {arr.dtype}")
    return arr.view(raw)


def _raw_bits(x, dtype: Format) -> np.ndarray:
    """The raw codes as int64, so intermediate arithmetic never wraps."""
    return _codes(x, dtype).astype(np.int64)


def _as(bits: np.ndarray, dtype: Format) -> np.ndarray:
    return bits.astype(f"u{dtype.storage.itemsize}").view(dtype.storage)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    """Rust's ``f64::round`` (ties away from zero); exact, unlike ``floor(v + 0.5)``."""
    t = np.trunc(v)
    with np.errstate(invalid="ignore"):  # inf - inf for infinite lanes; their result stays inf
        frac = np.abs(v - t)
    return np.where(frac >= 0.5, t + np.sign(v), t)
