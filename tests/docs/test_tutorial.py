"""docs/tutorial.md, followed as written by a new user: one shell started with only the README's set-up, every
`$` command of the page's `console` blocks typed in order, and every block titled with a file name saved under
that name in the package, at its place in the page. Each command must exit 0 and print, in order, the lines the
page shows under it (`…` stands for anything, timings may differ: tests/docs/test_tutorial_mnist.py's rules).

The set-up: `make demo` or `make test` made the checkout's `.venv` and the README says `. .venv/bin/activate`.
Here `<tmp>/checkout/.venv` stands in for it: a fresh virtual environment made as tests/cli/test_newcomer.py
makes one (it sees this environment's packages, so nothing is downloaded and this one is never modified),
with furiosa-opt installed into it from this checkout, offline, which writes its `furiosa-opt` command there.
The shell starts in `<tmp>/checkout` with a PATH on which no `furiosa-opt` is found, and the page's own
activation line must put the environment's on it. `pip` there is a two-line launcher of the environment's
python (the environment is made without pip), and PIP_NO_INDEX / PIP_NO_BUILD_ISOLATION make the page's `pip
install -e .` the offline install test_newcomer does.

A titled `python` block is written as a new file; a titled `toml` block holds whole tables of a file that
`furiosa-opt new` wrote, each replacing the table of the same name, and must keep every line that table had.
"""

from __future__ import annotations

import os
import queue
import re
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from cli.test_newcomer import clean_environment, fresh_venv, run
from docs.test_tutorial_mnist import missing

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
README = ROOT / "README.md"
FENCE = re.compile(r"^```(?P<lang>\w+)(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.S | re.M)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')
ACTIVATE = ". .venv/bin/activate"
BUDGET_SECONDS = 60  # of CPU time for the set-up and every command: about 10 s (13 s wall) on two cores


@dataclass
class Command:
    line: str  # as typed after `$ `
    shown: list[str] = field(default_factory=list)  # the output lines the page shows under it


@dataclass
class File:
    path: str  # relative to the package, from the block's title
    lang: str
    text: str


def walk(markdown: str) -> list[Command | File]:
    """The page's steps in order: the commands of its `console` blocks and its blocks titled with a file name."""
    steps: list[Command | File] = []
    for block in FENCE.finditer(markdown):
        title = TITLE.search(block["info"])
        if block["lang"] == "console":
            for line in block["body"].splitlines():
                if line.startswith("$ "):
                    steps.append(Command(line[2:].strip()))
                elif steps and isinstance(steps[-1], Command) and line.strip():
                    steps[-1].shown.append(line)
        elif title and title["title"] != "sketch":
            steps.append(File(title["title"], block["lang"], block["body"]))
    return steps


class Shell:
    """One bash session: a command is typed, then a marker line that carries its exit code and the directory
    it left the shell in; what came before the marker is the command's output (stdout and stderr)."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group, so close() can end whatever a command left running
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def type(self, line: str, timeout: float = 240) -> tuple[int, str, Path]:
        """Run `line` as typed at the prompt (stdin empty); (exit code, output, working directory after)."""
        self.count += 1
        marker = f"@@done {self.count}@@"
        self.process.stdin.write(f"{{ {line}\n}} </dev/null\nprintf '\\n{marker} %d %s\\n' $? \"$PWD\"\n")
        self.process.stdin.flush()
        printed: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                got = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"`{line}` still runs after {timeout} s:\n{''.join(printed)[-3000:]}") from None
            assert got is not None, f"the shell exited during `{line}`:\n{''.join(printed)[-3000:]}"
            if got.startswith(marker):
                code, cwd = got[len(marker) :].strip().split(" ", 1)
                return int(code), "".join(printed), Path(cwd)
            printed.append(got)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def set_up(tmp: Path) -> Path:
    """`<tmp>/checkout/.venv`, standing in for the one `make demo` / `make test` makes; the checkout's path."""
    checkout = tmp / "checkout"
    venv = checkout / ".venv"
    python = fresh_venv(venv)
    # --no-index: every requirement is already installed (ours); the install writes bin/furiosa-opt
    run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "-e", str(ROOT)], tmp)
    pip = venv / "bin" / "pip"
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
    pip.chmod(0o755)
    return checkout


def shell_environment(tmp: Path) -> dict[str, str]:
    """A new shell's environment: this one's, less our interpreter's settings and every PATH entry that has a
    `furiosa-opt` (the test may run from an activated environment); pip offline."""
    environment = clean_environment()
    path = [p for p in environment.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "furiosa-opt").exists()]
    return environment | {
        "PATH": os.pathsep.join(path),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of --no-build-isolation in the environment
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "TMPDIR": str(tmp),
    }


def save(file: File, package: Path) -> None:
    target = package / file.path
    if file.lang == "toml":
        merge_tables(target, file.text)
        return
    assert not target.exists(), f"{file.path}: the page says to add it, but `furiosa-opt new` already wrote it"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(file.text)


