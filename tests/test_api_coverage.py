"""`docs/api-coverage.md` stays true: every public method name of upstream's kernel API (furiosa-ai/furiosa-opt
v0.6.0, `furiosa-opt-std/src`: `tensor/memory.rs`, `tensor/view.rs`, `context.rs`, `engine/**`, `scalar.rs`) has
one row, its Python spelling exists with the parameters the row shows, and the tests it cites exist, run the
name (on the CPU backend and the simulator unless the row is host-side) and mention it, so a citation cannot
drift. Upstream's `todo!()` bodies that refuse here must say `upstream-undefined` and cite a test of the refusal.

Nothing here is ported from upstream; the upstream names are listed below as read from its sources.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import furiosa_opt

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "api-coverage.md"

# The "public methods" column of upstream's API, one tuple per upstream file group, as it spells them. Four names
# occur in two groups (`tile`, `pad`, `unpad` in memory.rs and view.rs; `transpose` in view.rs and
# engine/transpose.rs): 117 entries, 113 distinct names, one table row each.
UPSTREAM = (
    # tensor/memory.rs
    "new size zero rand from_vec from_buf from_safetensors into_inner into_vec to_vec to_buf view view_mut to_hbm "
    "to_hbm_view to_dm to_dm_view to_dm_pcopy to_dm_view_pcopy dma_gather_scaled dma_gather_unscaled dma_scatter "
    "dma_scatter_unscaled hbm_chip_shuffle hbm_cluster_shuffle dm_chip_shuffle dm_cluster_shuffle chip_tile "
    "cluster_tile slice_tile tile pad unpad memset",
    # tensor/view.rs
    "read tile pad unpad transpose reshape",
    # context.rs
    "acquire bind begin begin_interleaved parallel_copy_chip_slice parallel_copy_cluster_slice",
    # engine/fetch.rs, engine/fetch_adapter.rs
    "fetch fetch_mask fetch_table_lookup fetch_cast fetch_zero_point_sub",
    # engine/switch.rs, engine/collect.rs
    "switch collect to_trf to_vrf",
    # engine/contraction/*
    "contract_outer contract_packet contract_time contract_lane",
    # engine/cast.rs, engine/transpose.rs
    "cast transpose",
    # engine/vector/tensor/mod.rs, vector_tensor.rs
    "vector_init vector_intra_slice_tag vector_logic vector_logic_with_mode vector_fxp vector_fxp_with_mode "
    "vector_fxp_to_fp vector_narrow_trim vector_narrow_split vector_fp_unary vector_fp_binary "
    "vector_fp_binary_with_mode vector_fp_ternary vector_fp_ternary_with_mode vector_fp_div vector_fp_div_with_mode "
    "vector_intra_slice_reduce vector_widen_pad vector_widen_concat vector_fp_to_fxp vector_clip "
    "vector_clip_with_mode vector_stash vector_reinterpret vector_inter_slice_reduce vector_intra_slice_unzip "
    "vector_filter vector_final",
    # engine/vector/tensor/vector_tensor_pair.rs
    "vector_logic_zip vector_logic_zip_with_mode vector_fxp_zip vector_fxp_zip_with_mode vector_fp_zip "
    "vector_fp_zip_with_mode vector_clip_zip vector_clip_zip_with_mode",
    # engine/vector/operand.rs, branch.rs, stash_slot.rs
    "imm rf Stash TagGuard BitReq Branched",
    # engine/commit_adapter.rs, engine/commit.rs
    "commit_trim commit_cast commit_cast_relu commit_valid_count_pack commit commit_view",
    # scalar.rs
    "from_f32 from_i32 to_f32 to_i32 to_f8e4m3 map zip_map unwrap",
)
ENTRIES = [name for group in UPSTREAM for name in group.split()]
NAMES = list(dict.fromkeys(ENTRIES))
COUNT = 113

# upstream `todo!()` bodies that refuse here (dma_scatter_unscaled, also `todo!()` upstream, is implemented)
REFUSED = {"fetch_mask", "commit_valid_count_pack", "vector_filter", "hbm_cluster_shuffle"}

# names the Python package does not have yet: the row's spelling check is a strict expected failure, so it starts
# failing (and this entry must go) once src/ adds the name
MISSING: dict[str, str] = {}

# classes of the spellings that `furiosa_opt` does not export, by the module that defines them
HOMES = {
    "Stream": "furiosa_opt.lang.stream",
    "Contraction": "furiosa_opt.lang.contraction",
    "VectorStream": "furiosa_opt.lang.vector",
    "TensorView": "furiosa_opt.lang.tensors",
}

DIFFERENTIAL = "tests/test_differential.py::test_cpu_and_simulator_agree_on_every_byte"
NEGATIVE = "tests/test_negative.py::test_fixture_is_refused_where_marked"


# ---- the table -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    upstream: str
    spellings: tuple[str, ...]
    tests: tuple[str, ...]
    note: str
    line: int


def table(header: str) -> list[tuple[int, list[str]]]:
    """The cells of the doc's table whose header row starts with `| <header> |`, with their line numbers."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"\|\s*{re.escape(header)}\s*\|", line))
    found = []
    for number, line in enumerate(lines[start + 2 :], start + 3):
        if not line.startswith("|"):
            break
        found.append((number, [cell.strip() for cell in line.strip().strip("|").split("|")]))
    return found


