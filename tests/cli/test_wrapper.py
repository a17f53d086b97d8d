"""The `furiosa-opt run|test|build|check|python|pytest` wrapper, end to end in subprocesses on a scaffolded
copy of the base template with an empty output directory: the pre-step compiles exactly the kernels the
command reaches, the child runs on the NPU backend and never compiles, and `check` writes nothing."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from example_kernels import KERNELS as EXAMPLES

from furiosa_opt.analysis.schedule import load_schedule
from furiosa_opt.cli.new import create
from furiosa_opt.cli.wrapper import asks_help, split

TOOL = Path(sys.executable).with_name("furiosa-opt")
KERNELS = sorted(f"{name}_kernel" for name in EXAMPLES)


@pytest.fixture
def package(tmp_path):
    name = f"wr_{uuid.uuid4().hex[:8]}"
    return create(name, tmp_path), name


def wrap(root: Path, *args: str, out: str = "out", **env: str) -> tuple[int, str]:
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(root.parent / out), **env}
    environment.pop("FURIOSA_OPT_BACKEND", None)  # the wrapper must set it itself
    done = subprocess.run([str(TOOL), *args], cwd=root, env=environment, capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def edfs(root: Path, out: str = "out") -> list[str]:
    return sorted(p.stem.rsplit(".", 1)[1] for p in (root.parent / out).rglob("*.edf"))


def test_test_of_one_file_compiles_only_its_kernel_and_runs_it_on_the_simulator(package):
    root, _ = package
    code, text = wrap(root, "test", "-s", "-q", "-p", "no:cacheprovider", "tests/test_gemm.py")
    assert code == 0 and "2 passed" in text, text
    assert text.count("on the TCP simulator") == 1  # the child ran on the NPU backend
    assert edfs(root) == ["gemm_kernel"]
    code, text = wrap(
        root, "test", "-q", "-p", "no:cacheprovider", "tests/test_gemm.py::test_a_different_fold_order_would_be_seen"
    )
    assert code == 0 and "1 passed" in text and "Fresh" in text and "Compiled" not in text, text


def test_run_a_bin_compiles_only_its_kernel_and_honours_the_package_option(package):
    root, name = package
    code, text = wrap(root, "-p", name, "run", "gemm")
    assert code == 0 and "262144/262144 equal the sequential-f32 oracle bit for bit" in text, text
    assert edfs(root) == ["gemm_kernel"]
    code, text = wrap(root, "python", "-m", f"{name}.gemv", out="other")
    assert code == 0 and "256/256 equal" in text and edfs(root, "other") == ["gemv_kernel"], text


def test_an_unknown_package_is_a_clear_error(package):
    root, _ = package
    code, text = wrap(root, "-p", "nope", "test")
    assert code == 1 and "error[unknown-package]: package `nope` is not in the workspace" in text, text
    assert not (root.parent / "out").exists()


def test_a_test_run_without_targets_compiles_everything_and_a_help_query_nothing(package):
    root, _ = package
    code, text = wrap(root, "test", "--help")
    assert code == 0 and "usage:" in text and not (root.parent / "out").exists()
    code, text = wrap(root, "test", "--", "--help", out="dashed")  # `--help` after `--` is not a help query
    assert edfs(root, "dashed") == KERNELS, text
    code, text = wrap(root, "test", "-q", "-p", "no:cacheprovider")
    assert code == 0 and "7 passed" in text and edfs(root) == KERNELS, text


def test_the_child_never_compiles(package):
    root, name = package
    code, text = wrap(root, "test", "-q", "tests/test_gemm.py", FURIOSA_OPT_SKIP_PRESTEP="1")
    assert code != 0
    assert f"error[npu-not-compiled]: `{name}.kernel.gemm_kernel.gemm_kernel` has no up-to-date EDF" in text, text
    assert edfs(root) == []


def test_check_writes_nothing_and_a_broken_kernel_stops_every_command(package):
    root, name = package
    code, text = wrap(root, "check")
    assert code == 0 and "5 kernel(s) checked, 0 failed" in text, text
    assert not (root.parent / "out").exists()
    kernel = root / "src" / name / "kernel" / "constant_add_kernel.py"
    kernel.write_text(kernel.read_text().replace('.collect(m["1"], m["A % 8"])', '.collect(m["1"], m["A % 4"])'))
    code, text = wrap(root, "check")
    assert code == 1 and "error[collect-flit]" in text and "constant_add_kernel.py:18:10" in text, text
    assert not (root.parent / "out").exists()
    code, text = wrap(root, "run", "constant_add")
    assert code == 1 and "error[collect-flit]" in text and "constant_add:" not in text, text
    code, text = wrap(root, "build")
    assert code == 1 and "4 compiled, 0 up to date, 1 failed" in text, text


PAIR_TEST = """import numpy as np

