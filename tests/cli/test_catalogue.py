"""`furiosa-opt doc` on the base template, against the other commands that report the same numbers: each
kernel's summary file is the `summary.md` of `furiosa-opt compile --dump-summary`, its schedule the one of
`--dump-schedule`, and its "where the time goes" lines sum the chain `furiosa-opt schedule critical-path`
prints, which runs from cycle 0 to the makespan. Everything runs in subprocesses with the artifacts in tmp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

TOOL = Path(sys.executable).with_name("furiosa-opt")
TEMPLATE = Path(__file__).resolve().parents[2] / "examples" / "base-template"
KERNELS = ("constant_add", "dot_product", "elementwise_mul", "gemm", "gemv")


def tool(*args: str | Path, out: Path) -> str:
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(out)}
    done = subprocess.run([str(TOOL), *map(str, args)], cwd=TEMPLATE, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory) -> tuple[Path, str]:
    """The doc folder and its index.md."""
    work = tmp_path_factory.mktemp("catalogue")
    tool("doc", out=work / "out")
    return work / "doc", (work / "doc" / "index.md").read_text()


def section(index: str, identity: str) -> str:
    return index.split(f"## `{identity}`\n")[1].split("\n## ")[0]


def share(cycles: int, makespan: int) -> str:
    return f"{cycles / makespan:.1%}"


@pytest.mark.parametrize("name", KERNELS)
def test_each_kernels_numbers_are_what_compile_and_schedule_report(catalogue, tmp_path, name):
    folder, index = catalogue
    identity = f"base_template.kernel.{name}_kernel.{name}_kernel"
    tool("compile", f"{name}_kernel", "--dump-summary", tmp_path / "summary",
         "--dump-schedule", tmp_path / "schedule.json", out=tmp_path / "out")  # fmt: skip
    assert (folder / f"{identity}.summary.md").read_text() == (tmp_path / "summary" / "summary.md").read_text()
    schedule = json.loads((tmp_path / "schedule.json").read_text())
    assert json.loads((folder / f"{identity}.schedule.json").read_text()) == schedule

    numbers = json.loads((tmp_path / "summary" / "summary.json").read_text())
    makespan = numbers["makespan"]
    text = section(index, identity)
    assert (
        f"* makespan: {makespan} cycles static, {numbers['simulated']['makespan']} simulated "
        f"(lower bound {numbers['lower_bound']})" in text
    )
    assert "* lanes busy: " + ", ".join(f"{k} {v:.1%}" for k, v in numbers["utilisation"].items()) in text

    chain = json.loads(tool("schedule", "critical-path", "--json", tmp_path / "schedule.json", out=tmp_path / "out"))
    lanes, lines = Counter(), Counter()
    for link in chain["path"]:
        lanes["+".join(link["lanes"]) or "(no lane)"] += link["cycles"]
        lines[link["source"]] += link["cycles"]
    waits = sum(link["wait"] for link in chain["path"])
    assert sum(lanes.values()) + waits == makespan  # the chain covers the makespan: work plus waits
    by_lane = ", ".join(f"{k} {v} ({share(v, makespan)})" for k, v in sorted(lanes.items(), key=lambda kv: -kv[1]))
    assert (
        f"* critical path: {len(chain['path'])} instruction(s); cycles by lane: {by_lane}; "
        f"waiting: {waits} ({share(waits, makespan)})" in text
    )
    top = sorted((kv for kv in lines.items() if kv[1]), key=lambda kv: (-kv[1], kv[0]))[:5]
    rows = [f"| `{source}` | {cycles} | {share(cycles, makespan)} |" for source, cycles in top]
    assert "\n".join(rows) in text.split("| critical path: source line |")[1]
    busiest, (line, cycles) = max(lanes.items(), key=lambda kv: kv[1]), top[0]
    row = (
        f"| `{identity}` | {makespan} | {numbers['simulated']['makespan']} | {busiest[0]} "
        f"{share(busiest[1], makespan)} | `{line}` {share(cycles, makespan)} |"
    )
    assert row in index.split("\n## ")[0]


def test_the_catalogue_writes_only_its_folder(catalogue):
    folder, index = catalogue
    written = sorted(p.name for p in folder.iterdir())
    identities = [f"base_template.kernel.{k}_kernel.{k}_kernel" for k in KERNELS]
    assert written == sorted(
        ["index.md", *(f"{i}.{kind}" for i in identities for kind in ("schedule.json", "summary.md"))]
    )
    assert index.startswith("# Kernel catalogue\n\n5 kernel(s).")
