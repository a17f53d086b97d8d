"""docs/tutorial-mnist.md, executed: every command of its `console` blocks runs, in order, in one bash session
started at the root of a scratch copy of the checkout (examples/mnist and the workspace's pyproject.toml, the
.venv linked), so `cd`, variables and the files one step writes carry over to the next while the checkout's
data file, target/ and examples stay untouched. Each command must exit 0 and print, in order, the lines the
tutorial shows for it: `…` stands for anything, and timings (`3.8 s`, `33.3 images/s`) may differ. The viewer
(interactive) and the screenshot script (docs/screenshots.py, which needs Chromium) are not run; the images
the tutorial shows must exist and be small.

`python tests/docs/test_tutorial_mnist.py` prints what each command prints now, to refresh the tutorial.
"""

from __future__ import annotations

import importlib.util
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial-mnist.md"
SKIPPED = ("furiosa-opt view", "python docs/screenshots.py")  # interactive / needs a browser: not run here
BUDGET_SECONDS = 60  # of CPU time for all the commands
VOLATILE = re.compile(r"\d+(?:\.\d+)?(?= s\b| images/s)")  # wall-clock figures


@dataclass
class Command:
    line: str  # as typed after `$ `
    shown: list[str]  # the output lines the tutorial shows under it


def commands(markdown: str) -> list[Command]:
    """The `$ ` lines of the ```console blocks, each with the output lines printed under it."""
    found: list[Command] = []
    inside = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            inside = not inside and line.strip() == "```console"
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            found.append(Command(line[2:].strip(), []))
        elif found and line.strip():
            found[-1].shown.append(line)
    return found


def pattern(shown: str) -> re.Pattern[str]:
    """A shown line as a regular expression: `…` matches anything, a timing any number."""
    parts = []
    for piece in shown.strip().split("…"):
        at = 0
        for number in VOLATILE.finditer(piece):
            parts.append(re.escape(piece[at : number.start()]) + r"[0-9.]+")
            at = number.end()
        parts.append(re.escape(piece[at:]))
        parts.append(".*")
    return re.compile("".join(parts[:-1]))


def missing(shown: list[str], printed: str) -> list[str]:
    """The shown lines that do not appear in `printed`, in order (a lone `…` line skips anything)."""
    lines = [line.rstrip() for line in printed.splitlines()]
    at, absent = 0, []
    for want in shown:
        if want.strip() == "…":
            continue
        regex = pattern(want)
        hit = next((i for i in range(at, len(lines)) if regex.search(lines[i])), None)
        if hit is None:
            absent.append(want)
        else:
            at = hit + 1
    return absent


def scratch_checkout(tmp: Path) -> Path:
    """A copy of what the tutorial touches: examples/mnist, the workspace pyproject.toml, .venv linked."""
    repo = tmp / "repo"
    ignore = shutil.ignore_patterns("target", "*.egg-info", "__pycache__", ".pytest_cache")
    shutil.copytree(ROOT / "examples" / "mnist", repo / "examples" / "mnist", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    (repo / ".venv").symlink_to(Path(sys.executable).parents[1])
    return repo


def run_all(cmds: list[Command], tmp: Path) -> list[tuple[int, str]]:
    """Run the commands in one bash session from the scratch checkout's root; (exit code, output) of each.

    `python -m mnist…` must import the copy's package (so training writes the copy's data file), hence
    PYTHONPATH; `mktemp` makes its directories under the test's temporary directory."""
    repo = scratch_checkout(tmp)
    script = ["exec 2>&1 </dev/null"]
    for i, cmd in enumerate(cmds):
        script += [f"printf '\\n@@begin {i}@@\\n'", cmd.line, f"printf '\\n@@end {i} %d@@\\n' $?"]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FURIOSA_OPT_")}
    bin_dir = str(Path(sys.executable).parent)
    environment |= {
        "PATH": os.pathsep.join([bin_dir, environment.get("PATH", "")]),
        "PYTHONPATH": str(repo / "examples" / "mnist" / "src"),
        "TMPDIR": str(tmp),
        "COLUMNS": "200",
    }
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=repo, env=environment, capture_output=True, text=True, timeout=300
    )
    results = []
    for i in range(len(cmds)):
        found = re.search(rf"\n@@begin {i}@@\n(.*?)\n@@end {i} (\d+)@@\n", done.stdout, re.S)
        results.append((int(found[2]), found[1]) if found else (-1, done.stdout[-2000:]))
    return results


