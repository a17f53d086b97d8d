"""Values as vISA attributes print them: numbers, `None`/`True`/`False`, dtypes, Switch configs, the
Vector Engine's op values and operand pairs. Free of the kernel language (`compiler/attrs.py` adds the
contexts). EDF engine configs carry these values as numbers instead (`configs/vector.py`), which the
simulator decodes without parsing text."""

from __future__ import annotations

import re

from furiosa_opt import dtypes
from furiosa_opt.switch import parse_switch_config
from furiosa_opt.vector import ops as vector_ops

_CONSTANTS = {"None": None, "True": True, "False": False}


def literal(text: str) -> object:
    """The value `text` prints; ValueError when it is none of them."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|nan", text):  # every float `repr` prints
        return float(text)
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    if text in {d.name for d in dtypes.ALL_DTYPES}:
        return dtypes.dtype_by_name(text)
    if text.startswith("SwitchConfig."):
        return parse_switch_config(text)
    if text.startswith("(") and text.endswith(")"):  # a ternary op's operand pair
        return tuple(literal(part) for part in _split_pair(text[1:-1]))
    try:
        return vector_ops.parse_op(text)
    except ValueError:
        raise ValueError(f"unknown attribute value `{text}`") from None


def _split_pair(text: str) -> list[str]:
    """The top-level parts of `a, b` (parts may hold parentheses or brackets themselves)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]
