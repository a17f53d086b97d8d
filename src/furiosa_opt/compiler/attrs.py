"""Attribute values of vISA ops as text: integers, dtypes, contexts and the Vector Engine's op values."""

from __future__ import annotations

import re

from furiosa_opt import dtypes
from furiosa_opt.lang.context import _SINGLETON
from furiosa_opt.vector import ops as vector_ops

_CONTEXTS = {name: getattr(_SINGLETON, name) for name in ("main", "sub", "tdma", "pdma")}
_NAMESPACE = {name: getattr(vector_ops, name) for name in vector_ops.__all__} | {"__builtins__": {}}
_ENUM = re.compile(r"[A-Z][A-Za-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*(\(.*\))?\Z")


def parse_attr(text: str) -> object:
    """An attribute value from its text (mappings are read by the vISA reader, which knows the axes)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?|-?inf|nan", text):
        return float(text)
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text in _CONTEXTS:
        return _CONTEXTS[text]
    if text in {d.name for d in dtypes.ALL_DTYPES}:
        return dtypes.dtype_by_name(text)
    if _ENUM.match(text):
        try:
            return eval(text, _NAMESPACE)  # our own op values only: no builtins, no other names
        except Exception as error:
            raise ValueError(f"unknown attribute value `{text}`: {error}") from None
    raise ValueError(f"unknown attribute value `{text}`")
