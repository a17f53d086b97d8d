"""Frictions a newcomer met (issue 26), each fixed: `new` says how to install the package, copies only the
template's tracked files and describes the package truly; `run NAME` that names nothing says what NAME was
looked up as before compiling anything; the top-level help lists every command; `doctor` finds a broken
pyproject.toml and a package that is not installed; a missing `vector_final()` and the errors that name
no rule get specific codes. Then: no package here says how to get one; a misspelt `run` or compile filter
is answered with the close names and the kernels there are; a filter that names a kernel exactly selects
only it."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import furiosa_opt.cli.new as new
from furiosa_opt import *
from furiosa_opt.cli.compile import Reporter, listed, selected_targets
from furiosa_opt.cli.main import RUNNERS
from furiosa_opt.cli.wrapper import WRAPPED
from furiosa_opt.compiler.diagnostics import from_error
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.diagnostics import FuriosaOptError, VerifyError
from furiosa_opt.mapping import MappingError
from furiosa_opt.mapping.algebra import carve
from furiosa_opt.mapping.parse import MappingSyntaxError

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(sys.executable).with_name("furiosa-opt")
TEMPLATE = ROOT / "examples" / "base-template"


def tool(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    environment.pop("FURIOSA_OPT_BACKEND", None)
    done = subprocess.run([str(TOOL), *args], cwd=cwd, env=environment, capture_output=True, text=True)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def example(name: str, tmp_path: Path) -> Path:
    """A copy of examples/NAME to work in, without build leftovers: tests never write into the repository."""
    leftovers = shutil.ignore_patterns("*.egg-info", "__pycache__", "target", ".benchmarks")
    return Path(shutil.copytree(ROOT / "examples" / name, tmp_path / name, ignore=leftovers))


def test_new_copies_only_tracked_files_and_describes_the_package(tmp_path, monkeypatch):
    """A template in a checkout after `compile --dump-schedule schedule.json` and a benchmark run: the
    leftovers stay behind."""
    checkout = tmp_path / "checkout"
    (checkout / "src").mkdir(parents=True)
    for relative in ("pyproject.toml", "src/base_template/__init__.py", "src/base_template/kernel/gemm_kernel.py"):
        (checkout / relative).parent.mkdir(parents=True, exist_ok=True)
        (checkout / relative).write_bytes((TEMPLATE / relative).read_bytes())
    git("init", "-q", cwd=checkout)
    git("add", ".", cwd=checkout)
    (checkout / "schedule.json").write_text("{}")
    (checkout / ".benchmarks" / "Linux").mkdir(parents=True)
    (checkout / ".benchmarks" / "Linux" / "0001.json").write_text("{}")
    monkeypatch.setattr(new, "template", lambda: checkout)
    root = new.create("mypkg", tmp_path / "made")
    made = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert made == ["pyproject.toml", "src/mypkg/__init__.py", "src/mypkg/kernel/gemm_kernel.py"]
    description = re.search(r'^description = "(.*)"$', (root / "pyproject.toml").read_text(), re.MULTILINE)[1]
    assert description == "RNGD kernels of mypkg, written with furiosa-opt"


def test_new_without_git_copies_all_but_build_leftovers(tmp_path, monkeypatch):
    """An installed wheel's copy is no checkout: everything but egg-info, caches and target/ is the template."""
    copy = tmp_path / "copy"
    (copy / "src" / "base_template").mkdir(parents=True)
    (copy / "pyproject.toml").write_bytes((TEMPLATE / "pyproject.toml").read_bytes())
    (copy / "src" / "base_template" / "__init__.py").write_text("")
    (copy / "src" / "base_template" / "__pycache__").mkdir()
    (copy / "src" / "base_template" / "__pycache__" / "x.pyc").write_bytes(b"")
    (copy / "src" / "base_template.egg-info").mkdir()
    (copy / "src" / "base_template.egg-info" / "PKG-INFO").write_text("")
    monkeypatch.setattr(new, "template", lambda: copy)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # not inside any checkout around tmp
    assert new.template_files(copy) == [Path("pyproject.toml"), Path("src/base_template/__init__.py")]


