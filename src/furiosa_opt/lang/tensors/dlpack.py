"""DLPack for bf16: numpy's DLPack refuses ml_dtypes' bfloat16, both ways, so bf16 crosses as uint16.

numpy exports and imports DLPack capsules for its own dtypes; a bf16 array (ml_dtypes' `bfloat16`) has
no DLPack code in numpy, and a bf16 capsule (torch's `bfloat16`, DLPack code `kDLBfloat`) is refused by
`np.from_dlpack`. Both have the same bits as uint16, so this module re-labels the capsule's dtype field in
place: an exported uint16 capsule becomes bf16 before the consumer reads it, an imported bf16 capsule
becomes uint16 before numpy reads it (then viewed back as bfloat16). The data is never touched, so a
shared buffer stays shared.

The field's place comes from the DLPack header (`dlpack.h`, versions 0.x and 1.x): a capsule named
`dltensor` holds a `DLManagedTensor`, one named `dltensor_versioned` a `DLManagedTensorVersioned`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import ml_dtypes
import numpy as np

_UINT, _BFLOAT = 1, 4  # DLDataTypeCode: kDLUInt, kDLBfloat


class _DataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class _Tensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    )


class _Managed(ctypes.Structure):  # DLManagedTensor (capsule "dltensor")
    _fields_ = (("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p))


class _ManagedVersioned(ctypes.Structure):  # DLManagedTensorVersioned (capsule "dltensor_versioned")
    _fields_ = (
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    )


_LAYOUTS = {b"dltensor": _Managed, b"dltensor_versioned": _ManagedVersioned}
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dtype_field(capsule: Any) -> _DataType:
    """The capsule's `DLDataType`, writable in place (the capsule must be unconsumed)."""
    name = _get_name(capsule)
    if name not in _LAYOUTS:
        raise BufferError(f"not an unconsumed DLPack capsule (its name is {name!r})")
    return _LAYOUTS[name].from_address(_get_pointer(capsule, name)).dl_tensor.dtype


def _relabel(capsule: Any, code: int, to: int) -> bool:
    """Re-label a 16-bit scalar capsule from DLPack code `code` to `to`; whether it was one to re-label."""
    field = _dtype_field(capsule)
    if (field.code, field.bits, field.lanes) != (code, 16, 1):
        return False
    field.code = to
    return True


class _Bf16AsUint16:
    """A DLPack producer that hands numpy a bf16 producer's capsule as uint16 (numpy reads no bf16)."""

    def __init__(self, producer: Any):
        self.producer, self.was_bf16 = producer, False

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.producer.__dlpack__(**kwargs)
        self.was_bf16 = _relabel(capsule, _BFLOAT, _UINT)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.producer.__dlpack_device__()


def to_numpy(producer: Any) -> np.ndarray:
    """`np.from_dlpack(producer)`, bf16 included (as ml_dtypes' bfloat16): a view of the producer's memory,
    never a copy (numpy's import shares or refuses). A producer's own refusal (a torch tensor that requires
    grad, a GPU tensor) comes through as it is."""
    if not hasattr(producer, "__dlpack__"):
        raise TypeError(f"expected a DLPack producer (an object with __dlpack__), got {type(producer).__name__}")
    relabelled = _Bf16AsUint16(producer)
    array = np.from_dlpack(relabelled)
    return array.view(ml_dtypes.bfloat16) if relabelled.was_bf16 else array


def capsule(array: np.ndarray, **kwargs: Any) -> Any:
    """numpy's DLPack capsule of `array`, a bf16 array's labelled bf16 (kDLBfloat): what `__dlpack__` hands
    a consumer. `kwargs` are the consumer's (`max_version`, `copy`, `dl_device`, `stream`)."""
    if array.dtype != ml_dtypes.bfloat16:
        return array.__dlpack__(**kwargs)
    exported = array.view(np.uint16).__dlpack__(**kwargs)
    _relabel(exported, _UINT, _BFLOAT)
    return exported
