"""Byte images: the raw code of one value, the bytes a fill repeats, 4-bit nibble packing, and the
little-endian image of an array (what HBM and DM hold, and what an EDF carries).
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.dtypes.bits import DTypeError, _as, _raw_bits
from furiosa_opt.dtypes.convert import from_user
from furiosa_opt.dtypes.table import DType, i4


def _check_materializable(dtype: DType) -> None:
    if not dtype.materializable:
        raise DTypeError(f"{dtype.name} is a stream-only staging type and has no byte image")


def code_of(value, dtype: DType) -> int:
    """The raw code (``dtype.bits`` wide, unsigned) of one value already in ``dtype``'s storage."""
    return int(_raw_bits(np.asarray(value, dtype=dtype.storage), dtype)) & ((1 << dtype.bits) - 1)


def from_code(code: int, dtype: DType) -> np.ndarray:
    """The storage scalar whose raw code is ``code`` (the inverse of ``code_of``; integers sign-extend)."""
    if not dtype.is_float and code >= 1 << (dtype.bits - 1):
        code -= 1 << dtype.bits
    return np.asarray(code).astype(dtype.storage) if not dtype.is_float else _as(np.asarray(code), dtype)


def fill_pattern(code: int, dtype: DType) -> list[int]:
    """The bytes that repeat through memory filled with one code: its little-endian bytes, or for a
    4-bit type one byte holding the code in both nibbles."""
    if dtype.bits < 8:
        return [code | code << 4]
    return list(code.to_bytes(dtype.bits // 8, "little"))


def pack_nibbles(values: np.ndarray, dtype: DType) -> np.ndarray:
    """4-bit storage values [..., 2n] as their packed bytes [..., n] (uint8): element 2k in the low nibble
    of byte k, 2k+1 in the high one, as upstream packs i4 and f4e2m1 in HBM and DM."""
    codes = np.ascontiguousarray(values.astype(dtype.storage, copy=False)).view(np.uint8) & 0xF
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_nibbles(data: np.ndarray, dtype: DType) -> np.ndarray:
    """Packed bytes [..., n] (uint8) as 4-bit storage values [..., 2n], the inverse of ``pack_nibbles``."""
    codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(*data.shape[:-1], -1)
    if dtype == i4:  # sign-extend the code into int8 storage
        return ((codes.astype(np.int8) << 4) >> 4).astype(np.int8)
    return codes.astype(np.uint8).view(dtype.storage)


def pack(values, dtype: DType) -> bytes:
    """Little-endian byte image; 4-bit types put element 2k in the low nibble of byte k, 2k+1 in the high."""
    _check_materializable(dtype)
    v = np.asarray(values)
    if not dtype.is_float:  # i4 shares int8 storage with i8, so even storage arrays are range-checked
        v = from_user(v, dtype)
    elif v.dtype != dtype.storage:
        v = _as(_raw_bits(v, dtype), dtype)
    flat = v.reshape(-1)
    dtype.nbytes(flat.size)
    if dtype.bits == 4:
        return pack_nibbles(flat, dtype).tobytes()
    return flat.astype(dtype.storage.newbyteorder("<")).tobytes()


def unpack(data: bytes, dtype: DType, count: int) -> np.ndarray:
    """Inverse of ``pack``: ``count`` elements in ``dtype`` storage from a byte image of exactly that size."""
    _check_materializable(dtype)
    if len(data) != dtype.nbytes(count):
        raise DTypeError(f"{count} x {dtype.name} needs {dtype.nbytes(count)} bytes, got {len(data)}")
    if dtype.bits == 4:
        return unpack_nibbles(np.frombuffer(data, dtype=np.uint8), dtype)
    return np.frombuffer(data, dtype=dtype.storage.newbyteorder("<"), count=count).astype(dtype.storage)
