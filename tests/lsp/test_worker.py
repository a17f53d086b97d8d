"""The language server's worker process on its own (JSON lines on stdin and stdout): it reports what
`furiosa-opt compile` reports for every refused program of tests/negative (the oracle: each file's
`# refused[stage]: code` markers), stage 2 included as on save; it survives a crash and a memory
hog in the user's module; a newer text of a file supersedes an older one still running."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_negative import FIXTURES, expected


class Worker:
    def __init__(self, timeout: float = 20, memory_mb: int = 3072):
        command = [sys.executable, "-m", "furiosa_opt.lsp.worker", str(timeout), str(memory_mb)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.count = 0

    def send(self, path: Path, text: str, full: bool = True) -> int:
        self.count += 1
        self.process.stdin.write(json.dumps({"id": self.count, "path": str(path), "text": text, "full": full}) + "\n")
        self.process.stdin.flush()
        return self.count

    def answer(self) -> dict:
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(timeout=30) == 0


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    worker = Worker()
    yield worker
    worker.close()


def test_every_refused_program_is_reported_where_marked(worker: Worker):
    before = sorted((p.name, p.stat().st_mtime_ns) for p in FIXTURES[0].parent.iterdir())
    for path in FIXTURES:
        worker.send(path, path.read_text())
    for path in FIXTURES:
        found = worker.answer()["result"]["diagnostics"]
        got = {(d["stage"], d["code"], d["spans"][0]["line"]) for d in found}
        assert got == expected(path), (path.name, found)
        assert all(d["spans"][0]["file"] == str(path) for d in found)
    after = sorted((p.name, p.stat().st_mtime_ns) for p in FIXTURES[0].parent.iterdir())
    assert after == before, "the worker wrote beside the user's file"


def test_stage_two_refusals_only_when_asked(worker: Worker):
    path = FIXTURES[0].parent / "dm_overflow.py"
    worker.send(path, path.read_text(), full=False)  # as on an edit: stage 1 only
    assert worker.answer()["result"]["diagnostics"] == []


def test_a_crash_a_memory_hog_and_stray_io_cost_the_worker_nothing(tmp_path: Path):
    worker = Worker(timeout=20, memory_mb=1024)
    path = tmp_path / "hostile.py"
    worker.send(path, "import furiosa_opt, os\nos.abort()\n")
    assert "crashed the analysis (SIGABRT)" in worker.answer()["error"]
    worker.send(path, "import furiosa_opt\nhog = bytearray(4 * 2**30)\n")
    (diagnostic,) = worker.answer()["result"]["diagnostics"]
    assert (diagnostic["code"], diagnostic["spans"][0]["line"]) == ("lsp-memory", 2)
    worker.send(path, "import furiosa_opt, sys\nprint('noise')\nsys.stdin.read()\nI = furiosa_opt.axes(I=8)\n")
    assert worker.answer()["result"]["axes"] == {"I": 8}
    worker.close()


def test_a_newer_text_supersedes_the_one_running(tmp_path: Path):
    worker = Worker(timeout=20)
    path = tmp_path / "slow.py"
    first = worker.send(path, "import furiosa_opt, time\ntime.sleep(15)\n")
    second = worker.send(path, "import furiosa_opt\nI = furiosa_opt.axes(I=4)\n")
    assert worker.answer() == {"id": first, "superseded": True}
    answer = worker.answer()
    assert answer["id"] == second and answer["result"]["axes"] == {"I": 4}
    worker.close()


def test_the_tuned_choices_beside_the_module_are_used(worker: Worker, tmp_path: Path):
    gemm = Path(__file__).parents[2] / "examples/base-template/src/base_template/kernel/gemm_kernel.py"
    path = tmp_path / "gemm_kernel.py"
    (tmp_path / "gemm_kernel.tuned.json").write_text('{"choices": {"tile_i": 64, "tile_j": 64, "cluster": "1 # 2"}}')
    worker.send(path, gemm.read_text(), full=False)  # the buffer: the file itself need not exist
    result = worker.answer()["result"]
    assert result["diagnostics"] == []
    to_dm = [v["params"] for v in result["values"] if v["opcode"] == "to_dm"]
    assert to_dm[0] == ["1", "1 # 2", "I / 64, J / 64", "I % 64, K"]  # 64 × 64 tiles, as the tuned file says
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm_kernel.tuned.json"]
