"""`furiosa-opt schedule …` on real schedules of the example package and on a hand-written
upstream-shaped file (string indices, `Noop` views, `util`, sources only in descriptions)."""

import functools
import importlib.util
import itertools
import json
from pathlib import Path

import pytest
from example_kernels import KERNELS
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt.analysis.critical_path import critical_path
from furiosa_opt.analysis.dependencies import Dependencies
from furiosa_opt.analysis.diff import diff
from furiosa_opt.analysis.gaps import busy_cycles, gaps
from furiosa_opt.analysis.schedule import Schedule, ScheduleError, load_schedule, parse_schedule
from furiosa_opt.analysis.summary import summarize
from furiosa_opt.backend.trace import trace
from furiosa_opt.cli.main import main
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule, schedule_json

HERE = Path(__file__).parent
UPSTREAM = HERE / "upstream_schedule.json"
EXAMPLE = HERE.parents[1] / "examples" / "base-template"
GEMM_FILE = "src/base_template/kernel/gemm_kernel.py"


def schedule_data(kernel, root: Path = EXAMPLE) -> dict:
    ir, errors = trace(kernel)
    assert ir is not None and not errors, errors
    return schedule_json(schedule(lower(ir, root)))


@functools.cache
def gemm_data() -> dict:
    return schedule_data(KERNELS["gemm"])


