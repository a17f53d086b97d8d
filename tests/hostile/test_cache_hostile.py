"""The artifact cache against stale data and planted files: a kernel whose sizes come from a data file its
module reads is rebuilt when the file changes (and `cache explain` names it), still without importing
anything on the fast path; `cache verify` checks identity, version and checksum against the record and
the file name; `cache clean --orphans` removes the artifacts of kernels that no longer exist."""

import json
import shutil

import pytest
from hostile.support import PYTHON, TOOL, run, scaffold, shared_folder

PROBE = """import numpy as np
from furiosa_opt import Context, HostTensor, i32, launch, m
from {name}.kernel.constant_add_kernel import A, constant_add_kernel
with Context.acquire() as ctx:
    x = HostTensor.rand(i32, m[A], np.random.default_rng(1))
    out = launch(constant_add_kernel, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
print("added", int(out[0]) - int(x.to_numpy()[0]))
"""


KEPT = ("constant_add", "dot_product", "elementwise_mul", "gemm")


@pytest.fixture
def package():
    folder = shared_folder()
    yield (*scaffold(folder), folder)
    shutil.rmtree(folder, ignore_errors=True)


def furiosa(root, *args, **env):
    return run([TOOL, *args], root, FURIOSA_OPT_OUT_DIR=str(root.parent / "out"), **env)


def reads_its_sizes_from_a_file(root, name):
    """The issue's kernel: `K = int(Path(__file__).with_name("cfg.txt").read_text())` is what it adds; the
    module refuses to be imported while BOOM is set (to show that the fast path never imports it)."""
    kernel = root / "src" / name / "kernel" / "constant_add_kernel.py"
    text = kernel.read_text().replace(
        "from furiosa_opt import *\n",
        "import os\nfrom pathlib import Path\n\nfrom furiosa_opt import *\n\n"
        'assert "BOOM" not in os.environ, "imported"\nK = int(Path(__file__).with_name("cfg.txt").read_text())\n',
    )
    kernel.write_text(text.replace("FxpBinaryOp.AddFxp, 1)", "FxpBinaryOp.AddFxp, K)"))
    (kernel.parent / "cfg.txt").write_text("1\n")
    (root / "probe.py").write_text(PROBE.format(name=name))
    return kernel.parent / "cfg.txt"


def test_a_changed_data_file_rebuilds_the_kernel(package):
    root, name, _ = package
    cfg = reads_its_sizes_from_a_file(root, name)
    identity = f"{name}.kernel.constant_add_kernel.constant_add_kernel"
    done = furiosa(root, "run", "probe.py")
    assert done.code == 0 and "added 1" in done.stdout, done.text
    record = json.loads(next((root.parent / "out").rglob(f"{identity}.json")).read_text())
    assert list(record["fast_key"]["data"]) == [f"src/{name}/kernel/cfg.txt"]
    done = furiosa(root, "compile", "constant_add", BOOM="1")  # unchanged: fresh, nothing imported
    assert done.code == 0 and f"Fresh {identity}" in done.stderr, done.text
    cfg.write_text("5\n")
    done = furiosa(root, "cache", "explain", "constant_add", BOOM="1")  # explained without importing
    assert done.stdout.strip() == (
        f"{identity}: data file changed: src/{name}/kernel/cfg.txt (read while the kernel was imported or traced)"
    ), done.text
    done = furiosa(root, "run", "probe.py")
    assert done.code == 0 and "added 5" in done.stdout and f"Compiled {identity}" in done.stderr, done.text
    cpu = run([PYTHON, "probe.py"], root, PYTHONPATH=str(root / "src"))
    assert "added 5" in cpu.stdout, cpu.text  # the NPU run now agrees with the CPU backend
    cfg.unlink()
    assert "data file is gone: " in furiosa(root, "cache", "explain", "constant_add").stdout


def test_kernels_without_data_files_keep_their_fast_key(package):
    """The fast digest of a kernel that reads no file is what it was before data files were recorded."""
    root, name, _ = package
    assert furiosa(root, "compile", "gemv", "gemm").code == 0
    record = json.loads(next((root.parent / "out").rglob("*gemv_kernel.json")).read_text())
    assert record["fast_key"]["data"] == {} and record["identity"] == f"{name}.kernel.gemv_kernel.gemv_kernel"
    # gemm declares a search space, which looks for its tuned-choices file: its absence is in the key
    gemm = json.loads(next((root.parent / "out").rglob("*gemm_kernel.json")).read_text())
    assert gemm["fast_key"]["data"] == {f"src/{name}/kernel/gemm_kernel.tuned.json": "missing"}
    from furiosa_opt.compiler.cache import FastKey, digest

    fields = {k: v for k, v in record["fast_key"].items() if k != "data"}
    assert record["fast_digest"] == digest(json.dumps(fields, sort_keys=True).encode())
    assert FastKey(**record["fast_key"]).digest() == record["fast_digest"]


