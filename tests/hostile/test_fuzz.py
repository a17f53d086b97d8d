"""Fuzzing with hypothesis: damaged EDFs (the reader, and the simulator under a memory limit), vISA text,
schedule JSON and pyproject.toml. Every input either loads or gives a `FuriosaOptError`, never another
exception. `make test` runs a bounded number of examples, the same ones every run; `make fuzz`
(FURIOSA_OPT_FUZZ=1) forty times as many, fresh each run (tests/hypothesis_profiles.py). Each input a
fuzzer ever found failing is an explicit example of its target. Each test prints how many examples it ran
(`pytest -s`)."""

import contextlib
import copy
import functools
import json
import math
import shutil
import string
from pathlib import Path

import pytest
from compiler.test_visa_replay import MEMSET_ON_HBM
from example_kernels import KERNELS
from hostile import seed_kernels
from hostile.mutations import EDGE_TEXT, damaged, edf_body, edf_bytes, texts, values
from hostile.support import GIB, PYTHON, ROOT, run
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt.analysis.critical_path import critical_path, critical_path_json
from furiosa_opt.analysis.diff import diff, diff_json
from furiosa_opt.analysis.gaps import gaps, gaps_json
from furiosa_opt.analysis.perfetto import perfetto_trace
from furiosa_opt.analysis.schedule import ScheduleError, load_schedule
from furiosa_opt.analysis.summary import summarize, summary_json
from furiosa_opt.compiler.driver import VisaFileError, compile_kernel, compile_visa, load_visa
from furiosa_opt.compiler.edf import EdfError, read_edf
from furiosa_opt.compiler.schedule import schedule_json
from furiosa_opt.compiler.workspace import WorkspaceError, locate, select

# `make fuzz` selects hypothesis's marker, which it sets on @given tests only: these run @given functions inside.
pytestmark = pytest.mark.hypothesis
SEEDS = [seed_kernels.memset_zero, seed_kernels.gather_rows, seed_kernels.pcopy_relayout, seed_kernels.kept_loop,
         *KERNELS.values()]  # fmt: skip
COUNTS: dict[str, int] = {}


def fuzz(n: int):
    return settings(max_examples=examples(n), deadline=None, suppress_health_check=list(HealthCheck))


def pinned(test, finds: list):
    """`test` with each input an earlier run found failing as an explicit example, run first every time."""
    for find in finds:
        test = example(find)(test)
    return test


