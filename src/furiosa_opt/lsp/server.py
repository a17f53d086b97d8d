"""`furiosa-opt lsp`: the kernel language's language server (stdio), beside the user's Python server.

It answers only for files that use furiosa_opt. The user's module is never imported here: a worker
process (`worker.py`) imports a temporary copy of the buffer in a child with a time and memory limit and
sends back plain data, which the pure modules (`lookup.py`, `fixes.py`, `members.py`, `rules.py`) turn into
diagnostics, hovers, inlay hints, completions, signature help, code actions and definitions.

    furiosa-opt lsp        # FURIOSA_OPT_LSP_TIMEOUT (s), FURIOSA_OPT_LSP_MEMORY_MB, FURIOSA_OPT_LSP_DEBOUNCE (s)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from furiosa_opt import __version__
from furiosa_opt.lsp import lookup
from furiosa_opt.lsp.fixes import fixes
from furiosa_opt.lsp.members import members_after, signature
from furiosa_opt.lsp.rules import rule_documentation
from furiosa_opt.stages import STAGES


class WorkerProcess:
    """The server's handle of the warm worker process (`worker.py`) and its pending requests; started on
    first use, restarted if it dies.

        answer = await WorkerProcess(10, 3072).analyse("/pkg/gemm.py", text, full=False)
    """

    def __init__(self, timeout: float, memory_mb: int):
        self.timeout, self.memory_mb = timeout, memory_mb
        self.process: asyncio.subprocess.Process | None = None
        self.waiting: dict[int, asyncio.Future] = {}
        self.ids = itertools.count()

    async def _started(self) -> asyncio.subprocess.Process:
        if self.process is None or self.process.returncode is not None:
            command = [sys.executable, "-m", "furiosa_opt.lsp.worker", str(self.timeout), str(self.memory_mb)]
            self.process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**26
            )
            self.waiting = {}  # each process answers its own requests
            asyncio.get_running_loop().create_task(self._read(self.process, self.waiting))
        return self.process

    async def _read(self, process: asyncio.subprocess.Process, waiting: dict[int, asyncio.Future]) -> None:
        while line := await process.stdout.readline():
            answer = json.loads(line)
            future = waiting.pop(answer["id"], None)
            if future is not None and not future.done():
                future.set_result(answer)
        for future in waiting.values():  # the worker died: its requests get an error
            if not future.done():
                future.set_result({"error": "the language server's worker stopped"})
        waiting.clear()
        if self.process is process:
            self.process = None  # the next request starts a new one

    async def analyse(self, path: str, text: str, full: bool) -> dict:
        """The worker's answer: {"result": …}, {"error": why} or {"superseded": True}."""
        request = {"path": path, "text": text, "full": full}
        for _ in range(2):  # a worker found dead when written to is started again, once
            process = await self._started()
            key, waiting = next(self.ids), self.waiting
            future = waiting[key] = asyncio.get_running_loop().create_future()
            try:
                process.stdin.write((json.dumps({"id": key, **request}) + "\n").encode())
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                waiting.pop(key, None)
                self.process = None
                continue
            return await future
        return {"error": "the language server's worker could not be started"}


class KernelServer(LanguageServer):
    """The server's state: each document's latest analysis (its version and text) and pending edits."""

    def __init__(self) -> None:
        super().__init__("furiosa-opt", __version__)
        timeout = float(os.environ.get("FURIOSA_OPT_LSP_TIMEOUT", "10"))
        self.worker = WorkerProcess(timeout, int(os.environ.get("FURIOSA_OPT_LSP_MEMORY_MB", "3072")))
        self.debounce = float(os.environ.get("FURIOSA_OPT_LSP_DEBOUNCE", "0.1"))
        self.analyses: dict[str, tuple[int, str, dict]] = {}
        self.edits: dict[str, asyncio.Task] = {}

    def analysis(self, uri: str) -> tuple[str, dict]:
        """The latest analysis of a document and the text it was made from (empty before the first)."""
        _, text, analysis = self.analyses.get(uri, (0, "", {}))
        return text, analysis

    async def refresh(self, uri: str, full: bool, delay: float = 0.0) -> None:
        """Analyse the document as it is now and publish its diagnostics, unless a newer edit came."""
        if delay:
            await asyncio.sleep(delay)
        document = self.workspace.get_text_document(uri)
        version, text = document.version or 0, document.source
        if not kernel_language(text):
            if self.analyses.pop(uri, None) is not None:  # it was: its diagnostics go
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, [], version))
            return  # not the kernel language: the user's Python server answers
        answer = await self.worker.analyse(document.path, text, full)
        if answer.get("superseded") or (self.workspace.get_text_document(uri).version or 0) != version:
            return  # stale: a newer edit is (or will be) analysed
        analysis = answer.get("result") or {"diagnostics": [_limit_record(answer["error"], document.path)]}
        previous = self.analyses.get(uri)
        if previous is not None and not analysis.get("values") and _unfinished(analysis):
            text, analysis = previous[1], {**previous[2], "diagnostics": analysis["diagnostics"]}
        self.analyses[uri] = (version, text, analysis)
        diagnostics = [_diagnostic(record, text, analysis, uri) for record in analysis["diagnostics"]]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)  # the layouts may have changed: ask for the hints again

    def schedule(self, uri: str, full: bool, delay: float = 0.0) -> None:
        """Start an analysis of the document, cancelling the one pending for it (its answer would be stale)."""
        pending = self.edits.pop(uri, None)
        if pending is not None and not pending.done():
            pending.cancel()
        self.edits[uri] = asyncio.get_running_loop().create_task(self.refresh(uri, full, delay))


