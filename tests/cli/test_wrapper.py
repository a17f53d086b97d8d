"""The `furiosa-opt run|test|build|check|python|pytest` wrapper, end to end in subprocesses on a scaffolded
copy of the base template with an empty output directory: the pre-step compiles exactly the kernels the
command reaches, the child runs on the NPU backend and never compiles, and `check` writes nothing."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from example_kernels import KERNELS as EXAMPLES

from furiosa_opt.analysis.schedule import load_schedule
from furiosa_opt.cli.new import create
from furiosa_opt.cli.wrapper import TERM_GRACE, asks_help, split

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


@pytest.mark.parametrize("to_group", [True, False], ids=["the terminal's ctrl-c", "sigint to the wrapper alone"])
def test_ctrl_c_reaches_the_child_and_the_wrapper_exits_130(package, to_group):
    root, _ = package
    script = "import sys, time; print('ready', flush=True); time.sleep(30)"
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(root.parent / "out")}
    wrapper = subprocess.Popen([str(TOOL), "python", "-c", script], cwd=root, env=environment, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    assert wrapper.stdout.readline() == "ready\n"
    if to_group:
        os.killpg(wrapper.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
    else:
        os.kill(wrapper.pid, signal.SIGINT)  # `kill -INT`: the wrapper passes it on
    assert wrapper.wait(timeout=10) == 130
    err = wrapper.stderr.read()
    assert "KeyboardInterrupt" in err  # the child received it
    assert err.splitlines()[-1] == "furiosa-opt: stopped by SIGINT: `python` stopped"


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


# ---- signals: SIGINT and SIGTERM stop the wrapper promptly, with one line, leaving nothing running ----

SLOW = """import os
import time
from pathlib import Path

Path(os.environ["SLOW_MARKERS"], f"{os.getpid()}.{__name__.rpartition('.')[2]}").touch()  # in flight
time.sleep(float(os.environ["SLOW_SECONDS"]))  # a compile that takes a while, then publishes