def tally(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


def report(name: str) -> None:
    print(f"\nfuzz {name}: {COUNTS.get(name, 0)} examples")


@functools.cache
def compiled() -> list:
    return [compile_kernel(kernel) for kernel in SEEDS]


@pytest.fixture
def folder(tmp_path) -> Path:
    return tmp_path


# ---- EDF -------------------------------------------------------------------------------------------------


def test_fuzz_edf_reader():
    bodies = [edf_body(result.edf) for result in compiled()]

    @fuzz(400)
    @given(st.one_of(damaged(bodies).map(edf_bytes), st.binary(max_size=256), st.sampled_from([b"", b"FOPTEDF\0"])))
    def one(data):
        tally("edf reader")
        with contextlib.suppress(EdfError):
            read_edf(data)

    one()
    report("edf reader")


def test_fuzz_edf_simulator_under_a_memory_limit():
    """In a child with a 1 GiB address space and a 256 MiB budget (tests/hostile/fuzz_simulator.py)."""
    count = examples(150)
    script = ROOT / "tests" / "hostile" / "fuzz_simulator.py"
    done = run([PYTHON, script, str(count), str(GIB), str(256 << 20)], ROOT, timeout=3600)
    assert done.code == 0, done.text
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["pinned"] == 7 and result["examples"] == count + result["pinned"]
    assert result["ran"] > 0 and result["refused_by_reader"] > result["pinned"]
    COUNTS["edf simulator"] = result["examples"]
    print(f"\nfuzz edf simulator: {json.dumps(result)}")


# ---- vISA ------------------------------------------------------------------------------------------------

VISA_TOKENS = st.one_of(
    st.sampled_from([*EDGE_TEXT, "%1", "%99", "=", " = ", "[", "]", "<", ">", "(", ")", ",", "#", "#{!}", "{1}",
                     "axes", "arg", "return", "kernel", "chip=0", "pe=3", "A=0", "A=-1", "A=99999999999999999999",
                     "//", "  // ", ":", "dtype=f128", "ctx=nope", "op=FxpBinaryOp.__class__"]),
    st.text(max_size=8),
)  # fmt: skip


@st.composite
def damaged_visa(draw):
    lines = draw(st.sampled_from([result.visa_text for result in compiled()])).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "repeat", "swap", "token", "insert", "cut"]))
        if action == "delete":
            del lines[i]
        elif action == "repeat":
            lines.insert(i, lines[i])
        elif action == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "token":
            words = lines[i].split(" ")
            words[draw(st.integers(0, len(words) - 1))] = draw(VISA_TOKENS)
            lines[i] = " ".join(words)
        elif action == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(VISA_TOKENS) + lines[i][at:]
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def visa_finds() -> list[bytes]:
    """What the vISA fuzzer found, each failing on the build before its fix: a Unicode digit (`A=²`, a
    ValueError in the parser, f132304), the kept loop without its `if` (its `end_if` closed the loop: a
    ValueError in stage 2, 2f00491) and with its `end_loop` twice (an AttributeError in stage 2, 59b8333),
    `memset` on an HBM tensor (an AttributeError in the replay) and constant_add with an unknown dtype (a
    DTypeError), both e1d64a1."""
    kept_loop = compiled()[SEEDS.index(seed_kernels.kept_loop)].visa_text
    (if_line,) = [line for line in kept_loop.splitlines(keepends=True) if line.startswith("if ")]
    (end_loop,) = [line for line in kept_loop.splitlines(keepends=True) if line.startswith("end_loop ")]
    constant_add = compiled()[SEEDS.index(KERNELS["constant_add"])].visa_text
    broken = [
        "kernel a.b chip=1 pe=8\naxes A=\u00b2\nreturn %0\n",
        kept_loop.replace(if_line, ""),
        kept_loop.replace(end_loop, end_loop * 2),
        MEMSET_ON_HBM,
        constant_add.replace("hbm<i32", "hbm<f128"),
    ]
    return [text.encode() for text in broken]