def kernel_language(text: str) -> bool:
    """Whether a file is the kernel language's (it uses furiosa_opt); other files are left to the user's
    Python server.

        kernel_language("from furiosa_opt import *\n")  # True
    """
    return "furiosa_opt" in text


def _unfinished(analysis: dict) -> bool:
    """A text being typed (it does not parse): hover, hints and completion keep the last analysis's values."""
    return any(d["code"] == "syntax-error" for d in analysis["diagnostics"])


def _limit_record(error: str, path: str) -> dict:
    code = "lsp-timeout" if "took over" in error else "lsp-worker"
    span = {"file": path, "line": 1, "column": 1, "end_line": 1, "end_column": 1, "label": ""}
    return {"code": code, "message": error, "spans": [span], "notes": [], "help": [], "level": "error"}


def _range(line: int, column: int, end_line: int, end_column: int) -> types.Range:
    """A 1-based span as an LSP range (0-based; an empty span covers one character)."""
    end_line, end_column = end_line or line, end_column or column
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    return types.Range(types.Position(line - 1, column - 1), types.Position(end_line - 1, end_column - 1))


def _diagnostic(record: dict, text: str, analysis: dict, uri: str) -> types.Diagnostic:
    span = record["spans"][0]
    where = _range(span["line"], span["column"], span["end_line"], span["end_column"])
    related = [
        types.DiagnosticRelatedInformation(types.Location(uri, where), f"{kind}: {line}")
        for kind, lines in (("note", record["notes"]), ("help", record["help"]))
        for line in lines
    ]
    severity = types.DiagnosticSeverity.Warning if record["level"] == "warning" else types.DiagnosticSeverity.Error
    return types.Diagnostic(
        range=where,
        message=record["message"],
        severity=severity,
        code=record["code"],
        source="furiosa-opt",
        related_information=related or None,
        data={"fixes": fixes(record, text, analysis)},
    )


SERVER = KernelServer()


@SERVER.feature(types.TEXT_DOCUMENT_DID_OPEN)
def _opened(server: KernelServer, params: types.DidOpenTextDocumentParams) -> None:
    server.schedule(params.text_document.uri, full=False)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def _changed(server: KernelServer, params: types.DidChangeTextDocumentParams) -> None:
    server.schedule(params.text_document.uri, full=False, delay=server.debounce)


@SERVER.feature(types.TEXT_DOCUMENT_DID_SAVE)
def _saved(server: KernelServer, params: types.DidSaveTextDocumentParams) -> None:
    server.schedule(params.text_document.uri, full=True)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def _closed(server: KernelServer, params: types.DidCloseTextDocumentParams) -> None:
    server.analyses.pop(params.text_document.uri, None)


@SERVER.feature(types.TEXT_DOCUMENT_HOVER)
def _hover(server: KernelServer, params: types.HoverParams) -> types.Hover | None:
    text, analysis = server.analysis(params.text_document.uri)
    line, column = params.position.line + 1, params.position.character + 1
    word = lookup.word_at(text, line, column)
    axes = analysis.get("axes", {})
    parts = []
    mapping = lookup.mapping_at(analysis, line, column)
    if mapping is not None and "normal" in mapping:
        parts.append(f'`m["{mapping["text"]}"]`: normal form `{mapping["normal"]}`, size {mapping["size"]}')
    elif mapping is not None:
        parts.append(f'`m["{mapping["text"]}"]` does not parse: {mapping["error"]}')
    if word in axes:
        declared = lookup.axis_declaration(text, word)
        place = f", declared on line {declared[0]}" if declared else ""
        parts.append(f"axis `{word}`: size {axes[word]}{place}")
    if mapping is None and word not in axes:
        value = lookup.value_at(analysis, text, line, column)
        if value is not None:
            parts.append(lookup.shown(value))
        else:
            rule = lookup.word_at(text, line, column, r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
            if rule in rule_documentation():
                parts.append(rule_documentation()[rule])
    if not parts:
        return None
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, "\n\n".join(parts)))


