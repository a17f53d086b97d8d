"""The boundaries of docs/design.md ("Architecture"), held from the source of every module of src/furiosa_opt.

Each module's AST gives its imports: `import` and `from … import` anywhere in the file (inside functions, and
under `TYPE_CHECKING`, too), relative imports resolved. An import names the module it reaches: a submodule
taken by `from package import submodule` is that submodule, any other name taken from a package is the
package's `__init__`. The layers are read from the table in docs/design.md, so the doc and the test cannot
disagree. One test also runs `diagnostics` in a fresh interpreter, where nothing else is loaded yet.
"""

from __future__ import annotations

import ast
import graphlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "furiosa_opt"
DESIGN = ROOT / "docs" / "design.md"


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    names: tuple[str, ...]  # the names taken by `from … import`; empty for `import …`
    line: int

    def where(self) -> str:
        return f"{self.importer} (line {self.line})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name; a package by its own name (its `__init__.py`)."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _module_of(name: str) -> str:
    """The module an import of `name` runs: `name` itself, or the package above a name it defines."""
    while name not in modules():
        name = name.rpartition(".")[0]
    return name


def _base(importer: str, node: ast.ImportFrom) -> str:
    """The absolute module of a `from … import`, with a relative one resolved against the importer."""
    if not node.level:
        return node.module or ""
    package = importer if modules()[importer].name == "__init__.py" else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


@cache
def imports() -> tuple[Import, ...]:
    return tuple(i for importer, path in modules().items() for i in imports_of(importer, path.read_text()))


def imports_of(importer: str, source: str) -> list[Import]:
    """The imports of furiosa_opt's modules in one module's source, wherever they are written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(importer, node)
            targets = [
                (f"{base}.{a.name}", ()) if f"{base}.{a.name}" in modules() else (base, (a.name,)) for a in node.names
            ]
        else:
            continue
        for target, names in targets:
            if target == PACKAGE or target.startswith(f"{PACKAGE}."):
                found.append(Import(importer, _module_of(target), names, node.lineno))
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in modules()}
    for i in imports():
        if i.imported != i.importer:
            edges[i.importer].add(i.imported)
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """Modules each importing the next, back to the first, or [] when there is no circle."""
    try:
        graphlib.TopologicalSorter(edges).prepare()  # an import is a predecessor of its importer
    except graphlib.CycleError as error:
        return error.args[1][::-1]
    return []


# ---- the layer table of docs/design.md --------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    text: str  # as the table writes it: `mapping/`, `dtypes`, `backend/trace.py`, `__init__.py`
    layer: str
    rank: int  # 0 for the bottom layer

    @property
    def module(self) -> str:
        parts = self.text.removesuffix("/").removesuffix(".py").split("/")
        return ".".join([PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)])

    @property
    def exact(self) -> bool:
        """A file stands for that one module; a package or a bare name for everything below it too."""
        return self.text.endswith(".py")

    def holds(self, module: str) -> bool:
        return module == self.module or (not self.exact and module.startswith(f"{self.module}."))


@cache
def table() -> tuple[Entry, ...]:
    lines = DESIGN.read_text().splitlines()
    start = lines.index("| layer | packages | what it owns |")
    entries = []
    for rank, line in enumerate(lines[start + 2 :]):
        if not line.startswith("|"):
            break
        layer, packages = (cell.strip() for cell in line.strip("|").split("|")[:2])
        entries += [Entry(text, layer, rank) for text in re.findall(r"`([^`]+)`", packages)]
    return tuple(entries)


def layer_of(module: str) -> Entry | None:
    """The most specific entry holding the module: a file before its package, a subpackage before its own."""
    holding = [e for e in table() if e.holds(module)]
    return max(holding, key=lambda e: (e.exact, len(e.module)), default=None)


# ---- the tests --------------------------------------------------------------------------------------------


def test_the_table_names_each_module_once_and_only_modules_that_exist():
    entries = table()
    assert entries[0].layer == "foundations", "the table starts at its bottom layer"
    assert len({e.layer for e in entries}) == len({e.rank for e in entries}), "a layer named in two rows"
    texts = [e.text for e in entries]
    twice = sorted({text for text in texts if texts.count(text) > 1})
    assert not twice, f"listed twice in docs/design.md: {twice}"
    assert not [e.text for e in entries if e.module not in modules()], "docs/design.md lists modules src/ lacks"
    unplaced = [name for name in modules() if layer_of(name) is None]
    assert not unplaced, f"in no layer of docs/design.md's table: {unplaced}"


def test_a_file_outranks_its_package_and_the_root_holds_only_itself():
    assert layer_of("furiosa_opt.backend.trace").layer == "compiler"
    assert layer_of("furiosa_opt.backend.cpu").layer == "language and backends"
    assert layer_of("furiosa_opt").layer == "foundations"
    assert layer_of("furiosa_opt.not_listed") is None


def test_the_reader_sees_every_import_a_module_runs():
    source = """
