"""`furiosa-opt lsp` end to end, driven by pytest-lsp's client: the base template's gemm kernel, copied into
a temporary directory (the "user's tree", which the server must leave untouched), edited the way a user
would, with every answer checked against what the kernel says (the rule a broken mapping breaks, the
stages the table allows, the layouts the tracer computes)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from furiosa_opt.stages import following

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "base-template" / "src" / "base_template" / "kernel" / "gemm_kernel.py"
SERVER = [sys.executable, "-m", "furiosa_opt.cli.main", "lsp"]
ENV = {"FURIOSA_OPT_LSP_TIMEOUT": "3", "PATH": "/usr/bin:/bin"}
COLLECT = 'm[f"I % {TI}, J / 8 % {JT}, K / 16"], m["K % 16"])\n        .contract_outer'
BROKEN = COLLECT.replace("K / 16", "K / 8")


WRITTEN: dict[Path, str] = {}  # the files the tests put in the user's tree, and their text


def recording_client() -> LanguageClient:
    """pytest-lsp's client, keeping every publishDiagnostics by (uri, version), in order. Waiting for the next
    notification instead would lose one: pytest-lsp hands a notification to the one waiter registered when
    it arrives, so a second one read in the same chunk (another document's, then ours) reaches nobody."""
    client = LanguageClient(converter_factory=default_converter)
    client.published, client.arrived = {}, asyncio.Event()

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.setdefault((params.uri, params.version), []).append(list(params.diagnostics))
        client.arrived.set()

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish})
    return client


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("user-tree")


CONFIG = ClientServerConfig(server_command=SERVER, server_env=ENV, client_factory=recording_client)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, tree: Path):
    lsp_client.hint_refreshes = 0

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _refresh(params: None) -> None:
        lsp_client.hint_refreshes += 1

    hints = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    capabilities = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(inlay_hint=hints))
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities, root_uri=tree.as_uri()))
    yield
    await lsp_client.shutdown_session()
    # the user's tree holds what the tests wrote, unchanged, and nothing else (no copy, no __pycache__)
    found = {p: p.read_text() if p.is_file() else "(a directory)" for p in tree.rglob("*")}
    assert found == WRITTEN, "the server wrote into the user's tree"


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(tree)): (p.stat().st_size, p.stat().st_mtime_ns) for p in tree.rglob("*")}


class Document:
    """A file of the user's tree, opened in the client; `edit` replaces its whole text (a new version)."""

    def __init__(self, client: LanguageClient, path: Path, text: str):
        self.client, self.path, self.uri, self.version = client, path, path.as_uri(), 1
        self.taken = 0  # publications of this version already returned by `diagnostics`
        path.write_text(text)
        WRITTEN[path] = text
        item = types.TextDocumentItem(self.uri, "python", self.version, text)
        client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    def edit(self, text: str) -> None:
        self.version += 1
        self.taken = 0
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        identifier = types.VersionedTextDocumentIdentifier(version=self.version, uri=self.uri)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(identifier, [change]))

    async def diagnostics(self) -> list[types.Diagnostic]:
        """The next diagnostics published for this document's current version (a save publishes the same
        version again)."""
        published, arrived = self.client.published, self.client.arrived
        while len(published.get((self.uri, self.version), ())) <= self.taken:
            arrived.clear()  # no await between the check and the wait: nothing can slip past
            await asyncio.wait_for(arrived.wait(), 60)
        self.taken += 1
        return published[self.uri, self.version][self.taken - 1]

    @property
    def ident(self) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(self.uri)


@pytest.fixture(scope="module")
def gemm_text() -> str:
    return GEMM.read_text()


