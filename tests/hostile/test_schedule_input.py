"""`furiosa-opt schedule` on hostile schedule JSON: nesting too deep for Python, integers too long to convert
or too large for the arithmetic, a NaN utilisation (the Perfetto export stays strict JSON), and names that
carry terminal escape sequences or rich markup (printed as text, escapes escaped)."""

import functools
import json

import pytest
from example_kernels import KERNELS
from hostile.support import TOOL, run

from furiosa_opt.analysis.schedule import ScheduleError, load_schedule
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.schedule import schedule_json

OSC = "\x1b]0;owned\x07"  # sets the terminal's title
CSI = "\x1b[2J\x1b[31m"  # clears the screen, turns text red


@functools.cache
def gemm_schedule() -> str:
    return json.dumps(schedule_json(compile_kernel(KERNELS["gemm"]).plan))


@pytest.fixture
def schedule() -> dict:
    """A fresh copy of gemm's schedule for each test to damage."""
    return json.loads(gemm_schedule())


def analyse(tmp_path, document, *args: str, raw: str | None = None):
    (tmp_path / "s.json").write_text(raw if raw is not None else json.dumps(document))
    return run([TOOL, "schedule", *args[:1], "s.json", *args[1:]], tmp_path)


def one_line(done, *fragments):
    lines = done.stderr.splitlines()
    assert done.code == 1 and len(lines) == 1 and lines[0].startswith("furiosa-opt schedule "), done.text
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_nesting_100000_deep_is_one_line(tmp_path):
    one_line(analyse(tmp_path, None, "summary", raw="[" * 100_000 + "]" * 100_000), "nests deeper than Python")
    with pytest.raises(ScheduleError):
        load_schedule(tmp_path / "s.json")


def test_a_5000_digit_integer_is_one_line(tmp_path, schedule):
    text = json.dumps(schedule).replace('"makespan": ', '"makespan": ' + "9" * 5000 + ', "was": ', 1)
    one_line(analyse(tmp_path, None, "summary", raw=text), "not a schedule", "4300")


@pytest.mark.parametrize("field", ["makespan", "begin", "size", "index"])
def test_integers_outside_64_bits_are_one_line(tmp_path, schedule, field):
    huge = 10**400
    if field == "makespan":
        schedule["makespan"] = huge
    elif field == "begin":
        schedule["instructions"][0]["lifetime"]["begin"] = huge
    elif field == "size":
        schedule["tensors"][0]["size"] = huge
    else:
        schedule["instructions"][1]["index"] = huge
    (tmp_path / "s.json").write_text(json.dumps(schedule))
    with pytest.raises(ScheduleError, match="outside the 64-bit integers"):
        load_schedule(tmp_path / "s.json")
    if field == "begin":  # and once through the command, where it was an OverflowError
        one_line(analyse(tmp_path, schedule, "summary"), "outside the 64-bit integers", "1329 bits")


def test_a_nan_utilisation_exports_strict_json(tmp_path, schedule):
    schedule["instructions"][1]["util"] = {"total_util": float("nan")}
    schedule["instructions"][2]["util"] = {"total_util": float("inf")}
    (tmp_path / "s.json").write_text(json.dumps(schedule))  # Python writes bare NaN and Infinity
    assert "NaN" in (tmp_path / "s.json").read_text()
    done = run([TOOL, "schedule", "export", "s.json", "--format", "perfetto", "-o", "t.json"], tmp_path)
    assert done.code == 0, done.text

    def strict(name):
        raise ValueError(f"{name} is not JSON")

    trace = json.loads((tmp_path / "t.json").read_text(), parse_constant=strict)
    utils = [e["args"]["util"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert None in utils and all(u is None or isinstance(u, float) for u in utils)


@pytest.mark.parametrize("action", ["summary", "critical-path", "gaps", "diff"])
def test_escape_sequences_and_markup_from_a_schedule_are_printed_as_text(tmp_path, schedule, action):
    schedule["kernel"] = f"[link=https://evil]k[/link]{OSC}"
    for n, instruction in enumerate(schedule["instructions"]):
        instruction["name"] = f"O{n}{CSI}"
        instruction["source"] = f"k.py:{n}{OSC}\r"
        instruction["tpe"] = instruction["tpe"] + "\x1b[5m"
    args = [action]
    if action == "diff":  # B: every instruction one cycle later, so each is listed as moved
        later = json.loads(json.dumps(schedule))
        for instruction in later["instructions"]:
            instruction["lifetime"] = {k: v + 1 for k, v in instruction["lifetime"].items()}
        later["makespan"] += 1
        (tmp_path / "b.json").write_text(json.dumps(later))
        args = [action, "b.json"]
    done = analyse(tmp_path, schedule, *args)
    assert done.code == 0, done.text
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\r" not in done.stdout
    assert "\\x1b" in done.stdout  # shown, escaped
    if action != "diff":
        assert "[link=https://evil]k[/link]" in done.stdout  # the markup is text, not a link
    if action == "summary":
        json_done = analyse(tmp_path, schedule, *args, "--json")
        assert json_done.code == 0 and "\x1b" not in json_done.stdout and json.loads(json_done.stdout)


def test_a_schedule_that_is_not_a_file_is_one_line(tmp_path):
    one_line(run([TOOL, "schedule", "summary", "."], tmp_path), "cannot read the schedule")
    (tmp_path / "b.json").write_bytes(b"\xff\xfe")
    one_line(run([TOOL, "schedule", "summary", "b.json"], tmp_path), "not UTF-8")
