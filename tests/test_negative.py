"""The refused-program suite: every fixture in tests/negative fails at its pinned stage, with its pinned
code, at its marked line, and with nothing else reported."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from furiosa_opt.compiler.diagnostics import from_error
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.lang.device import DeviceFunction

HERE = Path(__file__).parent / "negative"
FIXTURES = sorted(p for p in HERE.glob("*.py"))
MARKER = re.compile(r"#\s*refused\[(?P<stage>\w+)\]:\s*(?P<code>[\w-]+)")


def expected(path: Path) -> set[tuple[str, str, int]]:
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for match in MARKER.finditer(line):
            found.add((match["stage"], match["code"], number))
    return found


def diagnostics_of(path: Path) -> list:
    name = f"negative_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        return [from_error(error, "import", name)]
    kernels = [v for v in vars(module).values() if isinstance(v, DeviceFunction) and v.__module__ == name]
    assert kernels, f"{path.name} defines no kernel"
    return [d for k in kernels for d in compile_kernel(k).diagnostics]


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_is_refused_where_marked(path):
    found = diagnostics_of(path)
    assert found, f"{path.name} compiled"
    got = {(d.stage, d.code, d.spans[0].line) for d in found if d.spans}
    assert got == expected(path), "\n\n".join(d.rendered() for d in found)
    for diagnostic in found:
        span = diagnostic.spans[0]
        assert Path(span.file) == path
        assert span.column >= 1
        assert diagnostic.message and "Traceback" not in diagnostic.rendered()
        assert "furiosa_opt" not in span.file


def test_every_fixture_has_a_marker():
    for path in FIXTURES:
        assert expected(path), f"{path.name} marks no refused line"


def test_json_diagnostics_are_one_object_per_line():
    for path in FIXTURES:
        for diagnostic in diagnostics_of(path):
            record = json.loads(diagnostic.to_json())
            assert set(record) >= {"level", "code", "message", "stage", "kernel", "spans", "notes", "rendered"}
            span = record["spans"][0]
            assert span["file"] == str(path) and span["line"] >= 1 and span["column"] >= 1
            assert "\n" not in diagnostic.to_json()


def test_messages_name_the_problem():
    messages: dict[str, str] = {}  # code → every message with that code, one per line (fixtures share codes)
    for path in FIXTURES:
        for d in diagnostics_of(path):
            messages[d.code] = f"{messages.get(d.code, '')}\n{d.message}"
    assert "Collect packet mismatch. Expected: `B`, got: `B % 16, B / 16`" in messages["collect-packet-mismatch"]
    assert "Lane::SIZE must be 1, 2, 4, or 8, got 3" in messages["trf-lane-size"]
    assert "exceeds register file capacity (65536 bytes)" in messages["trf-capacity"]
    assert "DMA tail alignment violation" in messages["dma-tail-alignment"]
    assert "FxpAdd is already in use" in messages["vector-alu"]
    assert "cannot read tensor values while it is compiled" in messages["data-dependent"]
    assert "unknown axis `Q`" in messages["mapping-syntax"]
    assert "module-level function" in messages["device-nested"]
