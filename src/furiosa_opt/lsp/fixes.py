"""The fixes a diagnostic carries, as plain edits (title, 1-based range, new text): declare an unknown
axis, use a declared axis, a module name or a stream method of a close name, write the mapping a rule
expects. Pure: from the diagnostic
record, the buffer's text and its analysis.

    fixes(record, text, analysis)  # [{"title": "Declare axis `Q`", "line": 9, "column": 1, …}, …]
"""

from __future__ import annotations

import difflib
import math
import re

from furiosa_opt.lsp.lookup import declared_axes, last_axes_line
from furiosa_opt.lsp.members import CLASSES

_UNKNOWN_AXIS = re.compile(r"unknown axis `(\w+)`")
_EXPECTED = re.compile(r"Expected: `([^`]*)`, got: `([^`]*)`")
_UNDEFINED = re.compile(r"NameError: name '(\w+)' is not defined")
_NO_ATTRIBUTE = re.compile(r"AttributeError: '(\w+)' object has no attribute '(\w+)'")


def _edit(title: str, line: int, column: int, end_line: int, end_column: int, text: str) -> dict:
    return {"title": title, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
            "text": text}  # fmt: skip


def fixes(record: dict, text: str, analysis: dict) -> list[dict]:
    """The edits that fix the diagnostic `record` (Diagnostic.record(), its spans in this file)."""
    if not record["spans"]:
        return []
    span = record["spans"][0]
    unknown = _UNKNOWN_AXIS.search(record["message"])
    if unknown:
        return _axis_fixes(unknown.group(1), span, text, analysis)
    expected = _EXPECTED.search(record["message"])
    if expected:
        return _expected_fixes(*expected.groups(), span, analysis)
    undefined = _UNDEFINED.search(record["message"])
    if undefined:
        return _close_names(undefined.group(1), analysis.get("names", []), span)
    missing = _NO_ATTRIBUTE.search(record["message"])
    owner = next((c for c in CLASSES if missing and c.__name__ == missing.group(1)), None)
    if owner is not None:
        members = [n for n in dir(owner) if not n.startswith("_")]
        return _close_names(missing.group(2), members, span)
    return []


def _close_names(name: str, candidates: list[str], span: dict) -> list[dict]:
    """Replace a misspelt name (the span covers it) with each close candidate."""
    return [
        _edit(f"Did you mean `{close}`?", span["line"], span["column"], span["end_line"], span["end_column"], close)
        for close in difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    ]


def _axis_fixes(name: str, span: dict, text: str, analysis: dict) -> list[dict]:
    known = {*analysis.get("axes", {}), *declared_axes(text)}  # the text's, when the module did not import
    found = _close_names(name, sorted(known), span)
    after = last_axes_line(text) or 0
    declaration = f"{name} = axes({name}={_size_hint(name, text)})  # its size: check it\n"
    found.append(_edit(f"Declare axis `{name}`", after + 1, 1, after + 1, 1, declaration))
    return found


def _size_hint(name: str, text: str) -> int:
    """A size the file's mappings accept for a new axis: the least common multiple of every divisor and
    modulus written after it (`Q % 8`, `Q / 4` → 8), 1 if none."""
    numbers = [int(n) for n in re.findall(rf"\b{re.escape(name)}\s*[/%]\s*(\d+)", text)]
    return math.lcm(*numbers) if numbers else 1


def _expected_fixes(expected: str, got: str, span: dict, analysis: dict) -> list[dict]:
    """Replace the `m[…]` argument of the refused call that reads `got` with the one the rule expects."""
    found = []
    for entry in analysis.get("mappings", []):
        inside = (span["line"], span["column"]) <= (entry["line"], entry["column"])
        inside = inside and (entry["end_line"], entry["end_column"]) <= (span["end_line"], span["end_column"])
        if inside and entry.get("shown") == got:
            found.append(_edit(f'Use the mapping the rule expects: m["{expected}"]', entry["line"], entry["column"],
                               entry["end_line"], entry["end_column"], f'm["{expected}"]'))  # fmt: skip
    return found
