"""Position → what is there: the pure half of the language server (no LSP, no process), over the text of
a buffer and its analysis (`analysis.analyse`'s plain data). Lines and columns are 1-based, as Python's.

    value_at(analysis, text, 39, 12)["opcode"]        # "collect": the call of the chain under the cursor
    shown(value)                                      # "stream<bf16> … Time [I % 32, …] Packet [K % 16]"
    previous_method("x = s.fetch(m['A'], m['B']).")  # "fetch"
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

_TENSOR_LEVELS = ("Chip", "Cluster", "Slice")


def levels(value: dict) -> list[tuple[str, str, int]]:
    """A value's mappings, each with the name of the level it describes and its size: a stream's spatial
    levels then `Time` and `Packet`; a contraction's `Lane`, `Time` and `Packet`; a tensor's spatial
    levels, a register file's `Lane`, then `Element`.

        levels({"kind": "stream", "params": ["1", "T", "P"], "sizes": [1, 4, 8]})[1:]  # [("Time", "T", 4), …]
    """
    params, sizes, kind = value["params"], value["sizes"], value["kind"]
    if kind in ("stream", "vector", "pair"):
        names = [*_TENSOR_LEVELS[: len(params) - 2], "Time", "Packet"]
    elif kind == "contraction":
        names = ["Lane", "Time", "Packet"]
    else:
        inner = ["Lane", "Element"] if kind == "trf" else ["Element"]
        names = [*_TENSOR_LEVELS[: len(params) - len(inner)], *inner]
    return list(zip(names, params, sizes, strict=False))


def shown(value: dict) -> str:
    """The hover text of a traced value (Markdown): kind, dtype, context and engine, then each level.

    shown(value)  # "**stream**<bf16> after `collect` (context `main`, engine `collect`)\n\n- Chip: …"
    """
    where = ", ".join(p for p in (value.get("context") and f"context `{value['context']}`",
                                  value.get("engine") and f"engine `{value['engine']}`") if p)  # fmt: skip
    head = f"**{value['kind']}**<{value['dtype']}> after `{value['opcode']}`" + (f" ({where})" if where else "")
    rows = [f'- {name}: `m["{text}"]` (size {size})' for name, text, size in levels(value)]
    return "\n".join([head, "", *rows])


def hint(value: dict) -> str:
    """The inlay hint after a stage: the layout it produces, in mapping notation (`Time [T] Packet [P]`
    for a stream, the innermost level for a tensor).

        hint(value)  # "Time [I % 32, J / 8 % 4, K / 16] Packet [K % 16]"
    """
    named = levels(value)
    if value["kind"] in ("stream", "vector", "pair", "contraction"):
        return " ".join(f"{name} [{text}]" for name, text, _ in named if name in ("Time", "Packet"))
    return f"{value['kind']} " + " ".join(f"{name} [{text}]" for name, text, _ in named[-2:] if name != "Chip")


def _contains(entry: dict, line: int, column: int) -> bool:
    start, end = (entry["line"], entry["column"]), (entry["end_line"], entry["end_column"])
    return start <= (line, column) < end


def _extent(entry: dict) -> tuple[int, int]:
    return entry["end_line"] - entry["line"], entry["end_column"] - entry["column"]


def value_at(analysis: dict, text: str, line: int, column: int) -> dict | None:
    """The traced value under the cursor: the value a variable under the cursor was last assigned from a
    traced call, else the innermost call at it (of two ops of one call, the later).

        value_at(analysis, text, 39, 12)["opcode"]  # "collect"
    """
    values = analysis.get("values", [])
    name = word_at(text, line, column)
    assigned = variable_value(analysis, text, name, line) if name else None
    if assigned is not None:
        return assigned
    here = [(_extent(v), -i, v) for i, v in enumerate(values) if _contains(v, line, column)]
    return min(here, key=lambda item: item[:2])[2] if here else None


def variable_value(analysis: dict, text: str, name: str, line: int) -> dict | None:
    """The traced value the variable `name` holds at `line`: the one its latest assignment from a call
    at or before that line produced.

        variable_value(analysis, text, "b_trf", 40)["opcode"]  # "to_trf"
    """
    call = _assigned_call(text, name, line)
    values = analysis.get("values", [])
    return next((v for v in reversed(values) if (v["line"], v["column"]) == call), None) if call else None


def _assigned_call(text: str, name: str, line: int) -> tuple[int, int] | None:
    """Where the method called last in the latest `name = ….method(…)` at or before `line` is written."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or node.lineno > line:
            continue
        if not any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            continue
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            func = call.func
            where = (func.end_lineno, func.end_col_offset - len(func.attr) + 1)
            if best is None or node.lineno >= best[0]:
                best = (node.lineno, where)
    return best[1] if best else None