from furiosa_opt import Context, HostTensor, i32, launch, m
from {package}.kernel.pair import A, {kernel}


def test_adds_one():
    x = np.arange(2048, dtype=np.int32) * 7 - 5000
    with Context.acquire() as ctx:
        out = launch({kernel}, ctx, HostTensor.from_numpy(x, i32, m[A]).to_hbm(ctx.pdma)).to_host(ctx.pdma)
    assert np.array_equal(out.to_numpy(), x + 1)
"""


def test_a_test_compiles_only_the_kernel_it_imports_by_name_and_a_broken_neighbour_stops_only_its_users(package):
    root, name = package
    good = (root / "src" / name / "kernel" / "constant_add_kernel.py").read_text()
    good = good.replace("def constant_add_kernel(", "def good(")
    bad = good[good.index("@device") :].replace("def good(", "def bad(")
    bad = bad.replace('.collect(m["1"], m["A % 8"])', '.collect(m["1"], m["A % 4"])')  # a stage-1 static rule
    (root / "src" / name / "kernel" / "pair.py").write_text(f"{good}\n\n{bad}")
    for kernel in ("good", "bad"):
        (root / "tests" / f"test_{kernel}.py").write_text(PAIR_TEST.format(package=name, kernel=kernel))
    code, text = wrap(root, "test", "-s", "-q", "-p", "no:cacheprovider", "tests/test_good.py")
    assert code == 0 and "1 passed" in text and text.count("on the TCP simulator") == 1, text
    assert edfs(root) == ["good"]  # its neighbour `bad` was never compiled
    code, text = wrap(root, "test", "-q", "-p", "no:cacheprovider", "tests/test_bad.py")
    assert code == 1 and "error[collect-flit]" in text and f"{name}/kernel/pair.py:" in text, text
    assert "0 compiled, 0 up to date, 1 failed" in text and "passed" not in text, text  # pytest never ran
    assert edfs(root) == ["good"]


def test_the_command_line_is_split_before_argparse_and_help_stops_at_the_double_dash():
    assert split(["-p", "a", "--package=b", "test", "-p", "x"]) == (["a", "b"], "test", ["-p", "x"])
    assert split(["compile", "-p", "a"]) is None
    assert asks_help(["-k", "x", "-h"]) and not asks_help(["--", "--help"])


def test_ctrl_c_reaches_the_child_and_the_wrapper_exits_130(package):
    root, _ = package
    script = "import sys, time; print('ready', flush=True); time.sleep(30)"
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(root.parent / "out")}
    wrapper = subprocess.Popen([str(TOOL), "python", "-c", script], cwd=root, env=environment, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    assert wrapper.stdout.readline() == "ready\n"
    os.killpg(wrapper.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
    assert wrapper.wait(timeout=10) == 130
    assert "KeyboardInterrupt" in wrapper.stderr.read()  # the child received it


def test_doc_writes_a_catalogue_whose_figures_match_the_schedules(package):
    root, name = package
    code, text = wrap(root, "doc")
    assert code == 0 and "catalogue of 5 kernel(s)" in text, text
    folder = root.parent / "doc"
    index = (folder / "index.md").read_text()
    assert (
        'def gemm_kernel(ctx: Context, a: HbmTensor[bf16, m["1"], m["I, K"]], b: HbmTensor[bf16, m["1"], m["J, K"]])'
        in index
    )
    for kernel in EXAMPLES:
        identity = f"{name}.kernel.{kernel}_kernel.{kernel}_kernel"
        schedule = load_schedule(folder / f"{identity}.schedule.json")
        section = index.split(f"## `{identity}`")[1].split("## ")[0]
        assert f"makespan: {schedule.makespan} cycles static, {schedule.makespan} simulated" in section
        assert f"schedule: [{identity}.schedule.json]" in section
    assert edfs(root) == []  # the catalogue compiles in memory


def test_bench_runs_the_bench_scripts_on_the_simulator(package):
    root, _ = package
    code, text = wrap(root, "bench", "2")
    assert code == 0 and "on the npu backend: best of 2" in text, text
    assert text.count("on the TCP simulator") == 1
    assert edfs(root) == ["gemm_kernel"]  # the bench script imports only gemm


def test_package_options_select_members_of_a_workspace(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text('[tool.furiosa-opt-workspace]\nmembers = ["*"]\n')
    first, second = (create(f"{stem}_{uuid.uuid4().hex[:6]}", workspace).name for stem in ("wa", "wb"))
    code, text = wrap(workspace, "-p", first, "build")
    assert code == 0, text
    built = sorted(p.parent.name for p in (tmp_path / "out").rglob("*.edf"))
    assert built == [first] * 5
    code, text = wrap(workspace, "--package", second, "--package", first, "build")
    assert code == 0 and "5 compiled, 5 up to date" in text, text
