"""`schedule export --format perfetto`: the trace passes a Chrome trace-event validator (the fields each
event type needs, paired flows bound to slices, monotonic counters), and loads in Perfetto's trace
processor when that can start here."""

import copy
import inspect
import itertools
import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from base_template.kernel.gemm_kernel import gemm_kernel
from furiosa_opt.analysis.perfetto import perfetto_trace
from furiosa_opt.analysis.schedule import load_schedule, parse_schedule
from furiosa_opt.backend.trace import trace
from furiosa_opt.cli.main import main
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule, schedule_json

UPSTREAM = Path(__file__).parent / "upstream_schedule.json"


def gemm_trace() -> dict:
    return perfetto_trace(parse_schedule(schedule_json(schedule(lower(trace(gemm_kernel)[0])))))


def upstream_trace() -> dict:
    return perfetto_trace(load_schedule(UPSTREAM))


def validate(document: dict, lanes: tuple[str, ...]) -> None:
    """Chrome trace-event rules Perfetto relies on; an AssertionError says which event breaks which."""
    events = document["traceEvents"]
    for event in events:
        assert {"ph", "pid", "tid", "ts"} <= event.keys(), event
        assert isinstance(event["ts"], int | float) and event["ts"] >= 0, event
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert set(lanes) <= set(threads.values()), threads
    slices = defaultdict(list)
    for event in (e for e in events if e["ph"] == "X"):
        assert isinstance(event["name"], str) and event["name"], event
        assert isinstance(event["dur"], int | float) and event["dur"] >= 0, event
        assert {"source", "tensors"} <= event["args"].keys(), event
        assert (event["pid"], event["tid"]) in threads, f"slice on an unnamed thread: {event}"
        slices[event["pid"], event["tid"]].append((event["ts"], event["ts"] + event["dur"]))
    for track, spans in slices.items():
        spans.sort()
        for (_, end), (begin, _) in itertools.pairwise(spans):
            assert end <= begin, f"slices overlap on thread {threads[track]}: Perfetto would nest them"
    flows = defaultdict(dict)
    for event in (e for e in events if e["ph"] in "stf"):
        assert "id" in event and event["ph"] not in flows[event["cat"], event["id"]], f"duplicate flow event {event}"
        flows[event["cat"], event["id"]][event["ph"]] = event
        spans = slices[event["pid"], event["tid"]]
        assert any(b <= event["ts"] <= e for b, e in spans), f"flow event outside any slice: {event}"
    for key, pair in flows.items():
        assert pair.keys() == {"s", "f"}, f"flow {key} is not a start/finish pair: {sorted(pair)}"
        assert pair["s"]["ts"] <= pair["f"]["ts"], f"flow {key} finishes before it starts"
    series = defaultdict(list)
    for event in (e for e in events if e["ph"] == "C"):
        assert event["args"] and all(isinstance(v, int | float) and v >= 0 for v in event["args"].values()), event
        series[event["pid"], event["name"]].append(event["ts"])
    for name, times in series.items():
        assert all(a < b for a, b in itertools.pairwise(times)), f"counter {name} goes back in time"


def kinds(document: dict) -> dict[str, int]:
    counts = defaultdict(int)
    for event in document["traceEvents"]:
        counts[event["ph"]] += 1
    return dict(counts)


def test_gemm_export_is_valid():
    document = gemm_trace()
    validate(document, ("Main", "Sub", "TDMA"))
    counts = kinds(document)
    assert counts["X"] == 5 and counts["s"] == counts["f"] == 4  # B→sub, A→main, sub→main, main→store
    store = next(e for e in document["traceEvents"] if e["ph"] == "X" and e["name"] == "O12 DmaStore")
    assert (store["ts"], store["dur"]) == (3592, 68767)
    lines, first = inspect.getsourcelines(gemm_kernel.fn)
    store_line = first + next(n for n, line in enumerate(lines) if "out.to_hbm(" in line)
    assert store["args"]["source"].endswith(f"gemm_kernel.py:{store_line}")
    assert store["args"]["tensors"]["outputs"][0].startswith("T6 Dram @131072, 524288 B, bf16")


def test_upstream_export_is_valid():
    document = upstream_trace()
    validate(document, ("Main", "Sub", "VE", "TDMA", "PDMA", "Core"))
    counts = kinds(document)
    assert counts["X"] == 11 and counts["s"] == 6  # O6 holds Main, VE and TDMA: a slice on each
    sram = [(e["ts"], e["args"]["bytes"]) for e in document["traceEvents"] if e["name"] == "Sram memory"]
    mib = 1 << 20
    assert sram == [  # T2 is a view of T1: counted once
        (0, 0),
        (300, mib // 4),
        (1000, mib + mib // 4),
        (1800, 2 * mib + mib // 4),
        (2300, mib + mib // 4),
        (4300, mib // 4),
        (4500, mib // 2),
        (6000, mib // 4),
        (6100, 0),
    ]


def test_overlapping_instructions_get_an_extra_thread():
    data = json.loads(UPSTREAM.read_text())
    data["instructions"][4]["contexts"] = ["MainContext"]  # O4 (1800..2300) now on Main
    data["instructions"][5]["lifetime"] = {"begin": 2000, "end": 4300}  # overlaps it
    document = perfetto_trace(parse_schedule(data))
    validate(document, ("Main", "Main #2"))


@pytest.mark.parametrize(
    ("breakage", "complaint"),
    [
        (lambda events: events.remove(next(e for e in events if e["ph"] == "f")), "not a start/finish pair"),
        (lambda events: next(e for e in events if e["ph"] == "C" and e["ts"] > 0).update(ts=0), "back in time"),
        (lambda events: next(e for e in events if e["ph"] == "X")["args"].pop("source"), "'source'"),
        (lambda events: next(e for e in events if e["ph"] == "s").update(ts=10**9), "outside any slice"),
    ],
)
def test_the_validator_catches_broken_traces(breakage, complaint):
    document = copy.deepcopy(upstream_trace())
    breakage(document["traceEvents"])
    with pytest.raises(AssertionError, match=complaint):
        validate(document, ())


def test_export_cli(tmp_path, capsys):
    out = tmp_path / "trace" / "upstream.json"
    assert main(["schedule", "export", str(UPSTREAM), "--format", "perfetto", "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 57 events (11 slices, 6 flows, 21 counter samples) to {out}")
    validate(json.loads(out.read_text()), ("Main",))
    assert main(["schedule", "export", str(UPSTREAM), "--format", "perfetto", "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "output": str(out),
        "format": "perfetto",
        "events": 57,
        "slices": 11,
        "flows": 6,
        "counter_samples": 21,
    }


def test_trace_processor_loads_the_export(tmp_path):
    processor_module = pytest.importorskip("perfetto.trace_processor", reason="the `perfetto` package is not installed")
    path = tmp_path / "upstream.json"
    path.write_text(json.dumps(upstream_trace()))
    try:
        processor = processor_module.TraceProcessor(trace=str(path))
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"perfetto's TraceProcessor could not fetch its trace_processor_shell binary: {error}")
    try:
        slices = next(iter(processor.query("select count(*) as n from slice"))).n
        flows = next(iter(processor.query("select count(*) as n from flow"))).n
    finally:
        processor.close()
    assert (slices, flows) == (11, 6)