def runnable(cmds: list[Command]) -> list[Command]:
    return [c for c in cmds if not c.line.startswith(SKIPPED)]


def cpu_seconds() -> float:
    """User + system time of the finished child processes (and theirs): what the commands cost, whatever
    else the machine is running."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@pytest.mark.slow  # about a minute of CPU: `make bench` runs it (make test stays within its 10 minutes)
def test_every_command_runs_and_prints_what_the_tutorial_shows(tmp_path):
    cmds = runnable(commands(TUTORIAL.read_text()))
    assert len(cmds) >= 15
    start, wall = cpu_seconds(), time.perf_counter()
    results = run_all(cmds, tmp_path)
    seconds, wall = cpu_seconds() - start, time.perf_counter() - wall
    problems = []
    for cmd, (code, printed) in zip(cmds, results, strict=True):
        if code != 0:
            problems.append(f"$ {cmd.line}\nexit {code}:\n{printed[-3000:]}")
            continue
        absent = missing(cmd.shown, printed)
        if absent:
            problems.append(f"$ {cmd.line}\nnot printed: {absent}\nprinted:\n{printed[-3000:]}")
    assert not problems, "\n\n".join(problems)
    # CPU time, not wall time: about 25 s on an idle two-core machine (28 s wall), and the wall time doubles
    # when other jobs share the cores. A hang is caught by run_all's timeout.
    assert seconds < BUDGET_SECONDS, f"the tutorial's commands used {seconds:.1f} s of CPU ({wall:.1f} s wall)"


def test_the_steps_the_brief_names_are_there():
    lines = [c.line for c in commands(TUTORIAL.read_text())]

    def has(prefix: str) -> bool:
        return any(line.startswith(prefix) for line in lines)

    for prefix in (
        "python -m mnist.train",
        "python -m mnist",
        "furiosa-opt run mnist",
        "furiosa-opt compile forward --dump-schedule",
        "furiosa-opt schedule summary",
        "furiosa-opt schedule critical-path",
        "furiosa-opt schedule gaps",
        "furiosa-opt view",
        "furiosa-opt schedule diff",
    ):
        assert has(prefix), prefix
    assert any("--dump-summary" in line for line in lines)


def test_the_images_it_shows_exist_and_are_small():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", TUTORIAL.read_text())
    assert images
    for name in images:
        path = (TUTORIAL.parent / name).resolve()
        assert path.is_file(), name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert path.stat().st_size < 200_000, f"{name}: {path.stat().st_size} bytes"


def test_the_screenshot_script_makes_the_tutorials_edit():
    """docs/screenshots.py photographs the variant of step 5: its edit must be the tutorial's `sed` line."""
    spec = importlib.util.spec_from_file_location("docs_screenshots", ROOT / "docs" / "screenshots.py")
    screenshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(screenshots)  # defines functions only: no browser, no compile
    sed = shlex.split(next(c.line for c in commands(TUTORIAL.read_text()) if c.line.startswith("sed -i")))
    assert sed[:2] == ["sed", "-i"] and sed[-1] == "src/mnist/kernel.py", sed
    kernel = (ROOT / "examples" / "mnist" / "src" / "mnist" / "kernel.py").read_text()
    done = subprocess.run(["sed", *sed[2:-1]], input=kernel, text=True, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == screenshots.edited(kernel)
    assert done.stdout != kernel


def test_the_images_match_the_screenshot_script():
    """Every image the screenshot script writes is shown by the tutorial, and the other way round."""
    script = (ROOT / "docs" / "screenshots.py").read_text()
    written = set(re.findall(r'"(mnist-[a-z-]+\.png)"', script))
    shown = {Path(name).name for name in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", TUTORIAL.read_text())}
    assert written == shown


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cmds = runnable(commands(TUTORIAL.read_text()))
        start = time.perf_counter()
        for cmd, (code, printed) in zip(cmds, run_all(cmds, Path(tmp)), strict=True):
            print(f"$ {cmd.line}\n{printed}\n[exit {code}]\n")
        print(f"{time.perf_counter() - start:.1f} s wall, {cpu_seconds():.1f} s CPU")