@pytest.mark.asyncio(loop_scope="module")
async def test_broken_mapping_gives_its_rule_at_the_call(client: LanguageClient, tree: Path, gemm_text: str):
    text = gemm_text.replace(COLLECT, BROKEN)
    document = Document(client, tree / "broken_gemm.py", text)
    before = snapshot(tree)
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "collect-time-mismatch"
    line = next(i for i, row in enumerate(text.splitlines()) if "K / 8" in row)
    row = text.splitlines()[line]
    start = row.index("collect")
    assert diagnostic.range == types.Range(types.Position(line, start), types.Position(line, len(row)))
    assert "Expected: `I % 32, J / 8 % 4, K / 16`" in diagnostic.message
    # the fix writes the mapping the rule expects, in place of the f-string that gave the other one
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(document.ident, diagnostic.range, types.CodeActionContext([diagnostic]))
    )
    (edit,) = actions[0].edit.changes[document.uri]
    assert edit.new_text == 'm["I % 32, J / 8 % 4, K / 16"]'
    assert row[edit.range.start.character : edit.range.end.character] == 'm[f"I % {TI}, J / 8 % {JT}, K / 8"]'
    assert snapshot(tree) == before, "the server wrote into the user's tree"


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_inlay_hints_and_completion_on_the_chain(client: LanguageClient, tree: Path, gemm_text: str):
    document = Document(client, tree / "gemm.py", gemm_text)
    assert await document.diagnostics() == []
    lines = gemm_text.splitlines()
    collect = next(i for i, row in enumerate(lines) if ".collect(" in row and "I %" in row)
    # hover on the stream after `.collect(...)`: its Time and Packet, as the rule computes them
    hover = await client.text_document_hover_async(
        types.HoverParams(document.ident, types.Position(collect, lines[collect].index("collect") + 2))
    )
    assert 'Time: `m["I % 32, J / 8 % 4, K / 16"]` (size 512)' in hover.contents.value
    assert 'Packet: `m["K % 16"]` (size 16)' in hover.contents.value
    assert "context `main`" in hover.contents.value
    # hover on a variable: the value its chain ends with (b_trf: the TRF tensor, lanes over J % 8)
    use = next(i for i, row in enumerate(lines) if "contract_outer(b_trf" in row)
    hover = await client.text_document_hover_async(
        types.HoverParams(document.ident, types.Position(use, lines[use].index("b_trf") + 1))
    )
    assert "**trf**<bf16> after `to_trf`" in hover.contents.value
    assert 'Lane: `m["J % 8"]` (size 8)' in hover.contents.value
    # hover on m[...] and on an axis
    hover = await client.text_document_hover_async(
        types.HoverParams(document.ident, types.Position(collect, lines[collect].index('m["K % 16"]') + 3))
    )
    assert "normal form `K % 16`, size 16" in hover.contents.value

    axis = next(i for i, row in enumerate(lines) if "axes(I=512" in row)
    hover = await client.text_document_hover_async(types.HoverParams(document.ident, types.Position(axis, 3)))
    assert hover.contents.value.startswith(f"axis `J`: size 512, declared on line {axis + 1}")
    # an inlay hint after every stage of both chains, ending where the call ends
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(document.ident, types.Range(types.Position(0, 0), types.Position(len(lines), 0)))
    )
    stages = [i for i, row in enumerate(lines) if row.lstrip().startswith((".fetch", ".collect", ".contract",
                                                                           ".cast", ".commit", ".to_trf"))]  # fmt: skip
    by_line = {h.position.line: h for h in hints}
    assert set(stages) <= set(by_line), "a stage has no inlay hint"
    for line in stages:
        assert by_line[line].position.character == len(lines[line].split("  #")[0].rstrip())
    assert by_line[collect].label == " Time [I % 32, J / 8 % 4, K / 16] Packet [K % 16]"
    # new results: the server asks the client (which says it can) to fetch the hints again
    refreshes = client.hint_refreshes
    document.edit(gemm_text + "\n# an edit\n")
    await document.diagnostics()
    for _ in range(100):
        if client.hint_refreshes > refreshes:
            break
        await asyncio.sleep(0.05)
    assert client.hint_refreshes > refreshes
    # completion after `.fetch(...)`: the stages the table allows after a fetch come first, in table order
    fetch = next(i for i, row in enumerate(lines) if ".fetch(" in row and "I %" in row)
    edited = "\n".join([*lines[: fetch + 1], "        .", *lines[fetch + 1 :]])
    document.edit(edited)
    completion = await client.text_document_completion_async(
        types.CompletionParams(document.ident, types.Position(fetch + 1, 9))
    )
    ranked = [item.label for item in sorted(completion.items, key=lambda item: item.sort_text)]
    allowed = list(following("fetch"))
    assert allowed == ["fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub", "switch", "collect"]
    assert ranked[: len(allowed)] == allowed
    assert {"commit", "cast", "to_trf"} <= set(ranked[len(allowed) :])
    # signature help inside a call (the line inserted above moved the collect one down)
    help_ = await client.text_document_signature_help_async(
        types.SignatureHelpParams(document.ident, types.Position(collect + 1, lines[collect].index("], m[") + 3))
    )
    assert help_.signatures[0].label.startswith("collect(time")
    assert help_.active_parameter == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_code_action_declares_an_undeclared_axis(client: LanguageClient, tree: Path, gemm_text: str):
    text = gemm_text.replace('Lane = m["J % 8"]', 'Lane = m["Q % 8"]')
    document = Document(client, tree / "undeclared.py", text)
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "mapping-syntax"
    lines = text.splitlines()
    line = next(i for i, row in enumerate(lines) if "Q % 8" in row)
    column = lines[line].index("Q % 8")
    assert diagnostic.range == types.Range(types.Position(line, column), types.Position(line, column + 1))
    assert [i.message for i in diagnostic.related_information] == ["note: in `Q % 8`, column 1"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(document.ident, diagnostic.range, types.CodeActionContext([diagnostic]))
    )
    declare = next(a for a in actions if a.title == "Declare axis `Q`")
    (edit,) = declare.edit.changes[document.uri]
    fixed = [*lines[: edit.range.start.line], edit.new_text.rstrip("\n"), *lines[edit.range.start.line :]]
    document.edit("\n".join(fixed) + "\n")
    assert edit.new_text == "Q = axes(Q=8)  # its size: check it\n"  # 8: what `Q % 8` needs
    assert edit.range.start.line == next(i for i, row in enumerate(lines) if "axes(I=512" in row) + 1
    # the fixed file imports: Q is declared (the kernel, whose lanes now run over Q, may refuse that)
    diagnostics = await document.diagnostics()
    assert all(d.code != "mapping-syntax" for d in diagnostics), diagnostics