def ticked(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", cell))


@functools.cache
def rows() -> tuple[Row, ...]:
    out = []
    for line, cells in table("#"):
        assert len(cells) == 6, f"docs/api-coverage.md:{line}: 6 cells expected, got {len(cells)}"
        _, name, upstream, python, tests, note = cells
        (name,) = ticked(name)
        out.append(Row(name, upstream, ticked(python), ticked(tests), note, line))
    return tuple(out)


def row(name: str) -> Row:
    found = [r for r in rows() if r.name == name]
    assert found, f"docs/api-coverage.md has no row for `{name}`"
    return found[0]


# ---- spellings -----------------------------------------------------------------------------------------------

SPELLING = re.compile(r"(?P<owner>\w+)(?:\.(?P<member>\w+))?(?:\((?P<args>[^()]*)\))?")


def resolve(spelling: str) -> tuple[object, list[str] | None]:
    """The object a spelling names (`Class.member(args)`, `dtype.method(args)` or a bare name) and its argument
    list as written (None without parentheses)."""
    match = SPELLING.fullmatch(spelling)
    assert match, f"`{spelling}` is not `Owner.member(args)` or a name"
    owner = match["owner"]
    home = furiosa_opt if owner in furiosa_opt.__all__ else importlib.import_module(HOMES[owner])
    value = getattr(home, owner)
    if match["member"]:
        value = getattr(value, match["member"])
    args = match["args"]
    return value, None if args is None else [a.strip() for a in args.split(",") if a.strip()]


def parameters(value: object) -> list[str]:
    """The parameters of a callable as a spelling writes them: `name`, `name=…` with a default, `*name`."""
    shown = []
    for p in inspect.signature(value).parameters.values():
        if p.name in ("self", "cls"):
            continue
        if p.kind is p.VAR_POSITIONAL:
            shown.append(f"*{p.name}")
        else:
            shown.append(p.name if p.default is p.empty else f"{p.name}=")
    return shown


def written(args: list[str]) -> list[str]:
    return [a.split("=")[0] + "=" if "=" in a else a for a in args]


# ---- cited tests -----------------------------------------------------------------------------------------------


@functools.cache
def module(path: Path) -> dict[str, ast.AST]:
    """A test file's module-level functions and assignments, by the names they define."""
    defined: dict[str, ast.AST] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            defined[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        defined[n.id] = node
    return defined


def words(node: ast.AST) -> set[str]:
    """Identifiers and attribute names under `node`, and in its string constants the names of calls (source kept
    as text) and strings that are a name."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            found |= set(re.findall(r"\.(\w+)\(", n.value))
            if n.value.isidentifier():
                found.add(n.value)
    return found


def closure(path: Path, function: str) -> tuple[set[str], str]:
    """What `function` of `path` mentions, with the module-level functions and assignments it names
    (transitively: a test, the helper it calls, the kernel the helper launches, an alias the kernel reads); and
    the source of all of them."""
    defined = module(path)
    assert isinstance(defined.get(function), ast.FunctionDef), f"{path.relative_to(ROOT)} has no function {function}"
    seen, stack, found, source = set(), [function], set(), []
    while stack:
        node = defined[stack.pop()]
        if id(node) in seen:
            continue
        seen.add(id(node))
        mentioned = words(node)
        found |= mentioned
        source.append(ast.unparse(node))
        stack.extend(n for n in mentioned if n in defined)
    return found, "\n".join(source)


def is_device(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any("device" in ast.unparse(d) for d in node.decorator_list)


def split(node_id: str) -> tuple[Path, str, str | None]:
    path, _, rest = node_id.partition("::")
    function, _, param = rest.partition("[")
    return ROOT / path, function, param[:-1] if param else None


def kernel_file(identity: str) -> tuple[Path, str]:
    """The file and function of a differential identity `tests.<dir>.<module>.<kernel>`."""
    *parts, kernel = identity.split(".")
    assert parts[0] == "tests", f"cite kernels under tests/, not {identity}"
    return ROOT.joinpath(*parts).with_suffix(".py"), kernel


@functools.cache
def expected_failures() -> set[str]:
    """The keys of test_differential.EXPECTED_FAILURES (read from source: importing it runs discovery)."""
    tree = ast.parse((ROOT / "tests" / "test_differential.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "EXPECTED_FAILURES":
            return {k.value for k in node.value.keys}
    raise AssertionError("test_differential.py has no EXPECTED_FAILURES")


@pytest.fixture(scope="module", autouse=True)
def collection():
    """Start collecting the node ids of every file the table cites: one pytest collection in a subprocess,
    running while the spelling checks run. Kernels of the differential harness are checked from source instead
    (it runs every device kernel under tests/ outside tests/negative, and collecting it imports all of them)."""
    files = sorted({t.partition("::")[0] for r in rows() for t in r.tests if not t.startswith(DIFFERENTIAL)})
    command = [sys.executable, "-m", "pytest", "--collect-only", "-o", "addopts=", "-q", "--import-mode=importlib"]
    process = subprocess.Popen(
        [*command, "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    process.kill()
    process.communicate()


@pytest.fixture(scope="module")
def collected(collection) -> set[str]:
    """The node ids the collection found."""
    out, err = collection.communicate(timeout=120)
    assert collection.returncode == 0, out[-3000:] + err[-3000:]
    return {line.strip() for line in out.splitlines() if "::" in line}


def check_citation(r: Row, node_id: str, ids: set[str]) -> bool:
    """`node_id` is collected and mentions `r.name` (a refusal test: checks `upstream-undefined`); whether it
    runs the name on both backends."""
    path, function, param = split(node_id)
    where = f"{r.name}: `{node_id}`"
    if node_id.startswith(DIFFERENTIAL + "["):  # a kernel the differential harness runs on both backends
        assert param is not None and not any(param.endswith(key) for key in expected_failures()), where
        path, function = kernel_file(param)
        assert "negative" not in path.parts, f"{where}: a refused fixture is not run"
        assert is_device(module(path).get(function, ast.Pass())), f"{where}: {function} is not a device kernel"
        assert r.name in closure(path, function)[0], f"{where}: the kernel does not mention it"
        return True
    matching = {i for i in ids if i == node_id or i.startswith(node_id + "[")}
    assert matching, f"{r.name}: pytest collects no `{node_id}`"
    if node_id.startswith(NEGATIVE + "["):  # a refused fixture: the name on a line marked refused
        lines = (path.parent / "negative" / f"{param}.py").read_text().splitlines()
        hits = [line for line in lines if "refused[" in line and re.search(rf"\b{r.name}\b", line)]
        assert hits, f"{where}: no refused line of the fixture calls it"
        if r.name in REFUSED:
            assert any("upstream-undefined" in line for line in hits), f"{where}: not refused as upstream-undefined"
        return False
    mentioned, source = closure(path, function)
    assert r.name in mentioned, f"{where}: the test does not mention it"
    if r.name in REFUSED:
        assert "upstream-undefined" in source, f"{where}: does not check the upstream-undefined refusal"
    return any(re.search(r"\bnpu\b", i.partition("[")[2]) for i in matching) or bool(
        re.search(r"[\"']npu[\"']", source)
    )


# ---- tests -----------------------------------------------------------------------------------------------------


def test_the_table_has_one_row_per_upstream_name():
    assert len(ENTRIES) == 117 and len(NAMES) == COUNT
    names = [r.name for r in rows()]
    assert len(names) == COUNT, f"{len(names)} rows, {COUNT} upstream names"
    assert len(set(names)) == len(names), [n for n in names if names.count(n) > 1]
    assert set(names) == set(NAMES), (set(NAMES) - set(names), set(names) - set(NAMES))


def xfail_missing(name: str):
    marks = [pytest.mark.xfail(strict=True, reason=MISSING[name])] if name in MISSING else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [xfail_missing(n) for n in NAMES])
def test_the_python_spelling_exists(name):
    r = row(name)
    assert r.spellings, f"{name}: no Python spelling"
    for spelling in r.spellings:
        value, args = resolve(spelling)
        if args is not None:
            assert callable(value), f"`{spelling}` is not callable"
            assert written(args) == parameters(value), (
                f"`{spelling}`: the signature is ({', '.join(parameters(value))})"
            )
        assert re.search(rf"\b{name}\b", spelling), f"`{spelling}` does not name {name}"


@pytest.mark.parametrize("name", [xfail_missing(n) for n in NAMES])
def test_the_cited_tests_run_the_name(name, collected):
    r = row(name)
    assert r.tests, f"{name}: no test cited"
    both = [check_citation(r, node_id, collected) for node_id in r.tests]
    if not r.note.startswith("Host-side") and name not in REFUSED:
        assert any(both), f"{name}: no cited test runs it on the simulator (cite one parametrized over cpu and npu)"


def test_refusals_are_upstream_todo_and_say_so():
    for r in rows():
        says = "upstream-undefined" in r.note
        assert says == (r.name in REFUSED), f"{r.name}: the note and the refusal disagree"
        if r.name in REFUSED:
            assert "todo!()" in r.note, r.name
    assert (
        "todo!()" in row("dma_scatter_unscaled").note and "upstream-undefined" not in row("dma_scatter_unscaled").note
    )


def test_the_doc_stays_inside_the_repository():
    text = DOC.read_text()
    assert "../" not in text and "/work/" not in text and "shared/" not in text


def test_op_enums_and_types_exist():
    """The second table: every op enum, mode and scalar type upstream's kernels name, exported by furiosa_opt and
    named by the test file cited beside it."""
    found = table("upstream type")
    assert len(found) == 21
    for line, cells in found:
        python, tests = ticked(cells[1]), ticked(cells[2])
        assert python and tests, f"docs/api-coverage.md:{line}"
        for spelling in python:
            value, args = resolve(spelling)
            assert value is not None and args is None, f"docs/api-coverage.md:{line}: `{spelling}`"
        for path in tests:
            used = words(ast.parse((ROOT / path).read_text()))
            missing = [s for s in python if s not in used]
            assert not missing, f"docs/api-coverage.md:{line}: {path} does not name {missing}"