def gemm_variant(tmp_path: Path) -> dict:
    """gemm with one mapping choice changed: A and B go to both clusters (`2`) instead of one padded
    to two (`1 # 2`). Written at the same relative path, so its `file:line` sources match gemm's."""
    text = (EXAMPLE / GEMM_FILE).read_text()
    assert "Cluster = m[choices.cluster]" in text and 'cluster=["1 # 2", ' in text  # the default is `1 # 2`
    path = tmp_path / GEMM_FILE
    path.parent.mkdir(parents=True)
    path.write_text(text.replace("Cluster = m[choices.cluster]", 'Cluster = m["2"]'))
    spec = importlib.util.spec_from_file_location("gemm_variant", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return schedule_data(module.gemm_kernel, tmp_path)


def write(tmp_path: Path, name: str, data: dict) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def line_of(text: str) -> str:
    number = next(n for n, line in enumerate((EXAMPLE / GEMM_FILE).read_text().splitlines(), 1) if text in line)
    return f"{GEMM_FILE}:{number}"


# ---- loading ------------------------------------------------------------------------------------------


def test_upstream_shape_loads():
    loaded = load_schedule(UPSTREAM)
    assert loaded.kernel is None and loaded.makespan == 6100  # no `makespan`: the last end
    sync = loaded.instructions[3]
    assert sync.index == "ExplicitSync3" and sync.tpe == "Noop" and sync.lanes == ()
    assert sync.source == "src/kernel.rs:16"  # parsed from the description
    assert loaded.instructions[6].lanes == ("Main", "VE", "TDMA")  # the 64-access rule holds DMA too
    assert loaded.instructions[0].util == 0.92
    assert loaded.lanes == ("Main", "Sub", "VE", "TDMA", "PDMA", "Core")


def test_our_schedule_loads_with_its_own_makespan_and_sources():
    loaded = parse_schedule(gemm_data())
    assert loaded.kernel == "base_template.kernel.gemm_kernel.gemm_kernel" and loaded.makespan == 72359
    assert {i.source for i in loaded.instructions} >= {line_of("a = a.to_dm"), line_of("return out.to_hbm")}


def upstream_with(edit) -> dict:
    data = json.loads(UPSTREAM.read_text())
    edit(data)
    return data


MALFORMED = [
    (lambda d: d.pop("tensors"), "schedule: missing `tensors`"),
    (lambda d: d["instructions"][2].pop("lifetime"), "instructions[2]: missing `lifetime`"),
    (lambda d: d["instructions"][2]["lifetime"].update(end="9"), "instructions[2].lifetime.end: expected an integer"),
    (lambda d: d["instructions"][2]["lifetime"].update(end=5), "instructions[2].lifetime: ends at 5, before it"),
    (lambda d: d["instructions"][4].update(input_tensors=[42]), "input_tensors[0]: tensor 42 is not in `tensors`"),
    (lambda d: d["instructions"][4].update(index=True), "instructions[4].index: expected an integer or a string"),
    (lambda d: d["instructions"][4].update(contexts=[1]), "instructions[4].contexts[0]: expected a string"),
    (lambda d: d["tensors"][1].update(index=0), "tensors[1].index: tensor 0 appears twice"),
    (lambda d: d["tensors"][1].update(size=-1), "tensors[1].size: expected a non-negative integer"),
    (lambda d: d.update(makespan=10), "makespan 10 is before the last instruction's end (6100)"),
    (lambda d: d["instructions"].append(3), "instructions[10]: expected an object, got 3"),
]


@pytest.mark.parametrize(("edit", "message"), MALFORMED)
def test_malformed_input_is_a_clear_error(edit, message):
    with pytest.raises(ScheduleError, match=None) as caught:
        parse_schedule(upstream_with(edit), "bad.json")
    assert str(caught.value).startswith("bad.json: ") and message in str(caught.value)


@pytest.mark.parametrize("action", ["summary", "critical-path", "gaps", "diff"])
def test_cli_reports_malformed_files_on_one_line(tmp_path, capsys, action):
    bad = write(tmp_path, "bad.json", upstream_with(MALFORMED[1][0]))
    args = [bad, bad] if action == "diff" else [bad]
    assert main(["schedule", action, *args]) == 1
    err = capsys.readouterr().err
    assert err == f"furiosa-opt schedule {action}: error: {bad}: instructions[2]: missing `lifetime`\n"


def test_cli_reports_unreadable_files(tmp_path, capsys):
    (tmp_path / "text.json").write_text("{ not json")
    assert main(["schedule", "summary", str(tmp_path / "text.json")]) == 1
    assert "not JSON: Expecting property name enclosed in double quotes at line 1" in capsys.readouterr().err
    assert main(["schedule", "summary", str(tmp_path / "missing.json")]) == 1
    assert "cannot read the schedule: No such file or directory" in capsys.readouterr().err


# ---- summary ------------------------------------------------------------------------------------------


def test_summary_of_the_upstream_fixture():
    result = summarize(load_schedule(UPSTREAM), top=3)
    lanes = {u.lane: (u.busy, u.idle) for u in result.lanes}
    assert lanes == {
        "Main": (2200, 3900),
        "Sub": (500, 5600),
        "VE": (2200, 3900),
        "TDMA": (3400, 2700),
        "PDMA": (300, 5800),
        "Core": (100, 6000),
    }
    assert result.counts == {"DmaLoad": 3, "Main": 2, "Noop": 2, "Core": 1, "DmaStore": 1, "Sub": 1}
    assert [i.name for i in result.longest] == ["O5", "O7", "O0"]
    assert [(line.source, line.cycles) for line in result.lines[:2]] == [
        ("src/kernel.rs:18", 2000),
        ("src/kernel.rs:22", 1400),
    ]


def test_summary_cli_on_gemm(tmp_path, capsys):
    path = write(tmp_path, "gemm.json", gemm_data())
    assert main(["schedule", "summary", path]) == 0
    out = capsys.readouterr().out
    assert "makespan 72359 cycles, 13 instructions" in out and "99.2%" in out  # TDMA is the bottleneck
    assert f"{line_of('return out.to_hbm')} │  68767" in out
    assert main(["schedule", "summary", path, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["makespan"] == 72359 and document["counts"]["DmaLoad"] == 2
    assert document["lanes"][-1] == {"lane": "TDMA", "busy": 71815, "idle": 544, "busy_share": 0.9925}
    assert document["longest"][0]["name"] == "O12" and document["lines"][0]["cycles"] == 68767


# ---- critical path ------------------------------------------------------------------------------------


def test_critical_path_of_the_upstream_fixture():
    chain = critical_path(load_schedule(UPSTREAM))
    assert [(link.instruction.name, link.bound, link.wait) for link in chain] == [
        ("O0", "start", 0),
        ("O2", "lane", 0),
        ("O4", "data", 0),
        ("O5", "data", 0),
        ("O6", "data", 0),
        ("O7", "gap", 100),  # TDMA idle 4500..4600: nothing in the JSON explains it
        ("O8", "data", 0),
    ]


def test_views_are_looked_through():
    loaded = load_schedule(UPSTREAM)
    main_op = loaded.instructions[5]  # reads T2, a tile view of T1 that O0 loaded, and T5 from O4
    assert [p.name for p in Dependencies(loaded).producers(main_op)] == ["O0", "O4"]


def test_critical_path_cli_on_gemm(tmp_path, capsys):
    path = write(tmp_path, "gemm.json", gemm_data())
    assert main(["schedule", "critical-path", path, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(p["name"], p["bound"], p["after"]) for p in document["path"]] == [
        ("O3", "start", None),  # B's load goes first
        ("O1", "lane", "O3"),  # A's load waits for the TDMA
        ("O9", "data", "O1"),  # the contraction waits for A
        ("O12", "data", "O9"),  # the store waits for the contraction
    ]
    assert main(["schedule", "critical-path", path]) == 0
    assert "lane after O3" in capsys.readouterr().out


# ---- gaps ---------------------------------------------------------------------------------------------


def test_gaps_of_the_upstream_fixture():
    found = gaps(load_schedule(UPSTREAM))
    top = [(g.lane, g.begin, g.end, g.ended_by.name if g.ended_by else None) for g in found[:4]]
    assert top == [
        ("Core", 0, 6000, "O8"),
        ("PDMA", 300, 6100, None),
        ("Sub", 2300, 6100, None),
        ("TDMA", 1800, 4300, "O6"),
    ]
    tdma = gaps(load_schedule(UPSTREAM), "tdma")
    assert [(g.begin, g.end) for g in tdma] == [(1800, 4300), (4500, 4600), (6000, 6100)]


def test_gaps_cli(tmp_path, capsys):
    path = write(tmp_path, "gemm.json", gemm_data())
    assert main(["schedule", "gaps", path, "--lane", "Main", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(g["begin"], g["end"], g["ended_by"] and g["ended_by"]["name"]) for g in document["gaps"]] == [
        (3592, 72359, None),
        (0, 3048, "O9"),
    ]
    assert main(["schedule", "gaps", path, "--lane", "PDMA"]) == 0  # a viewer lane gemm leaves idle
    assert "PDMA │     0 │ 72359 │  72359 │ end" in capsys.readouterr().out
    assert main(["schedule", "gaps", path, "--lane", "Mian"]) == 1
    assert "unknown lane `Mian`; lanes: Main, Sub, VE, TDMA, PDMA, Core" in capsys.readouterr().err


# ---- diff ---------------------------------------------------------------------------------------------


def test_diff_of_a_schedule_with_itself_is_empty():
    loaded = load_schedule(UPSTREAM)
    result = diff(loaded, loaded)
    assert result.makespan.delta == 0 and not (result.lines or result.added or result.removed or result.moved)


def test_diff_of_gemm_with_one_mapping_changed(tmp_path, capsys):
    before, after = parse_schedule(gemm_data()), parse_schedule(gemm_variant(tmp_path))
    result = diff(before, after)
    assert result.makespan.before == 72359 and result.makespan.delta > 0
    assert not result.added and not result.removed  # the same instructions, from the same lines
    loads = {line_of("a = a.to_dm"), line_of("b = b.to_dm")}
    assert loads <= {c.name for c in result.lines if c.delta > 0}  # the loads to both clusters take longer
    assert {m.after.source for m in result.moved} >= loads | {line_of("return out.to_hbm")}
    a, b = write(tmp_path, "a.json", gemm_data()), write(tmp_path, "b.json", gemm_variant(tmp_path / "again"))
    assert main(["schedule", "diff", a, b]) == 0
    out = capsys.readouterr().out
    assert f"makespan 72359 → {after.makespan} cycles (+{result.makespan.delta}" in out
    assert main(["schedule", "diff", a, b, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["makespan"]["delta"] == result.makespan.delta
    assert {m["after"]["source"] for m in document["moved"]} == {m.after.source for m in result.moved}


def test_diff_matches_by_source_line_and_type():
    data = json.loads(UPSTREAM.read_text())
    changed = json.loads(UPSTREAM.read_text())
    changed["instructions"][8]["description"] = "Core --> src/kernel.rs:25"  # O8 now from another line
    changed["instructions"][7]["lifetime"] = {"begin": 4500, "end": 5900}
    result = diff(parse_schedule(data), parse_schedule(changed))
    assert [i.source for i in result.removed] == ["src/kernel.rs:24"]
    assert [i.source for i in result.added] == ["src/kernel.rs:25"]
    assert [(m.before.begin, m.after.begin) for m in result.moved] == [(4600, 4500)]


# ---- every example kernel: invariants -----------------------------------------------------------------


def check_invariants(loaded: Schedule) -> None:
    for lane in (*loaded.lanes, "PDMA"):
        idle = sum(g.cycles for g in gaps(loaded, lane))
        assert busy_cycles(loaded, lane) + idle == loaded.makespan
    chain = critical_path(loaded)
    if chain:
        assert chain[-1].instruction.end == loaded.makespan
        assert chain[0].bound in ("start", "gap") and chain[0].after is None
        for earlier, link in itertools.pairwise(chain):
            assert link.after is earlier.instruction and earlier.instruction.end + link.wait == link.instruction.begin


@pytest.mark.parametrize("kernel", KERNELS.values(), ids=lambda k: k.__name__)
def test_invariants_on_the_example_kernels(kernel):
    loaded = parse_schedule(schedule_data(kernel))
    check_invariants(loaded)
    assert summarize(loaded).makespan == loaded.makespan > 0


CONTEXTS = st.sampled_from([["MainContext"], ["SubContext"], ["DmaEngine"], ["MainContext", "DmaEngine"], ["Noop"]])


@st.composite
def schedules(draw) -> dict:
    """Random schedules: instructions anywhere in time, reading and writing a few tensors."""
    tensors = [
        {"index": n, "name": f"T{n}", "buffer_type": "Sram", "size": 64, "lifetime": {"begin": 0, "end": 9}}
        for n in range(4)
    ]
    instructions = []
    for n in range(draw(st.integers(0, 12))):
        begin = draw(st.integers(0, 50))
        end = begin + draw(st.integers(0, 20))
        ids = st.lists(st.integers(0, 3), max_size=2)
        instructions.append(
            {"index": n, "tpe": "Main", "contexts": draw(CONTEXTS), "lifetime": {"begin": begin, "end": end},
             "input_tensors": draw(ids), "output_tensors": draw(ids)}
        )  # fmt: skip
    return {"instructions": instructions, "tensors": tensors}


@settings(max_examples=examples(60), deadline=None)
@given(schedules())
def test_invariants_on_random_schedules(data):
    check_invariants(parse_schedule(data))


@pytest.mark.parametrize("report", [{}, {"findings": "none"}, {"findings": [1, {"rule": 2}]}, {"bottleneck": []}])
def test_a_hand_edited_memory_report_is_passed_over(tmp_path, capsys, report):
    """The loader takes any object as a DMA's `memory`; the summary lists only well-formed findings."""
    data = json.loads(json.dumps(gemm_data()))  # a copy: gemm_data is shared
    store = next(o for o in data["instructions"] if o.get("memory") and o["memory"]["findings"])
    assert main(["schedule", "summary", write(tmp_path, "whole.json", data), "--json"]) == 0
    assert [d["name"] for d in json.loads(capsys.readouterr().out)["dma_findings"]] == [store["name"]]
    store["memory"] = report
    path = write(tmp_path, "edited.json", data)
    assert main(["schedule", "summary", path]) == 0 and "Traceback" not in capsys.readouterr().err
    assert main(["schedule", "summary", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dma_findings"] == []