@pytest.mark.asyncio(loop_scope="module")
async def test_endless_import_times_out_and_the_next_edit_is_answered(client: LanguageClient, tree: Path):
    log = tree.parent / "imports.log"
    text = (
        f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}}\\n')\nimport furiosa_opt\n"
        "while True:  # an endless loop that swallows every Exception\n    try:\n        pass\n"
        "    except Exception:\n        pass\n"
    )
    document = Document(client, tree / "endless.py", text)
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "lsp-timeout"
    assert 3 <= diagnostic.range.start.line <= 7  # in the endless loop, where the limit found it running
    document.edit("import furiosa_opt\nI = furiosa_opt.axes(I=8)\nbad = furiosa_opt.m['I, J']\n")
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "mapping-syntax"
    assert str(client._server.pid) not in log.read_text().split(), "the server imported the user's module"


@pytest.mark.asyncio(loop_scope="module")
async def test_syntax_error_is_reported_as_such(client: LanguageClient, tree: Path):
    document = Document(client, tree / "typo.py", "import furiosa_opt\ndef f(:\n    pass\n")
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "syntax-error"
    assert diagnostic.range.start == types.Position(1, 6)


HOST = """\
from base_template.kernel.gemm_kernel import gemm_kernel
from furiosa_opt import axes, launch, m

Q = axes(Q=8)
WIDTH = Q.size
LOW = m["Q / 2 % 2, Q % 2"]


def run(ctx, a, b):
    return launch(gemm_kernel, ctx, a, b)  # may refuse with collect-packet-mismatch
"""


@pytest.mark.asyncio(loop_scope="module")
async def test_definitions_and_rule_documentation(client: LanguageClient, tree: Path):
    document = Document(client, tree / "host.py", HOST)
    assert await document.diagnostics() == []
    lines = HOST.splitlines()
    launch_line = next(i for i, row in enumerate(lines) if "launch(gemm_kernel" in row)
    found = await client.text_document_definition_async(
        types.DefinitionParams(document.ident, types.Position(launch_line, lines[launch_line].index("gemm_kernel") + 1))
    )
    assert Path(found.uri.removeprefix("file://")).resolve() == GEMM.resolve()
    kernel_lines = GEMM.read_text().splitlines()
    assert kernel_lines[found.range.start.line].startswith("@device")  # the kernel's definition, decorator first
    assert kernel_lines[found.range.start.line + 1].startswith("def gemm_kernel(")
    width = next(i for i, row in enumerate(lines) if row.startswith("WIDTH"))
    found = await client.text_document_definition_async(
        types.DefinitionParams(document.ident, types.Position(width, lines[width].index("Q")))
    )
    assert found.uri == document.uri and found.range.start == types.Position(3, 0)
    low = next(i for i, row in enumerate(lines) if row.startswith("LOW"))
    hover = await client.text_document_hover_async(  # two digits of Q in order: one run, Q % 4
        types.HoverParams(document.ident, types.Position(low, lines[low].index("m[") + 1))
    )
    assert hover.contents.value == '`m["Q / 2 % 2, Q % 2"]`: normal form `Q % 4`, size 4'
    hover = await client.text_document_hover_async(
        types.HoverParams(document.ident, types.Position(launch_line, lines[launch_line].index("collect-packet") + 3))
    )
    assert hover.contents.value.startswith("**collect-packet-mismatch** (verify/stream.py, `check_collect`)")


