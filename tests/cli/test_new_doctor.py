"""`furiosa-opt new` (the base template, from a checkout and from a built wheel), `furiosa-opt doctor`,
and what happens when the environment asks for something this build cannot do."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import Context, HostTensor, VerifyError, bf16, launch, m
from furiosa_opt.cli.new import NewError, create, names

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(sys.executable).with_name("furiosa-opt")
TEMPLATE = ROOT / "examples" / "base-template"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


@pytest.mark.parametrize(
    ("name", "expected"),
    [("demo_pkg", ("demo-pkg", "demo_pkg")), ("my-kernels", ("my-kernels", "my_kernels")), ("K2", ("k2", "k2"))],
)
def test_names(name, expected):
    assert names(name) == expected


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("2fast", "not a package name"),
        ("a/b", "not a package name"),
        ("json", "shadow"),
        ("class", "shadow"),
        ("furiosa-opt", "shadow"),
    ],
)
def test_bad_names_are_refused(name, complaint):
    with pytest.raises(NewError, match=complaint):
        names(name)


def test_new_package_works_at_once(tmp_path):
    """The scaffold is the template renamed throughout: `pytest` passes, and `furiosa-opt test` compiles
    its kernels under the new identities and passes on the NPU backend."""
    root = create("demo_pkg", tmp_path)
    text = [p.read_text() for p in root.rglob("*") if p.is_file()]
    assert not any("base_template" in t or "base-template" in t for t in text)
    assert not any("base_template" in str(p) for p in root.rglob("*"))
    template_files = {p.relative_to(TEMPLATE / "src" / "base_template") for p in TEMPLATE.rglob("src/**/*.py")}
    assert {p.relative_to(root / "src" / "demo_pkg") for p in root.rglob("src/**/*.py")} == template_files
    assert 'gemm = "demo_pkg.gemm"' in (root / "pyproject.toml").read_text()

    tested = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], root)
    assert tested.returncode == 0 and "7 passed" in tested.stdout, tested.stdout + tested.stderr
    on_npu = run([str(TOOL), "test", "-q", "-p", "no:cacheprovider"], root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert on_npu.returncode == 0 and "7 passed" in on_npu.stdout, on_npu.stdout + on_npu.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "demo_pkg").glob("*.edf")) == [
        f"demo_pkg.kernel.{k}.{k}.edf"
        for k in ("constant_add_kernel", "dot_product_kernel", "elementwise_mul_kernel", "gemm_kernel", "gemv_kernel")
    ]


def test_new_refuses_an_existing_path(tmp_path):
    (tmp_path / "taken").mkdir()
    done = run([str(TOOL), "new", "taken"], tmp_path)
    assert done.returncode == 1 and "already exists" in done.stderr
    assert list((tmp_path / "taken").iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]  # no staging directory left behind


def test_the_wheel_carries_the_template(tmp_path):
    """An installed wheel has no examples/ beside it: the template must travel as package data."""
    built = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(tmp_path)], tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("furiosa_opt-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    packaged = tmp_path / "site" / "furiosa_opt" / "templates" / "base-template"
    assert (packaged / "src" / "base_template" / "kernel" / "gemm_kernel.py").read_bytes() == (
        TEMPLATE / "src" / "base_template" / "kernel" / "gemm_kernel.py"
    ).read_bytes()
    assert not list(packaged.rglob("*.egg-info"))
    code = "from furiosa_opt.cli.new import template; print(template())"
    found = run([sys.executable, "-c", code], tmp_path, PYTHONPATH=str(tmp_path / "site"))
    assert Path(found.stdout.strip()) == packaged


def test_doctor_on_the_example_package(tmp_path):
    example = ROOT / "examples" / "base-template"
    out = str(tmp_path / "out")
    before = run([str(TOOL), "doctor"], example, FURIOSA_OPT_OUT_DIR=out)
    assert before.returncode == 0, before.stdout
    assert "5 found, 0 compiled and up to date, 5 not" in before.stdout
    assert run([str(TOOL), "compile", "gemm"], example, FURIOSA_OPT_OUT_DIR=out).returncode == 0
    after = run([str(TOOL), "doctor"], example, FURIOSA_OPT_OUT_DIR=out)
    assert "5 found, 1 compiled and up to date, 4 not" in after.stdout


@pytest.mark.parametrize(
    ("variable", "value", "complaint"),
    [
        ("FURIOSA_OPT_SCHEDULER", "bogus", "FURIOSA_OPT_SCHEDULER='bogus' is not one of list, inorder"),
        ("FURIOSA_OPT_DEVICE", "rngd", "rngd needs FuriosaAI's SDK"),
    ],
)
def test_doctor_reports_problems(tmp_path, variable, value, complaint):
    done = run([str(TOOL), "doctor"], ROOT / "examples" / "base-template", **{variable: value})
    assert done.returncode == 1
    assert any(line.split()[:1] == ["problem"] and complaint in line for line in done.stdout.splitlines())


def test_a_bad_environment_variable_is_one_line_not_a_traceback():
    done = run([str(TOOL), "compile", "gemm"], ROOT / "examples" / "base-template", FURIOSA_OPT_SCHEDULER="bogus")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: FURIOSA_OPT_SCHEDULER='bogus' is not one of list, inorder"


@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("FURIOSA_OPT_DEVICE", "rngd", "launch-device"),
        ("FURIOSA_OPT_BACKEND", "gpu", "launch-environment"),
    ],
)
def test_launch_refuses_what_this_build_cannot_run(monkeypatch, variable, value, rule):
    """Asked for hardware or an unknown backend, launch says so instead of quietly running on the CPU."""
    from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel

    monkeypatch.setenv(variable, value)
    rng = np.random.default_rng(0)
    with Context.acquire() as ctx:
        a, b = HostTensor.rand(bf16, m[I, K], rng), HostTensor.rand(bf16, m[J, K], rng)
        with pytest.raises(VerifyError) as raised:
            launch(gemm_kernel, ctx, a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma))
    assert raised.value.rule == rule
    assert "gemm_kernel" in str(raised.value) or rule == "launch-environment"
    assert raised.value.location.file == __file__
