"""Attribute values of vISA ops as text: integers, dtypes, contexts, Switch configs and the Vector Engine's op
values."""

from __future__ import annotations

import re

from furiosa_opt import dtypes
from furiosa_opt.lang.device import _SINGLETON
from furiosa_opt.switch import parse_switch_config
from furiosa_opt.vector import ops as vector_ops

_CONTEXTS = {name: getattr(_SINGLETON, name) for name in ("main", "sub", "tdma", "pdma")}


def parse_attr(text: str) -> object:
    """An attribute value from its text (mappings are read by the vISA reader, which knows the axes)."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|nan", text):  # every float `repr` prints
        return float(text)
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text in _CONTEXTS:
        return _CONTEXTS[text]
    if text in {d.name for d in dtypes.ALL_DTYPES}:
        return dtypes.dtype_by_name(text)
    if text.startswith("SwitchConfig."):
        return parse_switch_config(text)
    try:
        return vector_ops.parse_op(text)
    except ValueError:
        raise ValueError(f"unknown attribute value `{text}`") from None