@pytest.mark.asyncio(loop_scope="module")
async def test_stage_two_refusal_appears_on_save(client: LanguageClient, tree: Path):
    fixture = ROOT / "tests" / "negative" / "dm_overflow.py"
    text = fixture.read_text()
    document = Document(client, tree / "dm_overflow.py", text)
    assert await document.diagnostics() == []  # it traces: only placement refuses it
    client.text_document_did_save(types.DidSaveTextDocumentParams(document.ident))
    (diagnostic,) = await document.diagnostics()
    marked = next(i for i, row in enumerate(text.splitlines()) if "refused[lir]: dm-overflow" in row)
    assert (diagnostic.code, diagnostic.range.start.line) == ("dm-overflow", marked)


@pytest.mark.asyncio(loop_scope="module")
async def test_did_you_mean_fixes_a_misspelt_stage_and_name(client: LanguageClient, tree: Path, gemm_text: str):
    document = Document(client, tree / "misspelt.py", gemm_text)
    assert await document.diagnostics() == []
    for right, wrong in (('.collect(m[f"I', '.colect(m[f"I'), ('Cluster, Slice, m[f"I', 'Clustr, Slice, m[f"I')):
        text = gemm_text.replace(right, wrong)
        document.edit(text)
        (diagnostic,) = await document.diagnostics()
        word, meant = wrong.strip(".").split("(")[0].split(",")[0], right.strip(".").split("(")[0].split(",")[0]
        lines = text.splitlines()
        line = next(i for i, row in enumerate(lines) if wrong in row)
        start = lines[line].index(word)
        assert diagnostic.range == types.Range(types.Position(line, start), types.Position(line, start + len(word)))
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(document.ident, diagnostic.range, types.CodeActionContext([diagnostic]))
        )
        assert [a.title for a in actions] == [f"Did you mean `{meant}`?"]
        assert actions[0].edit.changes[document.uri][0].new_text == meant


@pytest.mark.asyncio(loop_scope="module")
async def test_a_file_without_furiosa_opt_is_left_to_the_python_server(client: LanguageClient, tree: Path):
    text = "import numpy\nx = numpy.array([1]).fetch(1).\n"
    document = Document(client, tree / "plain.py", text)
    completion = await client.text_document_completion_async(
        types.CompletionParams(document.ident, types.Position(1, len(text.splitlines()[1])))
    )
    assert completion is None
    document.edit("import furiosa_opt\n" + text)  # now it is the kernel language's: the stages after a fetch
    completion = await client.text_document_completion_async(
        types.CompletionParams(document.ident, types.Position(2, len(text.splitlines()[1])))
    )
    assert [i.label for i in completion.items if i.sort_text.startswith("0")] == list(following("fetch"))


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_on_a_variable_while_the_text_does_not_parse(client: LanguageClient, tree: Path, gemm_text):
    fetched = '    fetched = ctx.main.begin(a.view()).fetch(m[f"I % {TI}, J / 8 % {JT}"], m["K"])'
    lines = gemm_text.splitlines()
    at = next(i for i, row in enumerate(lines) if row.startswith("    out = ("))
    lines.insert(at, fetched)
    document = Document(client, tree / "variable.py", "\n".join(lines) + "\n")
    assert await document.diagnostics() == []
    lines.insert(at + 1, "    fetched.")
    document.edit("\n".join(lines) + "\n")  # half typed: a syntax error, the last analysis's values stay
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "syntax-error"
    completion = await client.text_document_completion_async(
        types.CompletionParams(document.ident, types.Position(at + 1, len("    fetched.")))
    )
    assert [i.label for i in completion.items if i.sort_text.startswith("0")] == list(following("fetch"))
    hover = await client.text_document_hover_async(
        types.HoverParams(document.ident, types.Position(at, fetched.index(".fetch(") + 2))
    )
    assert 'Packet: `m["K"]` (size 64)' in hover.contents.value


def children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_dead_worker_is_started_again(client: LanguageClient, tree: Path, gemm_text: str):
    document = Document(client, tree / "revived.py", gemm_text)
    assert await document.diagnostics() == []
    (worker,) = [pid for pid in children(client._server.pid) if b"furiosa_opt.lsp.worker" in
                 Path(f"/proc/{pid}/cmdline").read_bytes()]  # fmt: skip
    os.kill(worker, signal.SIGKILL)  # the worker this test's server started
    document.edit(gemm_text.replace(COLLECT, BROKEN))
    (diagnostic,) = await document.diagnostics()
    assert diagnostic.code == "collect-time-mismatch"  # answered by a new worker