def artifacts(root, kernel):
    out = root.parent / "out"
    return next(out.rglob(f"*{kernel}.edf")), next(out.rglob(f"*{kernel}.json"))


def verify(root):
    done = furiosa(root, "cache", "verify")
    return done.code, [line for line in done.stderr.splitlines() if not line.startswith("verified")], done


def test_verify_finds_empty_and_swapped_artifacts(package):
    root, name, _ = package
    assert furiosa(root, "compile").code == 0
    assert verify(root)[:2] == (0, [])
    gemm_edf, gemm_record = artifacts(root, "gemm_kernel")
    gemv_edf, gemv_record = artifacts(root, "gemv_kernel")
    shutil.copy(gemm_edf, gemv_edf)  # kernel A's artifacts over B's: both files, checksums consistent
    shutil.copy(gemm_record, gemv_record)
    code, lines, _ = verify(root)
    gemv = f"{name}.kernel.gemv_kernel.gemv_kernel"
    assert code == 1 and f"{gemv}: the artifact holds kernel {name}.kernel.gemm_kernel.gemm_kernel, not {gemv}" in lines
    assert any(line.startswith(f"{gemv}: the record is kernel ") for line in lines)
    gemm_edf.write_bytes(b"")
    gemm_record.write_bytes(b"")
    code, lines, done = verify(root)
    assert code == 1 and "verified 5 artifact(s): 4 problem(s)" in done.stderr, done.text
    gemm = f"{name}.kernel.gemm_kernel.gemm_kernel"
    assert f"{gemm}: the record {gemm}.json is missing or is not a JSON object" in lines
    assert any(line.startswith(f"{gemm}: the artifact is unreadable: ") and "truncated EDF" in line for line in lines)
    done = furiosa(root, "compile")  # the fast path does not trust them either: both are rebuilt
    assert done.code == 0 and done.stderr.count("Compiled") == 2, done.text
    assert verify(root)[:2] == (0, [])


def test_verify_notes_another_compiler_version_and_checks_the_record(package):
    root, name, _ = package
    assert furiosa(root, "compile", "gemm").code == 0
    _, record = artifacts(root, "gemm_kernel")
    data = json.loads(record.read_text())
    data["fast_key"]["version"] = "0.0.1"
    record.write_text(json.dumps(data))
    code, lines, _ = verify(root)
    assert code == 1 and lines == [
        f"{name}.kernel.gemm_kernel.gemm_kernel: the artifact is from furiosa-opt 0.1.0, its record from 0.0.1"
    ]
    record.write_text("[1, 2, 3]")  # JSON, not a record
    assert verify(root)[0] == 1
    assert "never compiled here" in furiosa(root, "cache", "explain", "gemm").stdout


def test_clean_orphans_removes_only_the_artifacts_of_deleted_kernels(package):
    root, name, _ = package
    assert furiosa(root, "compile").code == 0
    out = root.parent / "out" / name
    (root / "src" / name / "kernel" / "gemv_kernel.py").unlink()  # the kernel no longer exists
    (root / "src" / name / "gemv.py").unlink()
    keep = out / "notes.txt"
    keep.write_text("not an artifact")
    stray = out / f".{name}.kernel.gemm_kernel.gemm_kernel.edf.1.abc.tmp"  # another build's temporary
    stray.write_text("")
    done = furiosa(root, "cache", "clean")
    done = furiosa(root, "cache", "verify")
    assert "1 artifact file(s)" not in done.stderr  # plain clean removed every kernel's artifacts
    assert furiosa(root, "compile").code == 0
    for suffix in ("edf", "json"):
        (out / f"{name}.kernel.gemv_kernel.gemv_kernel.{suffix}").write_text("{}")
    assert "note: 2 artifact file(s) of kernels that no longer exist" in furiosa(root, "cache", "verify").stderr
    done = furiosa(root, "cache", "clean", "--orphans")
    assert done.code == 0 and "removed 2 artifact file(s) of 1 kernel(s) that no longer exist" in done.stdout
    kept = [f"{name}.kernel.{k}_kernel.{k}_kernel.{s}" for k in KEPT for s in ("edf", "json")]
    assert sorted(p.name for p in out.iterdir()) == sorted([keep.name, stray.name, *kept])
    assert furiosa(root, "cache", "verify", "--orphans").code == 2
