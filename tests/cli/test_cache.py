"""The artifact cache, end to end in subprocesses on a renamed copy of the base-template package:
what a second run does, what each kind of change recompiles, and what `cache explain/verify` say."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from furiosa_opt.cli.new import create
from furiosa_opt.compiler.edf import read_edf

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(sys.executable).with_name("furiosa-opt")
KERNELS = ["constant_add_kernel", "dot_product_kernel", "elementwise_mul_kernel", "gemm_kernel", "gemv_kernel"]


@pytest.fixture
def package(tmp_path):
    """The base template scaffolded (`furiosa-opt new`) under a unique import name."""
    name = f"bt_{uuid.uuid4().hex[:8]}"
    return create(name, tmp_path), name


def compile_(root: Path, *args: str, out: Path | None = None, **env: str) -> tuple[int, str]:
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(out or root.parent / "out"), **env}
    done = subprocess.run([str(TOOL), *args], cwd=root, env=environment, capture_output=True, text=True)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done.returncode, done.stderr + done.stdout


def artifacts(out: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(out.rglob("*.edf"))}


def compiled(text: str) -> list[str]:
    return sorted(
        line.split()[1].rsplit(".", 1)[1] for line in text.splitlines() if line.strip().startswith("Compiled")
    )


def test_a_second_run_compiles_nothing_and_touches_nothing(package):
    root, name = package
    out = root.parent / "out"
    code, text = compile_(root, "compile")
    assert code == 0 and compiled(text) == KERNELS
    before = artifacts(out)
    assert len(before) == 5 and all(f.startswith(f"{name}.kernel.") for f in before)
    code, text = compile_(root, "compile")
    assert code == 0 and compiled(text) == [] and "nothing to compile: 5 kernel(s) up to date" in text
    assert artifacts(out) == before
    for path in out.rglob("*.edf"):
        assert read_edf(path.read_bytes()).identity == path.stem
    code, listing = compile_(root, "cache", "ls")
    assert code == 0 and listing.count("[ok]") == 5
    code, text = compile_(root, "cache", "clean", "gemm")
    assert code == 0 and "removed the artifacts of 1 kernel(s)" in text
    assert not list(out.rglob("*gemm_kernel*"))
    assert compiled(compile_(root, "compile")[1]) == ["gemm_kernel"]


def test_each_change_recompiles_exactly_the_affected_kernel(package):
    root, name = package
    kernel_dir = root / "src" / name / "kernel"
    (kernel_dir / "tiles.py").write_text("ADD = 1\n")
    add = kernel_dir / "constant_add_kernel.py"
    text = add.read_text().replace("from furiosa_opt import *", "from furiosa_opt import *\n\nfrom .tiles import ADD")
    add.write_text(text.replace("FxpBinaryOp.AddFxp, 1)", "FxpBinaryOp.AddFxp, ADD)"))
    assert compile_(root, "compile")[0] == 0

    def change(path: Path, old: str, new: str, expect: list[str], cause: str) -> None:
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
        code, explained = compile_(root, "cache", "explain")
        assert cause in explained, explained
        code, text = compile_(root, "compile")
        assert code == 0 and compiled(text) == expect, text

    dot = kernel_dir / "dot_product_kernel.py"
    change(
        dot,
        'Slice = m["1 # 256"]',
        'Slice = m["1 # 128"]',
        ["dot_product_kernel"],
        f"source changed: src/{name}/kernel/dot_product_kernel.py",
    )
    change(
        kernel_dir / "tiles.py",
        "ADD = 1",
        "ADD = 3",
        ["constant_add_kernel"],
        f"source changed: src/{name}/kernel/tiles.py",
    )
    change(
        add,
        'Cluster = m["1 # 2"]',
        'Cluster = m["1"]',
        ["constant_add_kernel"],
        f"source changed: src/{name}/kernel/constant_add_kernel.py",
    )
    code, text = compile_(root, "compile", FURIOSA_OPT_SCHEDULER="inorder")
    assert compiled(text) == KERNELS
    _, explained = compile_(root, "cache", "explain", "gemm")
    assert "environment variable FURIOSA_OPT_SCHEDULER changed: 'inorder' → ''" in explained


def test_a_comment_edit_keeps_the_artifact(package):
    root, name = package
    out = root.parent / "out"
    compile_(root, "compile", "gemv")
    before = artifacts(out)
    path = root / "src" / name / "kernel" / "gemv_kernel.py"
    path.write_text(path.read_text() + "\n# a comment changes the source, not the code\n")
    code, text = compile_(root, "compile", "gemv")
    assert code == 0 and "vISA unchanged, artifact kept" in text
    assert artifacts(out) == before
    assert "nothing to compile" in compile_(root, "compile", "gemv")[1]


def test_a_compiler_version_change_and_a_corrupted_artifact_are_explained(package, tmp_path):
    root, name = package
    out = root.parent / "out"
    compile_(root, "compile")
    bump = tmp_path / "bump"  # a newer compiler: the same code under another version number
    bump.mkdir()
    (bump / "sitecustomize.py").write_text("import furiosa_opt\nfuriosa_opt.__version__ = '9.9.9'\n")
    newer = {"PYTHONPATH": str(bump)}
    _, explained = compile_(root, "cache", "explain", "gemm", **newer)
    assert "compiler version changed: 0.1.0 → 9.9.9" in explained
    assert compiled(compile_(root, "compile", **newer)[1]) == KERNELS
    assert read_edf(next(out.rglob("*gemm_kernel.edf")).read_bytes()).compiler_version == "9.9.9"
    assert compiled(compile_(root, "compile")[1]) == KERNELS  # and back
    edf = next(out.rglob("*dot_product_kernel.edf"))
    corrupted = bytearray(edf.read_bytes())
    corrupted[-1] ^= 0xFF
    edf.write_bytes(bytes(corrupted))
    code, text = compile_(root, "cache", "verify")
    assert code == 1 and "dot_product_kernel: the artifact was modified or corrupted" in text
    assert "corrupted" in compile_(root, "cache", "explain", "dot_product")[1]
    assert compiled(compile_(root, "compile")[1]) == ["dot_product_kernel"]
    assert compile_(root, "cache", "verify")[0] == 0


def test_out_dir_relocates_and_concurrent_builds_leave_one_valid_artifact(package):
    root, name = package
    target = root.parent / "elsewhere"
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": "elsewhere-relative"}
    runs = [subprocess.Popen([str(TOOL), "compile", "gemm"], cwd=root, env=environment, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]  # fmt: skip
    assert all(run.wait() == 0 for run in runs), [run.stderr.read() for run in runs]
    relocated = root / "elsewhere-relative"
    files = sorted(p.name for p in relocated.rglob("*"))
    assert files == [name, f"{name}.kernel.gemm_kernel.gemm_kernel.edf", f"{name}.kernel.gemm_kernel.gemm_kernel.json"]
    edf = next(relocated.rglob("*.edf"))
    assert read_edf(edf.read_bytes()).identity == f"{name}.kernel.gemm_kernel.gemm_kernel"
    assert not (root / "target").exists() and not target.exists()


def test_gemm_with_every_dump(package, tmp_path):
    root, name = package
    dumps = tmp_path / "dumps"
    args = ["compile", "gemm_kernel", "--dump-visa", str(dumps / "g.visa"), "--dump-dfg", str(dumps / "g.dfg"),
            "--dump-ir", str(dumps / "g.lir"), "--dump-graph", str(dumps / "g.json"), "--dump-schedule",
            str(dumps / "schedule.json"), "--dump-summary", str(dumps / "summary")]  # fmt: skip
    code, text = compile_(root, *args)
    assert code == 0, text
    schedule = json.loads((dumps / "schedule.json").read_text())
    summary = json.loads((dumps / "summary" / "summary.json").read_text())
    assert summary["makespan"] == schedule["makespan"] > 0
    assert summary["ratio"] <= 1.10 and (dumps / "summary" / "summary.md").read_text().startswith("# ")
    busy = [i for i in schedule["instructions"] if i["lifetime"]["end"] > i["lifetime"]["begin"]]
    for instruction in busy:
        assert "gemm_kernel.py:" in instruction["description"]
        assert instruction["description"].split("--> ")[1].split(":")[1].isdigit()
    dma = [i for i in busy if "DmaEngine" in i["contexts"]]
    compute = [i for i in busy if {"MainContext", "SubContext"} & set(i["contexts"])]
    assert any(d["lifetime"]["begin"] < c["lifetime"]["end"] and c["lifetime"]["begin"] < d["lifetime"]["end"]
               for d in dma for c in compute)  # fmt: skip
    for tensor in schedule["tensors"]:
        assert {"index", "name", "visa_name", "buffer_type", "address", "size", "dtype", "mapping", "lifetime"} <= set(
            tensor
        )
    edf = next((root.parent / "out").rglob("*gemm_kernel.edf")).read_bytes()
    for seed in ("0", "4242"):
        out = tmp_path / f"again-{seed}"
        code, _ = compile_(root, "compile", "--visa", str(dumps / "g.visa"), out=out, PYTHONHASHSEED=seed)
        assert code == 0
        assert next(out.rglob("*.edf")).read_bytes() == edf
