"""Byte addresses as numpy arrays: the one check every map and statistic of `memsys` makes on its input."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def byte_addresses(values: ArrayLike, end: int, what: str, size: int = 1) -> np.ndarray:
    """`values` as an int64 array of its shape, each `size`-byte access from it inside `[0, end)`.

    A map over a wrong address would give a plausible bank and row for a byte that does not exist, so the
    first address outside is refused by name instead (`what` names one value: "HBM address"). An empty
    input is an empty array, whatever its dtype.

    >>> byte_addresses([0, 256], 1024, "HBM address").tolist()
    [0, 256]
    """
    if size < 1:
        raise ValueError(f"access size {size} is not a positive number of bytes")
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(array.shape, np.int64)
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{what} values are {array.dtype}, not integers")
    outside = (array < 0) | (array > end - size)
    if outside.any():
        first = array[outside].flat[0]
        raise ValueError(f"{what} {first} with {size} byte(s) is outside [0, {end})")
    return array.astype(np.int64, copy=False)


def read_only(array: np.ndarray) -> np.ndarray:
    """`array`, no longer writeable: a frozen result's fields stay what the map computed.

    >>> read_only(np.arange(2)).flags.writeable
    False
    """
    array.setflags(write=False)
    return array
