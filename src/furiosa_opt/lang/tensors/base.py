"""What every tensor and view shares: the annotation type `TensorType`, the `Tensor` base, and the two steps
of every move, `moved` (relayout by logical index) and `recorded` (tell the backend).

This module imports no other module of the package: the tiers and views build on it, never the reverse.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.expr import shown_pair


class TensorType:
    """What an annotation such as `HbmTensor[bf16, Chip, m["I, K"]]` names.

    Examples:
        >>> I, K = axes(I=4, K=8)
        >>> t = HbmTensor[bf16, m["1"], m["I, K"]]
        >>> t.size()                                          # 32 bf16 values
        64
    """

    def __init__(self, cls: type[Tensor], dtype: DType, params: tuple[Mapping, ...]):
        self.cls, self.dtype, self.params = cls, dtype, params

    def __repr__(self) -> str:
        inner = ", ".join([self.dtype.name, *(f'm["{p}"]' for p in self.params)])
        return f"{self.cls.__name__}[{inner}]"

    def size(self) -> int:
        """Upstream's static `size()`: the bytes of this type's packed device image (a 4-bit dtype packs two
        elements per byte).

            HbmTensor[i4, m["1"], m["A"]].size()   # A = 6: 3
        """
        return self.dtype.nbytes(math.prod(p.size for p in self.params))

    def mismatch(self, value: object) -> str | None:
        """Why `value` is not of this type, or None."""
        if not isinstance(value, self.cls):
            return f"expected {self!r}, got {type(value).__name__}"
        if value.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got {value.dtype}"
        for level, want, got in zip(self.cls.levels, self.params, value.params, strict=True):
            if want != got:
                expected, given = shown_pair(want, got)
                return f"{level} mapping: expected {expected}, got {given}"
        return None


def _annotation(cls: type, item: object) -> TensorType:
    """The type `cls[dtype, level mappings…]` names, checked for shape (tensors and views alike)."""
    item = item if isinstance(item, tuple) else (item,)
    if len(item) != len(cls.levels) + 1 or not isinstance(item[0], DType):
        levels = ", ".join(["dtype", *(level.capitalize() for level in cls.levels)])
        raise TypeError(f"{cls.__name__}[...] takes {levels}")
    if not all(isinstance(p, Mapping) for p in item[1:]):
        raise TypeError(f'{cls.__name__}[...] takes mappings after the dtype, e.g. m["A"]')
    return TensorType(cls, item[0], tuple(item[1:]))


class Tensor:
    """Base of the memory tensors: dtype, one mapping per level, and the buffer (wire order)."""

    levels: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = ""

    def __init__(self, dtype: DType, params: tuple[Mapping, ...], data: object):
        self.dtype, self.params, self.data = dtype, tuple(params), data
        self._validate()

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    def _validate(self) -> None:
        if not self.dtype.materializable:
            raise VerifyError(
                "not-materializable", f"{self.dtype} is a stream-only staging type: no {type(self).__name__}"
            )

    def __getattr__(self, name: str) -> Mapping:
        levels = type(self).levels
        if name in levels:
            return self.params[levels.index(name)]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def storage(self) -> Mapping:
        """The whole buffer's mapping: the levels paired, outermost first."""
        return pair(*self.params)

    @property
    def type(self) -> TensorType:
        return TensorType(type(self), self.dtype, self.params)

    def __repr__(self) -> str:
        return repr(self.type)

    def values(self) -> np.ndarray:
        """The physical buffer in wire order (storage dtype, padding zero)."""
        return self.data.values()


def moved(tensor: Tensor, cls: type[Tensor], params: tuple[Mapping, ...], broadcast: bool, what: str) -> Tensor:
    """`tensor` re-laid out as a `cls` tensor with `params`, by logical index."""
    target = pair(*params)
    try:
        data = active().relayout(tensor.data, tensor.storage.factors, target.factors, broadcast)
    except MappingError as error:
        raise VerifyError("relayout", f"{what}: {error}") from None
    return cls(tensor.dtype, params, data)


def recorded(name: str, operands: tuple, result, **attrs):
    """Note a memory operation with the backend (the tracer makes it a vISA op); returns `result`."""
    active().record(name, operands, () if result is None else (result,), **attrs)
    return result