"""


def alive(pid: int) -> bool:
    """Running (not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in "ZX"
    except OSError:
        return False


def until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def slow_package(root: Path, name: str, count: int) -> None:
    """Only `count` kernels, each of whose compiles spends SLOW_SECONDS importing its module."""
    kernels = root / "src" / name / "kernel"
    body = (kernels / "constant_add_kernel.py").read_text()
    for path in kernels.glob("*_kernel.py"):
        path.unlink()
    for letter in "abcdefgh"[:count]:
        (kernels / f"{letter}_slow.py").write_text(SLOW + body.replace("constant_add_kernel", f"{letter}_slow"))


@pytest.mark.parametrize(
    ("kernels", "number", "to_group"),
    [(3, signal.SIGINT, True), (3, signal.SIGTERM, False), (1, signal.SIGINT, True)],
    ids=["ctrl-c, worker compiles", "sigterm, worker compiles", "ctrl-c, compile in the wrapper"],
)
def test_a_signal_during_the_prestep_stops_it_at_once_and_publishes_nothing(
    package, tmp_path, kernels, number, to_group
):
    root, name = package
    slow_package(root, name, kernels)
    markers, out, seconds = tmp_path / "markers", tmp_path / "out", 3.0
    markers.mkdir()
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(out), "SLOW_MARKERS": str(markers),
                   "SLOW_SECONDS": str(seconds)}  # fmt: skip
    wrapper = subprocess.Popen([str(TOOL), "build"], cwd=root, env=environment, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    in_flight = min(kernels, os.cpu_count() or 1)
    until(lambda: len(list(markers.iterdir())) == in_flight)  # every worker is inside a compile
    compiling = [int(marker.name.split(".")[0]) for marker in markers.iterdir()]
    sent = time.monotonic()
    if to_group:
        os.killpg(wrapper.pid, number)  # what the terminal does on Ctrl-C: the whole foreground group
    else:
        os.kill(wrapper.pid, number)  # what a supervisor does: the wrapper alone
    assert wrapper.wait(timeout=10) == 128 + number
    assert time.monotonic() - sent < 2
    err = wrapper.stderr.read()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.splitlines() == [
        f"furiosa-opt: stopped by {number.name}: compiles cancelled, no partial artifact published"
    ]
    assert not any(alive(pid) for pid in compiling)  # no compile left running behind the wrapper
    time.sleep(seconds + 0.5)  # long enough for an orphaned compile to finish and publish, or a pending one to start
    assert len(list(markers.iterdir())) == in_flight  # the pending compiles never started
    assert not out.exists() or [p.name for p in out.rglob("*") if p.is_file()] == []


SLEEPER = """import os
from pathlib import Path


def test_sleeps():
    Path(os.environ["SLEEPER_PID"]).write_text(str(os.getpid()))
    import time

    time.sleep(60)
"""


def test_sigterm_while_the_command_runs_stops_it_too(package, tmp_path):
    root, _ = package
    (root / "tests" / "test_sleeper.py").write_text(SLEEPER)
    marker = tmp_path / "pid"
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(tmp_path / "out"), "SLEEPER_PID": str(marker),
                   "FURIOSA_OPT_SKIP_PRESTEP": "1"}  # fmt: skip
    wrapper = subprocess.Popen([str(TOOL), "test", "-q", "-p", "no:cacheprovider", "tests/test_sleeper.py"], cwd=root,
                               env=environment, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)  # fmt: skip
    until(lambda: marker.exists() and marker.read_text())
    pytest_pid = int(marker.read_text())
    sent = time.monotonic()
    os.kill(wrapper.pid, signal.SIGTERM)  # the wrapper alone, as a supervisor or `kill` would
    assert wrapper.wait(timeout=10) == 143
    assert time.monotonic() - sent < 2
    assert not alive(pytest_pid)  # passed on: no pytest orphaned under init
    err = wrapper.stderr.read()
    assert err.splitlines()[-1] == "furiosa-opt: stopped by SIGTERM: `test` stopped" and "Traceback" not in err, err


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace_period(package, tmp_path):
    root, _ = package
    script = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(os.getpid(), flush=True)"
    script += "; time.sleep(60)"
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(tmp_path / "out"), "FURIOSA_OPT_SKIP_PRESTEP": "1"}
    wrapper = subprocess.Popen([str(TOOL), "python", "-c", script], cwd=root, env=environment, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    child = int(wrapper.stdout.readline())
    sent = time.monotonic()
    os.kill(wrapper.pid, signal.SIGTERM)
    assert wrapper.wait(timeout=10) == 143
    assert TERM_GRACE <= time.monotonic() - sent < TERM_GRACE + 2
    assert not alive(child)
    assert wrapper.stderr.read().splitlines() == [
        f"furiosa-opt: stopped by SIGTERM: `python` was killed, still running {TERM_GRACE:g} s after SIGTERM"
    ]


TERMINAL = """import os
import sys

os.setsid()  # a session leader that opens a terminal gets it as its controlling terminal
os.dup2(os.open(sys.argv[1], os.O_RDWR), 0)
from furiosa_opt.cli.wrapper import _terminal_sent_it
print(_terminal_sent_it(), flush=True)
pid = os.fork()
if pid == 0:  # a process group of its own: in the background of the terminal
    os.setpgid(0, 0)
    print(_terminal_sent_it(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_sigint_counts_as_the_terminal_s_only_in_its_foreground_group():
    """Ctrl-C reaches the whole foreground group, the command included, so the wrapper does not pass it on
    there; anywhere else (no terminal, or in the background) a SIGINT was meant for the wrapper alone."""
    import pty

    main, terminal = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-c", TERMINAL, os.ttyname(terminal)], capture_output=True, text=True)
    finally:
        os.close(main)
        os.close(terminal)
    assert done.stdout.split() == ["True", "False"], done.stderr
    script = "from furiosa_opt.cli.wrapper import _terminal_sent_it; print(_terminal_sent_it())"
    done = subprocess.run([sys.executable, "-c", script], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert done.stdout.split() == ["False"], done.stderr


def test_a_stopped_prestep_removes_only_what_its_killed_compiles_left(tmp_path):
    """The cleanup after a stop: temporary files of the killed workers (by pid in their name) and an
    artifact written since the pre-step began that its record does not vouch for; nothing older, nobody else's."""
    from types import SimpleNamespace

    from furiosa_opt.cli.wrapper import _discard_partial
    from furiosa_opt.compiler import cache

    target = SimpleNamespace(source=SimpleNamespace(identity="pkg.kernel.k.k"))
    old_target = SimpleNamespace(source=SimpleNamespace(identity="pkg.kernel.old.old"))
    edf, _ = cache.paths(tmp_path, "pkg.kernel.k.k")
    old_edf, _ = cache.paths(tmp_path, "pkg.kernel.old.old")
    edf.parent.mkdir(parents=True)
    old_edf.write_bytes(b"an artifact from before")
    since = time.time_ns()
    edf.write_bytes(b"written by a compile killed before its record")
    ours = edf.parent / f".{edf.name}.4242.0123456789ab.tmp"
    theirs = edf.parent / f".{edf.name}.777.0123456789ab.tmp"
    for path in (ours, theirs):
        path.write_bytes(b"half")
    _discard_partial([target, old_target], tmp_path, since, {4242})
    assert sorted(p.name for p in edf.parent.iterdir()) == [theirs.name, old_edf.name]