def test_new_says_how_to_install_the_package(tmp_path):
    done = tool("new", "demo_pkg", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Next cd demo_pkg && pip install -e ." in done.stderr
    assert "python -m demo_pkg.gemm" in done.stderr


def test_run_of_an_unknown_program_says_what_it_looked_for_before_compiling(tmp_path):
    root = new.create("runpkg", tmp_path)
    (root / "src" / "runpkg" / "extra").mkdir()
    (root / "src" / "runpkg" / "extra" / "__init__.py").write_text("")
    (root / "src" / "runpkg" / "extra" / "bias_relu.py").write_text("print('hi')\n")
    done = tool("run", "bias_relu", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: furiosa-opt run: `bias_relu` is not a host program: looked up as a bin of")
    assert "(constant_add, dot_product, elementwise_mul, gemm, gemv)" in lines[0]
    assert "as a module of runpkg" in lines[0]
    assert lines[1] == "help: run the module by its full name: `furiosa-opt run runpkg.extra.bias_relu`"
    assert lines[2].endswith('[tool.furiosa-opt.bins]  bias_relu = "runpkg.extra.bias_relu"')
    assert not (tmp_path / "out").exists()  # nothing compiled
    done = tool("run", "runpkg.extra.bias_relu", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 0 and done.stdout == "hi\n", done.stderr  # the full name runs
    done = tool("run", "nowhere", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 2 and 'bins]  nowhere = "runpkg.nowhere"' in done.stderr
    assert "run the module by its full name" not in done.stderr


def test_a_bad_profile_level_stops_the_wrapper_in_one_line(tmp_path):
    root = new.create("profpkg", tmp_path)
    done = tool("test", cwd=root, TUC_PROFILE_LEVEL="loud", FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert (done.returncode, done.stderr) == (
        2,
        "error: TUC_PROFILE_LEVEL='loud' is not one of off, info, debug, trace\n",
    )
    assert not (tmp_path / "out").exists()


def test_top_level_help_and_errors_list_every_command(tmp_path):
    every = [*RUNNERS, *WRAPPED]
    assert {"run", "test", "bench", "build", "check", "doc"} <= set(every)
    bogus = tool("bogus", cwd=tmp_path)
    assert bogus.returncode == 2
    listed = re.search(r"invalid choice: 'bogus' \(choose from (.*)\)", bogus.stderr)[1]
    assert sorted(name.strip("' ") for name in listed.split(",")) == sorted(every)
    shown = tool("--help", cwd=tmp_path).stdout
    assert all(re.search(rf"^    {name} +\S", shown, re.MULTILINE) for name in every), shown


def test_doctor_finds_a_broken_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.furiosa-opt\nkernel-package = true\n')
    done = tool("doctor", cwd=tmp_path)
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if line.split()[:2] == ["problem", "workspace"]]
    assert f"{tmp_path / 'pyproject.toml'}:3: cannot read pyproject.toml" in line
    assert "1 problem(s)" in done.stdout


def test_doctor_finds_a_package_that_is_not_installed(tmp_path):
    root = new.create("notinstalled", tmp_path)
    done = tool("doctor", cwd=root)
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if line.split()[1:2] == ["installed"]]
    assert line.split()[0] == "problem" and f"run `pip install -e {root}`" in line
    example = tool("doctor", cwd=TEMPLATE)  # installed into this venv in editable mode
    assert example.returncode == 0 and re.search(r"ok +installed +base-template \(editable", example.stdout)


def test_no_package_says_how_to_get_one(tmp_path):
    done = tool("compile", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error[no-package]: no kernel package or workspace found from {tmp_path.resolve()} (a pyproject.toml with "
        "[tool.furiosa-opt] kernel-package = true)",
        "  = help: make one with `furiosa-opt new NAME` and `cd NAME`, or cd into a kernel package",
    ]
    new.create("made_here", tmp_path)  # made, but not entered
    done = tool("compile", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[1:] == [
        "  = help: a kernel package is right below: `cd made_here`",
        "  = help: make one with `furiosa-opt new NAME` and `cd NAME`, or cd into a kernel package",
    ]


def test_run_of_a_misspelt_bin_suggests_the_close_ones(tmp_path):
    root = example("base-template", tmp_path)
    done = tool("run", "gemmm", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("error: furiosa-opt run: `gemmm` is not a host program")
    assert lines[1:] == ["help: did you mean `gemm` or `gemv`? `furiosa-opt run gemm`"]  # and no bin to declare
    done = tool("run", "nowhere", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    declare = '[tool.furiosa-opt.bins]  nowhere = "base_template.nowhere"'
    assert done.stderr.splitlines()[1:] == [f"help: declare it as a bin in {root / 'pyproject.toml'}:  {declare}"]
    assert not (tmp_path / "out").exists()


def test_a_filter_that_selects_nothing_names_the_kernels(tmp_path, monkeypatch):
    root = example("base-template", tmp_path)
    kernels = "constant_add_kernel, dot_product_kernel, elementwise_mul_kernel, gemm_kernel, gemv_kernel"
    done = tool("compile", "nosuchkernel", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "     Warning filter `nosuchkernel` matched no kernel",  # sharing `_kernel` is not close
        f"       Error no kernel selected (of 5: {kernels})",
    ]
    done = tool("compile", "gemm_kernl", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.stderr.splitlines()[0] == (
        "     Warning filter `gemm_kernl` matched no kernel; did you mean `gemm_kernel` or `gemv_kernel`?"
    )
    done = tool("tune", "nosuchkernel", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert (
        done.stderr.splitlines()[-1]
        == f"       Error tune needs exactly one kernel, 0 match `nosuchkernel` (kernels: {kernels})"
    )
    monkeypatch.chdir(root)
    _, _, found = selected_targets([], [], Reporter(False))
    assert listed(found, most=3) == "constant_add_kernel, dot_product_kernel, elementwise_mul_kernel, …"


def test_a_filter_that_names_a_kernel_exactly_selects_only_it(tmp_path, monkeypatch, capsys):
    """`attention_forward` is also a prefix of `attention_forward_first`; a part of a name still selects both."""
    root = example("transformer", tmp_path)
    monkeypatch.chdir(root)
    chosen = {
        needle: [t.source.identity for t in selected_targets([], [needle], Reporter(False))[1]]
        for needle in ("attention_forward", "kernel::attention_forward", "transformer.kernel.attention_forward",
                       "attention_forward_first", "attention")
    }  # fmt: skip
    only, first = "transformer.kernel.attention_forward", "transformer.kernel.attention_forward_first"
    assert chosen == {
        "attention_forward": [only],
        "kernel::attention_forward": [only],
        "transformer.kernel.attention_forward": [only],
        "attention_forward_first": [first],
        "attention": [only, first],
    }
    assert capsys.readouterr().err == ""
    done = tool("compile", "attention_forward", cwd=root, FURIOSA_OPT_OUT_DIR=str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("    Finished 1 compiled, 0 up to date, 0 failed")
    assert f"Compiled {only} (" in done.stderr and "attention_forward_first" not in done.stderr


A, B = axes(A=512, B=256)


@device(chip=1)
def forgets_vector_final(ctx: Context, input: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    input_dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A / 2"], m["A % 2"])
    vector = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 100)
    )
    result = vector.commit_trim(m["A % 2"]).commit(m["A % 2"])
    return result.to_hbm(ctx.tdma, m["A"])


def test_a_missing_vector_final_is_named():
    result = compile_kernel(forgets_vector_final)
    assert not result.ok
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "vector-not-final"
    assert diagnostic.message == "a VectorStream must end with `vector_final()` before `commit_trim`"
    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "vector.commit_trim(" in text)
    assert (diagnostic.spans[0].file, diagnostic.spans[0].line) == (__file__, line)


def test_errors_without_a_rule_get_specific_codes():
    with pytest.raises(MappingError) as carved:
        carve(m["A"], m["A, B"])
    assert from_error(carved.value, "lower", "k").code == "mapping-carve"
    seen, todo = set(), [FuriosaOptError]
    while todo:  # every error class furiosa-opt raises on purpose, as loaded by now
        cls = todo.pop()
        seen.add(cls)
        todo += [c for c in cls.__subclasses__() if c not in seen]
    for cls in (c for c in seen if not issubclass(c, (VerifyError, MappingSyntaxError))):  # those have codes
        error = cls.__new__(cls)
        Exception.__init__(error, "something went wrong")
        code = from_error(error, "lower", "k").code
        assert code != "error" and re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", code), (cls, code)
    assert json.loads(from_error(carved.value, "lower", "k").to_json())["rendered"].startswith("error[mapping-carve]")