def word_at(text: str, line: int, column: int, pattern: str = r"[A-Za-z_][A-Za-z0-9_]*") -> str | None:
    """The word (matching `pattern`) that covers the 1-based column of the line, if any.

    word_at("a = b_trf", 1, 6)  # "b_trf"
    """
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    for match in re.finditer(pattern, lines[line - 1]):
        if match.start() < column <= match.end():
            return match.group()
    return None


def mapping_at(analysis: dict, line: int, column: int) -> dict | None:
    """The `m["…"]` under the cursor, with its normal form and size (or why it does not parse).

    mapping_at(analysis, 33, 50)  # {"text": "K % 16", "normal": "K % 16", "size": 16, "line": 33, …}
    """
    return next((e for e in analysis.get("mappings", []) if _contains(e, line, column)), None)


def declared_axes(text: str) -> dict[str, tuple[int, int, int]]:
    """Each axis the text declares (`I, J = axes(I=…, J=…)`) and where: line, first and last column. Read
    from the text, so it is known even when the module does not import.

        declared_axes("I, J = axes(I=8, J=4)\n")  # {"I": (1, 1, 2), "J": (1, 4, 5)}
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    found = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Name) and func.id == "axes"):
            continue
        for target in node.targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(element, ast.Name):
                    found.setdefault(element.id, (element.lineno, element.col_offset + 1, element.end_col_offset + 1))
    return found


def axis_declaration(text: str, name: str) -> tuple[int, int, int] | None:
    """Where the axis `name` is declared: line, first and last column.

    axis_declaration("I, J = axes(I=8, J=4)\n", "J")  # (1, 4, 5)
    """
    return declared_axes(text).get(name)


def last_axes_line(text: str) -> int | None:
    """The last line of the last module-level `… = axes(…)` (a new declaration goes after it).

    last_axes_line("import x\nI = axes(I=8)\n")  # 2
    """
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id == "axes":
                found = node.end_lineno
    return found


def _backwards(text: str, end: int) -> Iterator[tuple[int, str]]:
    """(index, character) of `text` from `end` down to its start, quoted strings (one line each) skipped."""
    i = end
    while i >= 0:
        char = text[i]
        if char in "\"'":
            i = text.rfind(char, 0, i) - 1  # past the opening quote (-2, the end, if there is none)
            continue
        yield i, char
        i -= 1


def _matching_open(text: str, close: int) -> int | None:
    """The index of the `(` that the `)` at `close` closes, skipping quoted strings (one line each)."""
    depth = 0
    for i, char in _backwards(text, close):
        depth += {")": 1, "(": -1}.get(char, 0)
        if depth == 0:
            return i
    return None


def _without_comment(line: str) -> str:
    """A line without its `# comment` (a `#` inside a string, as in `m["1 # 2"]`, stays)."""
    quote = None
    for i, char in enumerate(line):
        if quote is None and char == "#":
            return line[:i]
        if char in "\"'":
            quote = None if quote == char else quote or char
    return line


def previous_method(before: str) -> str | None:
    """The method the call just before a trailing `.` calls, in `before` (the text up to the cursor):
    `….fetch(m["A"], m["B"]).` → `fetch`. None if the dot does not follow a method call."""
    body = "\n".join(_without_comment(line) for line in before.split("\n")).rstrip()
    dot = re.search(r"\.\s*\w*$", body)
    if dot is None:
        return None
    head = body[: dot.start()].rstrip()
    if not head.endswith(")"):
        return None
    opening = _matching_open(head, len(head) - 1)
    if opening is None:
        return None
    name = re.search(r"\.\s*(\w+)\s*$", head[:opening])
    return name.group(1) if name else None


def dotted_name(before: str) -> str | None:
    """The variable a trailing `.` follows, in `before` (the text up to the cursor): `x = out.` → `out`."""
    found = re.search(r"(?<![\w.)\]])([A-Za-z_]\w*)\s*\.\s*\w*$", _without_comment(before.split("\n")[-1]))
    return found.group(1) if found else None


def open_call(before: str) -> tuple[str, int] | None:
    """The method whose argument list the cursor is in, and the index of the argument it is at:
    `s.collect(m["A"], ` → ("collect", 1)."""
    depth, commas = 0, 0
    for i, char in _backwards(before, len(before) - 1):
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                if char != "(":
                    return None
                name = re.search(r"\.\s*(\w+)\s*$", before[:i])
                return (name.group(1), commas) if name else None
            depth -= 1
        elif char == "," and depth == 0:
            commas += 1
    return None