def test_fuzz_visa_parser(folder):
    """`load_visa` (the parser behind `compile --visa`), and the compile of what it accepts."""
    path = folder / "k.visa"

    @fuzz(300)
    @given(st.one_of(damaged_visa(), st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
    def one(data):
        tally("visa")
        path.write_bytes(data)
        try:
            load_visa(path)
        except VisaFileError:
            return
        result = compile_visa(path)
        assert result.ok or result.diagnostics

    pinned(one, visa_finds())()
    report("visa")


# ---- schedule JSON ---------------------------------------------------------------------------------------


@functools.cache
def schedules() -> list[dict]:
    ours = [json.loads(json.dumps(schedule_json(result.plan))) for result in compiled()[3:5]]
    upstream = json.loads((ROOT / "tests" / "analysis" / "upstream_schedule.json").read_text())
    return [*ours, upstream]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def test_fuzz_schedule_loader(folder):
    """`load_schedule`, and every analysis of what it accepts (summary, diff, critical path, gaps, the
    Perfetto export as strict JSON)."""
    path = folder / "s.json"

    @fuzz(300)
    @given(st.one_of(damaged(schedules()).map(json.dumps), json_values.map(json.dumps), st.text(max_size=200)))
    def one(text):
        tally("schedule")
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            schedule = load_schedule(path)
        except ScheduleError:
            return
        json.dumps(summary_json(summarize(schedule, 5)), allow_nan=False)
        json.dumps(diff_json(diff(schedule, schedule)), allow_nan=False)
        json.dumps(critical_path_json(schedule, critical_path(schedule)), allow_nan=False)
        json.dumps(gaps_json(schedule, gaps(schedule, None)), allow_nan=False)
        json.dumps(perfetto_trace(schedule), allow_nan=False)

    one()
    report("schedule")


# ---- pyproject.toml --------------------------------------------------------------------------------------

BARE = set(string.ascii_letters + string.digits + "-_")


def toml_value(value) -> str | None:
    """`value` as an inline TOML value (None has none)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -(1 << 63) <= value < (1 << 63) else None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        items = [toml_value(item) for item in value]
        return "[" + ", ".join(i for i in items if i is not None) + "]"
    pairs = [(toml_key(k), toml_value(v)) for k, v in value.items()]
    return "{" + ", ".join(f"{k} = {v}" for k, v in pairs if v is not None) + "}"


def toml_key(key: str) -> str:
    return key if key and set(key) <= BARE else json.dumps(key)


@st.composite
def pyprojects(draw) -> bytes:
    """A pyproject.toml with furiosa-opt's tables filled with random values, or the template's damaged."""
    if draw(st.booleans()):
        text = (ROOT / "examples" / "base-template" / "pyproject.toml").read_bytes()
        at = draw(st.integers(0, len(text)))
        return (
            text[:at]
            + draw(st.sampled_from([b"", b"\xff", b"\x1b", b"[", b"]", b'"', b"=", b"\n[tool]\n"]))
            + (text[at + draw(st.integers(0, 8)) :])
        )
    tables = {
        "project": {"name": draw(st.one_of(texts, values))},
        "tool.furiosa-opt": {"kernel-package": draw(st.one_of(st.booleans(), values)),
                             "bins": draw(st.one_of(st.dictionaries(texts, st.one_of(texts, values)), values))},
        "tool.furiosa-opt-workspace": {"members": draw(st.one_of(st.lists(st.one_of(
            st.sampled_from(["*", "examples/*", "../*", "/etc/*", "", "a/**", "[", "pkg"]), texts)), values))},
    }  # fmt: skip
    lines = []
    for table, keys in tables.items():
        if draw(st.booleans()):
            lines.append(f"[{table}]")
            lines += [f"{toml_key(k)} = {text}" for k, v in keys.items() if (text := toml_value(v)) is not None]
    return "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"


def test_fuzz_pyproject(folder):
    """`locate` (every pyproject.toml from the directory up), `select` and the packages' modules."""
    workspace = folder / "ws"

    @fuzz(200)
    @given(pyprojects())
    @example(b'[tool.furiosa-opt-workspace]\nmembers = ["."]\n')  # an IndexError in pathlib's glob (9f34714)
    def one(data):
        tally("pyproject")
        shutil.rmtree(workspace, ignore_errors=True)
        (workspace / "src" / "pkg").mkdir(parents=True)
        (workspace / "src" / "pkg" / "__init__.py").write_text("")
        (workspace / "pyproject.toml").write_bytes(data)
        with contextlib.suppress(WorkspaceError):
            for package in select(locate(workspace), []):
                package.modules()

    one()
    report("pyproject")


def test_the_damage_is_damage():
    """The strategies really change their seeds (a fuzzer that feeds only valid input proves nothing)."""
    bodies = [edf_body(result.edf) for result in compiled()]
    changed = []

    @settings(max_examples=30, deadline=None)
    @given(damaged(bodies))
    def one(body):
        changed.append(body not in bodies)

    one()
    assert sum(changed) >= 25
    assert copy.deepcopy(bodies) == [edf_body(result.edf) for result in compiled()]  # the seeds stay intact


def test_a_digit_that_int_does_not_read_is_a_syntax_error(tmp_path):
    """Found by the vISA fuzzer: `A=²` passed `str.isdigit` and failed in `int` with a ValueError."""
    path = tmp_path / "k.visa"
    path.write_text("kernel a.b chip=1 pe=8\naxes A=\u00b2\nreturn %0\n")
    with pytest.raises(VisaFileError, match="expected `Name=size`, got `A=\u00b2`"):
        load_visa(path)
