"""What a kernel parameter may be: an HBM tensor, an HBM view, or a tuple or dataclass of them.

Upstream's `#[device]` functions take `&HbmTensor`, `HbmTensorView(Mut)`, tuples and `#[derive(DeviceSend)]`
structs of these. Here the same shapes are annotations; every shape flattens into *leaves* (one tensor or
view each, with a path such as `inputs.x` or `pair.1`), which is what the compiler, the EDF's argument
table and the NPU runtime see. The structure only lives on the host side of `launch`.

    @dataclass
    class Inputs:
        x: HbmTensor[i8, Chip, m["A, B"]]

    @device
    def passthrough(ctx: Context, inputs: Inputs, rows: tuple[HbmTensorView[i8, Chip, m["A"]], ...]): ...
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass

from furiosa_opt.lang.tensors import HbmTensor, HbmTensorView, HbmTensorViewMut, TensorType

LEAF_CLASSES = (HbmTensor, HbmTensorView, HbmTensorViewMut)


@dataclass(frozen=True)
class TupleType:
    """`tuple[T0, T1, …]`: a fixed number of parameter types."""

    items: tuple[ParamType, ...]

    def __repr__(self) -> str:
        return f"tuple[{', '.join(map(repr, self.items))}]"


@dataclass(frozen=True)
class StructType:
    """A `@dataclass` whose fields are parameter types (upstream's `DeviceSend` structs)."""

    cls: type
    fields: tuple[tuple[str, ParamType], ...]

    def __repr__(self) -> str:
        return self.cls.__qualname__


ParamType = TensorType | TupleType | StructType


class ParamError(TypeError):
    """An annotation that is no parameter type; the message says which part and why."""


def param_type(hint: object) -> ParamType:
    """The parameter type an annotation names, or ParamError."""
    if isinstance(hint, TensorType):
        if hint.cls not in LEAF_CLASSES:
            raise ParamError(f"a kernel takes HBM tensors and views, not a {hint.cls.__name__}")
        return hint
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if Ellipsis in args or not args:
            raise ParamError(f"{hint!r}: a tuple parameter has a fixed number of items (`tuple[T0, T1]`)")
        return TupleType(tuple(param_type(a) for a in args))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        try:
            hints = typing.get_type_hints(hint)
        except Exception as error:
            raise ParamError(f"cannot evaluate the field annotations of `{hint.__qualname__}`: {error}") from None
        fields = []
        for f in dataclasses.fields(hint):
            try:
                fields.append((f.name, param_type(hints[f.name])))
            except ParamError as error:
                raise ParamError(f"field `{f.name}` of `{hint.__qualname__}`: {error}") from None
        return StructType(hint, tuple(fields))
    raise ParamError(
        f'expected a tensor type such as `HbmTensor[bf16, m["1"], m["A"]]`, a tuple or a dataclass, got {hint!r}'
    )


def leaf_types(t: ParamType, path: str) -> list[tuple[str, TensorType]]:
    """(path, tensor type) of every leaf, in declaration order."""
    if isinstance(t, TensorType):
        return [(path, t)]
    return [leaf for key, item in _children(t) for leaf in leaf_types(item, f"{path}.{key}")]


def leaves(t: ParamType, value: object, path: str) -> list[tuple[str, TensorType, object]]:
    """(path, type, value) of every leaf of `value`; ParamError names the first leaf that does not fit."""
    if isinstance(t, TensorType):
        reason = t.mismatch(value)
        if reason:
            raise ParamError(f"`{path}`: {reason}")
        return [(path, t, value)]
    if isinstance(t, TupleType):
        if not isinstance(value, tuple) or len(value) != len(t.items):
            raise ParamError(f"`{path}`: expected a tuple of {len(t.items)}, got {_describe(value)}")
        parts = list(enumerate(value))
    else:
        if not isinstance(value, t.cls):
            raise ParamError(f"`{path}`: expected a {t.cls.__qualname__}, got {_describe(value)}")
        parts = [(name, getattr(value, name)) for name, _ in t.fields]
    items = dict(_children(t))
    return [leaf for key, part in parts for leaf in leaves(items[key], part, f"{path}.{key}")]


def build(t: ParamType, make: Callable[[TensorType], object]) -> object:
    """A value of type `t` whose leaves are `make(leaf type)` (the tracer's symbolic arguments)."""
    if isinstance(t, TensorType):
        return make(t)
    if isinstance(t, TupleType):
        return tuple(build(item, make) for item in t.items)
    return t.cls(**{name: build(item, make) for name, item in t.fields})


def _children(t: TupleType | StructType) -> list[tuple[object, ParamType]]:
    return list(enumerate(t.items)) if isinstance(t, TupleType) else list(t.fields)


def _describe(value: object) -> str:
    return f"a tuple of {len(value)}" if isinstance(value, tuple) else type(value).__name__
