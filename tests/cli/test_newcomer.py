"""The newcomer's path, as the README gives it: `furiosa-opt new demo && cd demo && pip install
--no-build-isolation -e . && furiosa-opt test`, in a fresh virtual environment that sees this one's
packages (so this environment is never modified), then `python -m demo.gemm` from outside the package,
which only an installed package allows."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


def clean_environment() -> dict[str, str]:
    """This process's environment less what would point a command at this test run's interpreter or settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("FURIOSA_OPT_", "PYTHON", "VIRTUAL_ENV"))}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=clean_environment(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and "Traceback" not in done.stderr, f"{argv}\n{done.stdout}\n{done.stderr}"
    return done


def fresh_venv(root: Path) -> Path:
    """A virtual environment at `root` whose site-packages adds ours after its own (a .pth line runs
    addsitedir, so our editable installs resolve too); what pip installs there stays there. Made without pip
    (ours is found through the .pth), which saves the seconds ensurepip takes. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root).stdout
    ours = sysconfig.get_path("purelib")
    (Path(purelib.strip()) / "_furiosa_opt_dev.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


@pytest.fixture
def venv(tmp_path) -> Path:
    return fresh_venv(tmp_path / "venv")


def test_new_install_test_and_run_from_anywhere(tmp_path, venv):
    python = str(venv)
    furiosa_opt = [python, "-m", "furiosa_opt.cli.main"]  # the venv's own `furiosa-opt`
    created = run([*furiosa_opt, "new", "demo"], tmp_path)
    assert "pip install -e ." in created.stderr
    demo = tmp_path / "demo"
    # --no-index: every requirement is already installed (ours), and a test never reaches the network
    run([python, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "-e", "."], demo)
    shown = run([python, "-m", "pip", "show", "demo"], demo).stdout
    assert "Name: demo" in shown and f"Editable project location: {demo}" in shown
    assert run([python, "-c", "import sys; print(sys.prefix)"], demo).stdout.strip() == str(venv.parent.parent)
    tested = run([*furiosa_opt, "test", "-s", "-q", "-p", "no:cacheprovider"], demo)
    assert tested.stderr.count("    Compiled demo.kernel.") == 5  # the pre-step compiled every kernel
    assert "7 passed" in tested.stdout and "on the TCP simulator" in tested.stderr, tested.stdout  # on the NPU
    elsewhere = run([python, "-m", "demo.gemv"], tmp_path)  # not from the package root: found because installed
    assert "256/256 equal" in elsewhere.stdout, elsewhere.stdout
