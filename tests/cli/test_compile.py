"""`furiosa-opt compile`: selection, dumps, vISA round trips, and clear errors for every bad input."""

import json
import textwrap
from pathlib import Path

import msgpack
import pytest

from furiosa_opt.cli.main import main
from furiosa_opt.compiler.visa import parse_kernel, print_kernel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def out_dir(tmp_path, monkeypatch):
    """Artifacts of every test go to a fresh directory, never into the repository."""
    monkeypatch.setenv("FURIOSA_OPT_OUT_DIR", str(tmp_path / "out"))
    return tmp_path / "out"


KERNELS = ["constant_add_kernel", "elementwise_mul_kernel", "dot_product_kernel", "gemv_kernel", "gemm_kernel"]


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return code, out, err


def test_compiles_the_base_template_through_stage_one(monkeypatch, capsys):
    monkeypatch.chdir(ROOT / "examples" / "base-template")
    code, _, err = run(["compile"], capsys)
    assert code == 0
    for name in KERNELS:
        assert f"Compiled base_template.kernel.{name}.{name} (" in err and "LIR commands" in err
    assert "5 compiled, 0 up to date, 0 failed" in err


def test_a_filter_that_matches_nothing_is_named(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code, _, err = run(["compile", "transpose", "-p", "base_template"], capsys)
    assert code == 1
    assert "filter `transpose` matched no kernel" in err


def test_filters_accept_double_colons_and_select_by_substring(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    code, _, err = run(["compile", "gemm_kernel::gemm", "dot_product", "-p", "base-template"], capsys)
    assert code == 0 and "2 compiled" in err


@pytest.mark.parametrize("name", KERNELS)
def test_dumped_visa_parses_back_to_identical_text_and_recompiles(name, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(ROOT / "examples" / "base-template")
    dump, graph = tmp_path / f"{name}.visa", tmp_path / f"{name}.dfg"
    code, _, _ = run(["compile", f"kernel.{name}", "--dump-visa", str(dump), "--dump-dfg", str(graph)], capsys)
    assert code == 0
    text = dump.read_text()
    assert print_kernel(parse_kernel(text)) == text
    assert "/work/" not in text and f"// src/base_template/kernel/{name}.py:" in text  # paths are package-relative
    again = tmp_path / "again.visa"
    code, _, _ = run(["compile", "--visa", str(dump), "--dump-visa", str(again)], capsys)
    assert code == 0 and again.read_text() == text
    dfg = msgpack.unpackb(graph.read_bytes())
    ops = [line for line in text.splitlines() if " = " in line or line.split()[0] in ("commit_view", "to_dm_view")]
    assert len(dfg["nodes"]) == len(ops) == len(parse_kernel(text).ops)
    assert all(e["to"] < len(dfg["nodes"]) for e in dfg["edges"])


def test_dump_flags_need_exactly_one_kernel(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(ROOT / "examples" / "base-template")
    code, _, err = run(["compile", "--dump-visa", str(tmp_path / "x.visa")], capsys)
    assert code == 1 and "dump flags need exactly one kernel, 5 match" in err
    assert "base_template.kernel.gemv_kernel.gemv_kernel" in err
    assert not (tmp_path / "x.visa").exists()


def test_hand_written_visa_is_verified(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(ROOT / "examples" / "base-template")
    dump = tmp_path / "gemm.visa"
    run(["compile", "gemm_kernel", "--dump-visa", str(dump)], capsys)
    broken = tmp_path / "broken.visa"
    broken.write_text(dump.read_text().replace("packet=[K % 16]", "packet=[K % 8, 2]", 1))
    code, out, _ = run(["compile", "--visa", str(broken), "--message-format", "json"], capsys)
    assert code == 1
    first = json.loads(out.splitlines()[0])
    assert first["code"] == "collect-packet-mismatch" and first["stage"] == "visa"
    source = (ROOT / "examples" / "base-template" / first["spans"][0]["file"]).read_text().splitlines()
    collect = next(n for n, line in enumerate(source, 1) if ".collect(" in line)  # B's, the first op so named
    assert first["spans"][0]["file"].endswith("gemm_kernel.py") and first["spans"][0]["line"] == collect
    garbled = tmp_path / "garbled.visa"
    garbled.write_text(dump.read_text().replace("%9 = collect", "%9 collect", 1).replace("%9: ", "", 1))
    code, out, err = run(["compile", "--visa", str(garbled)], capsys)
    assert code == 1 and "error[visa-" in err


def package(tmp_path: Path, name: str, files: dict[str, str], pyproject: str | None = None) -> Path:
    root = tmp_path / name
    (root / "src" / name).mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        pyproject or f'[project]\nname = "{name}"\n\n[tool.furiosa-opt]\nkernel-package = true\n'
    )
    (root / "src" / name / "__init__.py").write_text("")
    for file, text in files.items():
        (root / "src" / name / file).write_text(textwrap.dedent(text))
    return root


GOOD = """
from furiosa_opt import *
A, B = axes(A=256, B=8)

@device
def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["A, B"]]:
    return x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"]).to_hbm(ctx.tdma, m["A, B"])
"""


@pytest.mark.parametrize(
    ("case", "files", "pyproject", "code", "where"),
    [
        ("bad_toml", {"k.py": GOOD}, "[project\nname = 1", "pyproject", ("pyproject.toml", 1)),
        ("syntax", {"k.py": GOOD, "broken.py": "def f(:\n    pass\n"}, None, "syntax-error", ("broken.py", 1)),
        ("imports", {"k.py": "import not_a_module_anywhere\n" + GOOD}, None, "python-error", ("k.py", 1)),
        (
            "annotation",
            {"k.py": GOOD.replace(': HbmTensor[i32, m["1"], m["A, B"]])', ")")},
            None,
            "device-annotation",
            ("k.py", 6),
        ),
        ("axis", {"k.py": GOOD.replace('m["B"]).to_hbm', 'm["Q"]).to_hbm')}, None, "mapping-syntax", ("k.py", 7)),
    ],
)
def test_bad_inputs_give_diagnostics_not_tracebacks(case, files, pyproject, code, where, tmp_path, monkeypatch, capsys):
    root = package(tmp_path, f"pkg_{case}", files, pyproject)
    monkeypatch.chdir(root)
    status, out, _ = run(["compile", "--message-format", "json"], capsys)
    assert status == 1
    records = [json.loads(line) for line in out.splitlines()]
    diagnostics = [r for r in records if "code" in r]
    assert diagnostics and diagnostics[0]["code"] == code, records
    span = diagnostics[0]["spans"][0]
    assert span["file"].endswith(where[0]) and span["line"] == where[1], span
    assert span["column"] >= 1


def test_no_package_found(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    status, _, err = run(["compile"], capsys)
    assert status == 1 and "error[no-package]" in err


def test_unknown_package_lists_the_known_ones(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    status, _, err = run(["compile", "-p", "nope"], capsys)
    assert status == 1
    assert "package `nope` is not in the workspace (packages: base-template, mnist, transformer, vector-kernels)" in err


def test_visa_is_the_same_under_any_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    tool = Path(sys.executable).with_name("furiosa-opt")
    dumps = []
    for seed in ("0", "12345"):
        out = tmp_path / f"gemm-{seed}.visa"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run(
            [str(tool), "compile", "gemm_kernel", "--dump-visa", str(out)],
            cwd=ROOT / "examples" / "base-template",
            env=env,
            check=True,
            capture_output=True,
        )
        dumps.append(out.read_bytes())
    assert dumps[0] == dumps[1]


def test_python_loops_over_constants_unroll(tmp_path, monkeypatch, capsys):
    looped = GOOD + textwrap.dedent("""

    @device
    def rows(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["B, A"]]:
        out = HbmTensor.new(i32, m["1"], m["B, A"])
        for b in range(4):
            x.view().tile(b, m["B"], 1, m["A, 1 # 8"]).to_hbm_view(ctx.tdma, out.view_mut().tile(b, m["B"], 1))
        return out
    """)
    root = package(tmp_path, "pkg_loops", {"k.py": looped})
    monkeypatch.chdir(root)
    dump = tmp_path / "rows.visa"
    status, _, err = run(["compile", "rows", "--dump-visa", str(dump)], capsys)
    assert status == 0, err
    text = dump.read_text()
    assert text.count(" = tile ") == 8 and text.count("to_hbm_view ") == 4
    assert "start=3 index=[B] length=1" in text


def test_a_parallel_build_reports_in_order_and_writes_what_serial_builds_write(tmp_path, monkeypatch, capsys):
    """Five stale kernels compile in worker processes; one kernel at a time compiles in-process."""
    monkeypatch.chdir(ROOT / "examples" / "base-template")
    code, _, err = run(["compile"], capsys)
    assert code == 0
    compiled = [line.split()[1] for line in err.splitlines() if line.split()[:1] == ["Compiled"]]
    assert compiled == sorted(f"base_template.kernel.{k}.{k}" for k in KERNELS)
    parallel = {p.name: p.read_bytes() for p in (tmp_path / "out").rglob("*.edf")}
    monkeypatch.setenv("FURIOSA_OPT_OUT_DIR", str(tmp_path / "serial"))
    for name in KERNELS:
        assert run(["compile", name], capsys)[0] == 0
    assert {p.name: p.read_bytes() for p in (tmp_path / "serial").rglob("*.edf")} == parallel
    assert len(parallel) == 5
