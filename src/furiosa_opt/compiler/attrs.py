"""Attribute values of vISA ops as text: the contexts, and every value `literals.py` reads."""

from __future__ import annotations

from furiosa_opt.compiler.literals import literal
from furiosa_opt.lang.device import PROCESS_CONTEXT
from furiosa_opt.scalar import parse_scalar

_CONTEXTS = {name: getattr(PROCESS_CONTEXT, name) for name in ("main", "sub", "tdma", "pdma")}


def parse_attr(text: str) -> object:
    """An attribute value from its text (mappings are read by the vISA reader, which knows the axes)."""
    if text.startswith("scalar("):  # a runtime scalar: `scalar(eq %3@2 0)`
        return parse_scalar(text)
    return _CONTEXTS[text] if text in _CONTEXTS else literal(text)
