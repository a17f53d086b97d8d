"""What the language server knows of one buffer, computed in a worker's child process (`worker.py`).

The buffer's text is written to a private temporary directory and imported from there under the module
name it has in the user's tree (so its own imports resolve as `furiosa-opt compile` resolves them); no
byte is written into the user's tree (`sys.dont_write_bytecode`). Each `@device` kernel the module defines
is traced with a `RecordingTracer`, which keeps every recorded op's full source span, so that the server
can show the value each call of a chain produces. The result is plain data (`Analysis.record()`), as JSON.

    analyse("/home/me/pkg/src/pkg/kernel/gemm.py", text, full=False)["diagnostics"]
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from furiosa_opt.backend.trace import Tracer, trace
from furiosa_opt.compiler import visa
from furiosa_opt.compiler.diagnostics import Diagnostic, Span, from_error
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.diagnostics import Location, user_location
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.mapping import Axis, Mapping
from furiosa_opt.mapping.parse import MappingSyntaxError, parse
from furiosa_opt.stages import STAGES
from furiosa_opt.tune.choices import tuned_path


class RecordingTracer(Tracer):
    """The tracer that also keeps, for each op it records, the user's span of the call that asked for it
    (`Tracer.record` keeps only the line and column for the vISA text).

        tracer = RecordingTracer()
        trace(kernel, tracer=tracer)   # tracer.spans: [(op, Location(file, line, column, end_line, …)), …]
    """

    def __init__(self) -> None:
        super().__init__(collect=True)
        self.spans: list[tuple[visa.Op, Location | None]] = []

    def record(self, name: str, operands: tuple, results: tuple, **attrs: Any) -> None:
        super().record(name, operands, results, **attrs)
        self.spans.append((self.ops[-1], user_location(1)))


def module_name(path: Path) -> tuple[str, Path]:
    """The dotted name a file imports as, and the directory that must be on `sys.path` for it: the
    first parent that is not a package (has no `__init__.py`).

        module_name(Path("src/base_template/kernel/gemm_kernel.py"))  # ("base_template.kernel.gemm_kernel", src)
    """
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


def analyse(path: str, text: str, full: bool) -> dict:
    """Diagnostics, traced values, mappings, axes and kernels of the buffer `text` of the file `path`;
    `full` also runs stage 2 (placement, DMA, sequencers) on each kernel that traces cleanly."""
    source = Path(path)
    name, root = module_name(source)
    result: dict[str, Any] = {"diagnostics": [], "values": [], "mappings": [], "axes": {}, "kernels": {}, "names": []}
    try:
        ast.parse(text, filename=path)
    except SyntaxError as error:
        span = Span(path, error.lineno or 1, error.offset or 1, error.end_lineno or 0, error.end_offset or 0)
        result["diagnostics"].append(Diagnostic("syntax-error", error.msg, "import", name, [span]).record())
        return result
    sys.dont_write_bytecode = True  # never a __pycache__ in the user's tree
    with tempfile.TemporaryDirectory(prefix="furiosa-opt-lsp-") as scratch:
        copy = Path(scratch) / source.name
        copy.write_text(text, encoding="utf-8")
        tuned = tuned_path(source)  # the choices `furiosa-opt tune` found, read beside the module
        if tuned.is_file():
            shutil.copyfile(tuned, tuned_path(copy))
        sys.path.insert(0, str(root))
        module, problem = _import(name, copy)
        if problem is not None:
            result["diagnostics"].append(problem)
        if module is not None:
            _describe(module, copy, text, full, result)
        for record in result["diagnostics"]:
            _relocate(record, str(copy), path, text)
    return result


def _import(name: str, copy: Path) -> tuple[Any, dict | None]:
    """The module executed from `copy` as `name`, or None and the diagnostic of why it failed."""
    spec = importlib.util.spec_from_file_location(name, copy)
    module = importlib.util.module_from_spec(spec)
    try:
        if "." in name:  # its package first, as an import would (the package may import this module itself)
            importlib.import_module(name.rpartition(".")[0])
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException as error:
        return None, _failure(error, "import", name).record()
    return module, None


def _failure(error: BaseException, stage: str, kernel: str | None) -> Diagnostic:
    """The diagnostic of an error, with the worker's own limits named as such."""
    diagnostic = from_error(error, stage, kernel)
    if getattr(error, "furiosa_opt_limit", False):  # worker.Limit: the time is up
        return replace(diagnostic, code="lsp-timeout", message=str(error))
    if isinstance(error, MemoryError):
        message = "the module went over the language server's memory limit (FURIOSA_OPT_LSP_MEMORY_MB)"
        return replace(diagnostic, code="lsp-memory", message=message)
    return diagnostic


def _describe(module: Any, copy: Path, text: str, full: bool, result: dict) -> None:
    """Fill `result` from the imported module: its axes, kernels and mappings, and each of its own
    kernels' diagnostics and traced values."""
    namespace = vars(module)
    result["axes"] = {k: v.size for k, v in namespace.items() if isinstance(v, Axis)}
    result["names"] = sorted(k for k in namespace if not k.startswith("__"))  # for did-you-mean fixes
    for key, value in namespace.items():
        if isinstance(value, DeviceFunction):
            code = value.fn.__code__
            result["kernels"][key] = {"file": code.co_filename, "line": code.co_firstlineno}
    result["mappings"] = _mappings(text, namespace)
    for value in namespace.values():
        if isinstance(value, DeviceFunction) and Path(value.fn.__code__.co_filename) == copy:
            _trace(value, str(copy), full, result)