from typing import TYPE_CHECKING
from . import contraction, flow as protocol
from ..mapping import m, Mapping
import furiosa_opt.verify.stream
if TYPE_CHECKING:
    from furiosa_opt.lang.vector import VectorStream
def late():
    from furiosa_opt.lang.tensors import _expect_writable
"""
    found = {(i.imported, i.names) for i in imports_of("furiosa_opt.lang.stream", source)}
    assert found == {
        ("furiosa_opt.lang.contraction", ()),
        ("furiosa_opt.lang.flow", ()),
        ("furiosa_opt.mapping", ("m",)),
        ("furiosa_opt.mapping", ("Mapping",)),
        ("furiosa_opt.verify.stream", ()),
        ("furiosa_opt.lang.vector", ("VectorStream",)),
        (_module_of("furiosa_opt.lang.tensors"), ("_expect_writable",)),
    }


def test_every_import_goes_to_the_same_layer_or_below():
    upward = []
    for i in imports():
        mine, theirs = layer_of(i.importer), layer_of(i.imported)
        if mine and theirs and theirs.rank > mine.rank:
            upward.append(f"{i.where()}, in {mine.layer}, imports {i.imported}, in {theirs.layer}")
    assert not upward, "imports from a higher layer of docs/design.md:\n" + "\n".join(upward)


def test_no_import_circle():
    found = cycle(graph())
    assert not found, "an import circle: " + " -> ".join(found)


def test_a_circle_is_named_module_by_module():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) == []


def _package(module: str) -> str:
    """The package of furiosa_opt a module belongs to (`furiosa_opt.compiler` for compiler.lower.loops); a
    module directly in furiosa_opt, and the root itself, is its own."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (SRC / PACKAGE / parts[1]).is_dir() else module


def test_no_private_name_is_imported_from_another_package():
    crossing = [
        f"{i.where()} imports {name} from {i.imported}"
        for i in imports()
        for name in i.names
        if name.startswith("_") and not name.startswith("__") and _package(i.importer) != _package(i.imported)
    ]
    assert not crossing, "private names imported across packages:\n" + "\n".join(crossing)


# Exercises both paths of a `user_facing` entry point, which is where diagnostics used to look up the
# tracer on the active backend.
PROGRAM = """
import json, sys
from furiosa_opt.diagnostics import VerifyError, user_facing

@user_facing
def accepted(x):
    return x + 1

@user_facing
def refused():
    raise VerifyError("some-rule", "refused on purpose")

assert accepted(1) == 2
try:
    refused()
except VerifyError as error:
    assert error.rule == "some-rule"
else:
    raise AssertionError("refused() returned")
print(json.dumps(sorted(m for m in sys.modules if m.startswith("furiosa_opt"))))
"""


def test_diagnostics_loads_nothing_above_foundations():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "furiosa_opt.diagnostics" in loaded
    higher = [name for name in loaded if layer_of(name).layer != "foundations"]
    assert not higher, f"furiosa_opt.diagnostics loaded {higher}"