@SERVER.feature(types.TEXT_DOCUMENT_INLAY_HINT)
def _hints(server: KernelServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    _, analysis = server.analysis(params.text_document.uri)
    first, last = params.range.start.line + 1, params.range.end.line + 1
    hints = {}
    for value in analysis.get("values", []):
        if value["opcode"] in STAGES and first <= value["end_line"] <= last:
            where = types.Position(value["end_line"] - 1, value["end_column"] - 1)
            hints[(where.line, where.character)] = types.InlayHint(
                where, f" {lookup.hint(value)}", kind=types.InlayHintKind.Type, padding_left=True
            )
    return list(hints.values())


@SERVER.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["."]))
def _complete(server: KernelServer, params: types.CompletionParams) -> types.CompletionList | None:
    before = _before(server, params.text_document.uri, params.position)
    if not kernel_language(before):
        return None
    method = lookup.previous_method(before)
    name = lookup.dotted_name(before) if method is None else None
    if name is not None:  # a variable: the stage its value came from, in the latest analysis
        text, analysis = server.analysis(params.text_document.uri)
        value = lookup.variable_value(analysis, text, name, params.position.line + 1)
        method = value["opcode"] if value else None
    found = members_after(method) if method else None
    if found is None:
        return None
    allowed, others = found
    items = [
        types.CompletionItem(
            name, kind=types.CompletionItemKind.Method, sort_text=f"0{i:03}", detail=f"a stage allowed after `{method}`"
        )
        for i, name in enumerate(allowed)
    ]
    items += [types.CompletionItem(name, kind=types.CompletionItemKind.Method, sort_text=f"1{name}") for name in others]
    return types.CompletionList(is_incomplete=False, items=items)


@SERVER.feature(types.TEXT_DOCUMENT_SIGNATURE_HELP, types.SignatureHelpOptions(trigger_characters=["(", ","]))
def _signature(server: KernelServer, params: types.SignatureHelpParams) -> types.SignatureHelp | None:
    before = _before(server, params.text_document.uri, params.position)
    call = lookup.open_call(before) if kernel_language(before) else None
    found = signature(call[0]) if call else None
    if found is None:
        return None
    label, parameters, doc = found
    information = types.SignatureInformation(
        label, documentation=doc, parameters=[types.ParameterInformation(p) for p in parameters]
    )
    return types.SignatureHelp([information], active_signature=0, active_parameter=call[1])


@SERVER.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def _actions(server: KernelServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    actions = []
    for diagnostic in params.context.diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        for fix in data.get("fixes", []):
            edit = types.TextEdit(_range(fix["line"], fix["column"], fix["end_line"], fix["end_column"]), fix["text"])
            if (fix["line"], fix["column"]) == (fix["end_line"], fix["end_column"]):  # an insertion
                start = types.Position(fix["line"] - 1, fix["column"] - 1)
                edit = types.TextEdit(types.Range(start, start), fix["text"])
            actions.append(
                types.CodeAction(
                    fix["title"],
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    edit=types.WorkspaceEdit(changes={uri: [edit]}),
                )
            )
    return actions


@SERVER.feature(types.TEXT_DOCUMENT_DEFINITION)
def _definition(server: KernelServer, params: types.DefinitionParams) -> types.Location | None:
    uri = params.text_document.uri
    text, analysis = server.analysis(uri)
    word = lookup.word_at(text, params.position.line + 1, params.position.character + 1)
    if word in analysis.get("axes", {}):
        declared = lookup.axis_declaration(text, word)
        if declared:
            return types.Location(uri, _range(declared[0], declared[1], declared[0], declared[2]))
    kernel = analysis.get("kernels", {}).get(word)
    if kernel is not None:
        path = server.workspace.get_text_document(uri).path
        target = kernel["file"] if Path(kernel["file"]).exists() else path  # this file's own kernels
        start = types.Position(kernel["line"] - 1, 0)
        return types.Location(from_fs_path(target), types.Range(start, start))
    return None


def _before(server: KernelServer, uri: str, position: types.Position) -> str:
    """The document's text up to the cursor (the current text: completion does not wait for analysis)."""
    lines = server.workspace.get_text_document(uri).lines
    return "".join(lines[: position.line]) + (lines[position.line][: position.character] if lines else "")


def main() -> None:
    """Serve on stdin and stdout until the client says exit."""
    SERVER.start_io()
