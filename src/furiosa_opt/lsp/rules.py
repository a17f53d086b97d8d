"""The documentation of each rule code, read from furiosa_opt's own source: every `VerifyError("code", …)`
with a literal code, with the docstring of the function that raises it and the message it gives. Read
once, on the first hover on a rule code.

    rule_documentation()["collect-packet-mismatch"]  # "**collect-packet-mismatch** (verify/stream.py …"
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def rule_documentation() -> dict[str, str]:
    """Rule code → Markdown: where it is checked, the checking function's docstring, the message."""
    found: dict[str, str] = {}
    for path in sorted(_PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "VerifyError(" not in source:
            continue
        tree = ast.parse(source)
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                for code, message in _raised(function):
                    where = f"{path.relative_to(_PACKAGE).as_posix()}, `{function.name}`"
                    doc = ast.get_docstring(function) or ""
                    text = f"**{code}** ({where})\n\n{doc}\n\nMessage: {message}".replace("\n\n\n", "\n\n")
                    found.setdefault(code, text)
    return found


def _raised(function: ast.AST) -> list[tuple[str, str]]:
    """The (code, message as written) of each `VerifyError("code", message)` in the function."""
    found = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "VerifyError"):
            continue
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            message = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            found.append((node.args[0].value, message))
    return found