def _trace(kernel: DeviceFunction, copy: str, full: bool, result: dict) -> None:
    tracer = RecordingTracer()
    try:
        if full:
            diagnostics = compile_kernel(kernel, tracer=tracer).diagnostics
        else:
            _, errors = trace(kernel, tracer=tracer)
            diagnostics = [from_error(e, "visa", kernel.identity) for e in errors]
    except BaseException as error:  # the worker's limits, or an error outside any kernel call
        diagnostics = [_failure(error, "visa", kernel.identity)]
    result["diagnostics"] += [d.record() for d in diagnostics]
    result["values"] += _values(tracer, copy)


def _values(tracer: RecordingTracer, copy: str) -> list[dict]:
    """Each op recorded at a call of the file `copy`: its span, opcode, engine, context and result type."""
    contexts: dict[str, str] = {}
    found = []
    for op, location in tracer.spans:
        context = op.attr("ctx")
        inherited = contexts.get(op.operands[0]) if op.operands and op.opcode in STAGES else None
        context = getattr(context, "name", None) or inherited  # a stage runs on its pipeline's context
        for result in op.results:
            contexts[result.name] = context
        if location is None or location.file != copy or not op.results:
            continue
        stage = STAGES.get(op.opcode)
        found.append(
            {
                "line": location.line,
                "column": location.column,
                "end_line": location.end_line or location.line,
                "end_column": location.end_column,
                "opcode": op.opcode,
                "engine": stage.engine if stage else "memory",
                "context": context,
                **_shown_type(op.results[0].type),
            }
        )
    return found


def _shown_type(type_: visa.Type) -> dict:
    """A vISA type as the server shows it: its kind, dtype and each level's mapping and size."""
    return {
        "kind": type_.kind,
        "dtype": type_.dtype,
        "params": [str(p) for p in type_.params],
        "sizes": [p.size for p in type_.params],
    }


def _mappings(text: str, namespace: dict) -> list[dict]:
    """Every `m["…"]` of the file whose text is known without running code (a string, or an f-string
    whose fields are names of the module): its span, normal form and size, or why it does not parse."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "m"):
            continue
        written = _literal(node.slice, namespace)
        if written is None:
            continue
        entry = {"line": node.lineno, "column": node.col_offset + 1, "end_line": node.end_lineno,
                 "end_column": node.end_col_offset + 1, "text": written}  # fmt: skip
        try:
            value = parse(written, namespace)
        except MappingSyntaxError as error:
            entry["error"] = error.reason
        else:
            if isinstance(value, Mapping):  # as messages show it, and its canonical form
                entry.update(shown=str(value), normal=value.canonical(), size=value.size)
        found.append(entry)
    return found


def _literal(node: ast.expr, namespace: dict) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    pieces = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            pieces.append(str(part.value))
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.format_spec is None:
            if part.value.id not in namespace:
                return None
            pieces.append(str(namespace[part.value.id]))
        else:
            return None
    return "".join(pieces)


def _relocate(record: dict, copy: str, path: str, text: str) -> None:
    """Spans in the temporary copy become the user's file; a mapping's syntax error points at the word
    inside the string that it names; a diagnostic with no span in this file goes to its first line."""
    spans = [s for s in record["spans"] if s["file"] in (copy, path)]
    if not spans:
        elsewhere = [f"{s['file']}:{s['line']}" for s in record["spans"]]
        record["notes"] = [*record["notes"], *(f"at {where}" for where in elsewhere)]
        spans = [{"file": path, "line": 1, "column": 1, "end_line": 1, "end_column": 1, "label": ""}]
    for span in spans:
        span["file"] = path
    if record["code"] == "mapping-syntax":
        spans[0] = _inside_string(spans[0], record, text)
    elif not spans[0]["end_line"]:  # a Python error's frame gives where the failing name starts
        spans[0] = _word_span(spans[0], text)
    record["spans"] = spans


def _word_span(span: dict, text: str) -> dict:
    """The span widened to the name that starts at it (`Clustr` of a NameError, `colect` of an AttributeError)."""
    lines = text.splitlines()
    line = lines[span["line"] - 1] if span["line"] <= len(lines) else ""
    word = re.match(r"\w*", line[span["column"] - 1 :]).end()
    return {**span, "end_line": span["line"], "end_column": span["column"] + max(word, 1)}


def _inside_string(span: dict, record: dict, text: str) -> dict:
    """The span of the mapping text's offending column, when the mapping is a string on the span's line."""
    note = next((n for n in record["notes"] if n.startswith("in `")), None)
    if note is None:
        return span
    written, column = note[4:].rsplit("`, column ", 1)
    line = text.splitlines()[span["line"] - 1] if span["line"] <= len(text.splitlines()) else ""
    start = line.find(f'"{written}"') if f'"{written}"' in line else line.find(f"'{written}'")
    if start < 0:
        return span
    first = start + 1 + int(column)  # 1-based column of the offending character
    word = re.match(r"\w*", written[int(column) - 1 :]).end()
    return {**span, "column": first, "end_line": span["line"], "end_column": first + max(word, 1)}