def tables(text: str) -> dict[str, str]:
    """The `[header]` tables of a TOML text, each with its lines (header included)."""
    found: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=\[)", text):
        if chunk.startswith("["):
            found[chunk.split("\n", 1)[0]] = chunk.strip() + "\n"
    return found


def merge_tables(target: Path, shown: str) -> None:
    text = target.read_text()
    have = tables(text)
    for header, table in tables(shown).items():
        assert header in have, f"{target.name}: the page shows {header}, which `furiosa-opt new` did not write"
        dropped = set(have[header].splitlines()) - set(table.splitlines())
        assert not dropped, f"{target.name}: the page's {header} leaves out {sorted(dropped)}"
        text = text.replace(have[header], table)
    target.write_text(text)


def cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def test_the_readme_sets_up_the_path_as_the_tutorial_does():
    steps = walk(TUTORIAL.read_text())
    assert isinstance(steps[0], Command) and steps[0].line == ACTIVATE
    set_up_block = next(b["body"] for b in FENCE.finditer(README.read_text()) if b["lang"] == "sh")
    assert "make demo" in set_up_block and ACTIVATE in set_up_block, set_up_block


def test_the_page_has_the_steps_of_a_first_hour():
    steps = walk(TUTORIAL.read_text())
    lines = [s.line for s in steps if isinstance(s, Command)]
    files = [s.path for s in steps if isinstance(s, File)]
    assert files == ["src/hello/kernel/axpb_kernel.py", "src/hello/axpb.py", "tests/test_axpb.py", "pyproject.toml"]
    for wanted in ("furiosa-opt new hello", "python -m pytest", "furiosa-opt compile axpb", "furiosa-opt test"):
        assert any(line.startswith(wanted) for line in lines), wanted
    assert lines[-1] == "furiosa-opt run axpb"


def test_a_new_user_follows_the_tutorial_to_the_simulator(tmp_path):
    steps = walk(TUTORIAL.read_text())
    start, wall = cpu_seconds(), time.perf_counter()
    checkout = set_up(tmp_path)
    shell = Shell(checkout, shell_environment(tmp_path))
    problems: list[str] = []
    outputs: dict[str, str] = {}
    try:
        code, printed, _ = shell.type("command -v furiosa-opt")
        assert code != 0, f"a new shell already finds furiosa-opt: {printed}"
        cwd = checkout
        for step in steps:
            if isinstance(step, File):
                assert (cwd / "pyproject.toml").is_file() and cwd.name == "hello", f"saving {step.path} in {cwd}"
                save(step, cwd)
                continue
            code, printed, cwd = shell.type(step.line)
            outputs[step.line] = printed
            if code != 0:
                problems.append(f"$ {step.line}\nexit {code}:\n{printed[-3000:]}")
                break
            if absent := missing(step.shown, printed):
                problems.append(f"$ {step.line}\nnot printed: {absent}\nprinted:\n{printed[-3000:]}")
            if step.line == ACTIVATE:
                found = shell.type("command -v furiosa-opt python pip")[1].split()
                assert found == [str(checkout / ".venv" / "bin" / n) for n in ("furiosa-opt", "python", "pip")]
    finally:
        shell.close()
    seconds, wall = cpu_seconds() - start, time.perf_counter() - wall
    assert not problems, "\n\n".join(problems)

    package = tmp_path / "hello"
    assert cwd == package
    installed = run([str(checkout / ".venv" / "bin" / "python"), "-m", "pip", "show", "hello"], tmp_path).stdout
    assert f"Editable project location: {package}" in installed
    # the host program's oracle check, on the CPU backend and then on the simulator from the compiled EDF
    assert "axpb: 2048/2048 equal the numpy oracle (cpu backend)" in outputs["python -m hello.axpb"]
    ran = outputs["furiosa-opt run axpb"]
    assert "kernels run from their EDF on the TCP simulator" in ran
    assert "axpb: 2048/2048 equal the numpy oracle (npu backend)" in ran
    tested = outputs["furiosa-opt test"]
    assert re.search(r"=+ 9 passed in [\d.]+s =+$", tested, re.M), tested  # the template's 7 and the page's 2
    assert re.search(r"=+ 2 passed in [\d.]+s =+$", outputs["python -m pytest tests/test_axpb.py"], re.M)
    edfs = sorted(p.name for p in (package / "target" / "furiosa-opt" / "kernel").rglob("*axpb_kernel*.edf"))
    assert edfs, "no EDF of axpb_kernel was written"
    assert (package / "axpb.schedule.json").is_file() and (package / "axpb-summary" / "summary.md").is_file()
    print(f"the tutorial's walk: {wall:.1f} s wall, {seconds:.1f} s CPU")
    assert seconds < BUDGET_SECONDS, f"the walk used {seconds:.1f} s of CPU ({wall:.1f} s wall)"
