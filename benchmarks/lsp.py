"""`furiosa-opt lsp` as an editor sees it, through pygls's client over stdio (the server in its own process,
its worker warm after the first request):

* diagnostics for the base template's gemm kernel after an edit (the debounce included), warm: target ≤ 300 ms;
* hover on a stage of its chain: target ≤ 50 ms;
* resident memory of the server and its worker (and any child still running) after opening every Python file
  under `examples/` and waiting for each file's diagnostics: target ≤ 600 MB.

The files are copies in a temporary directory, so nothing is written near the examples.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import machine
from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "examples" / "base-template" / "src" / "base_template" / "kernel" / "gemm_kernel.py"


def resident_mb(pid: int) -> float:
    """VmRSS of a process and all its descendants, in MB (from /proc)."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:  # a process may end meanwhile (a zombie has no VmRSS)
            status = Path(f"/proc/{current}/status").read_text()
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total / 1024


class Session:
    """A client with the server started, and a way to wait for a document version's diagnostics."""

    def __init__(self) -> None:
        self.client = LanguageClient("furiosa-opt-benchmark", "1")
        self.published: dict[tuple[str, int], asyncio.Future] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            future = self.expect(params.uri, params.version)
            if not future.done():
                future.set_result(params.diagnostics)

    def expect(self, uri: str, version: int) -> asyncio.Future:
        return self.published.setdefault((uri, version), asyncio.get_running_loop().create_future())

    async def start(self, root: Path) -> None:
        await self.client.start_io(sys.executable, "-m", "furiosa_opt.cli.main", "lsp")
        params = types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
        await self.client.initialize_async(params)
        self.client.initialized(types.InitializedParams())

    def open(self, path: Path, text: str) -> None:
        item = types.TextDocumentItem(path.as_uri(), "python", 1, text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    def change(self, path: Path, version: int, text: str) -> None:
        identifier = types.VersionedTextDocumentIdentifier(version=version, uri=path.as_uri())
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(identifier, [change]))

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def measure(scratch: Path) -> tuple[list[float], list[float], float, float, int, list[str]]:
    session = Session()
    await session.start(scratch)
    gemm = scratch / "gemm_kernel.py"
    text = GEMM.read_text()
    gemm.write_text(text)
    session.open(gemm, text)
    await asyncio.wait_for(session.expect(gemm.as_uri(), 1), 60)
    edits = []
    for version in range(2, 22):  # each edit changes a comment, so the kernel is traced anew every time
        start = time.perf_counter()
        session.change(gemm, version, text + f"\n# edit {version}\n")
        await asyncio.wait_for(session.expect(gemm.as_uri(), version), 60)
        edits.append(time.perf_counter() - start)
    lines = text.splitlines()
    line = next(i for i, row in enumerate(lines) if ".collect(" in row and "I %" in row)
    where = types.HoverParams(types.TextDocumentIdentifier(gemm.as_uri()), types.Position(line, 12))
    hovers = []
    for _ in range(50):
        start = time.perf_counter()
        answer = await session.client.text_document_hover_async(where)
        hovers.append(time.perf_counter() - start)
        assert answer is not None and "Time" in answer.contents.value
    opened, peak, sampling = 0, [0.0], True

    async def sample() -> None:  # the peak while files are analysed: children come and go
        while sampling:
            peak[0] = max(peak[0], resident_mb(session.client._server.pid))
            await asyncio.sleep(0.02)

    sampler = asyncio.get_running_loop().create_task(sample())
    reported = []
    shutil.copytree(ROOT / "examples", scratch / "examples", ignore=shutil.ignore_patterns("target", "__pycache__"))
    for path in sorted((ROOT / "examples").rglob("*.py")):
        source = path.read_text()
        copy = scratch / "examples" / path.relative_to(ROOT / "examples")
        session.open(copy, source)
        if "furiosa_opt" in source:  # the server answers only for the kernel language
            diagnostics = await asyncio.wait_for(session.expect(copy.as_uri(), 1), 120)
            reported += [f"{path.relative_to(ROOT)}: {d.code}: {d.message}" for d in diagnostics]
        opened += 1
    sampling = False
    await sampler
    memory = resident_mb(session.client._server.pid)
    await session.stop()
    return edits, hovers, memory, peak[0], opened, reported


def main() -> int:
    print(machine())
    with tempfile.TemporaryDirectory(prefix="furiosa-opt-lsp-bench-") as scratch:
        edits, hovers, memory, peak, opened, reported = asyncio.run(measure(Path(scratch)))
    edit, hover = statistics.median(edits) * 1e3, statistics.median(hovers) * 1e3
    print(f"diagnostics after an edit (gemm, warm): median {edit:6.1f} ms, max {max(edits) * 1e3:6.1f} ms "
          f"(target ≤ 300 ms)")  # fmt: skip
    print(f"hover on a stage:                      median {hover:6.1f} ms, max {max(hovers) * 1e3:6.1f} ms "
          f"(target ≤ 50 ms)")  # fmt: skip
    print(f"resident memory after opening {opened} files under examples/: {memory:6.0f} MB, {peak:.0f} MB at the "
          f"peak while they were analysed (target ≤ 600 MB)")  # fmt: skip
    print(f"diagnostics on the examples (each should be a real finding): {len(reported)}")
    for line in reported:
        print(f"  {line}")
    ok = edit <= 300 and hover <= 50 and max(memory, peak) <= 600
    print("OK" if ok else "OVER TARGET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
