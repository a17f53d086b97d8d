"""NPU launch profiling (`runtime/profile.py`): the spans' fields against what the kernel asks for, the
levels and their variables, and the Perfetto trace of `FURIOSA_OPT_PROFILE_OUT` through the validator
of `schedule export --format perfetto`."""

import inspect
import itertools
import json
import logging
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from analysis.test_perfetto import validate
from backends import backend
from upstream.test_contract_element_types import K8, A, R, i8_contract

from furiosa_opt import Context, HostTensor, i8, m
from furiosa_opt.env import EnvError
from furiosa_opt.runtime.profile import Span

KERNEL_FILE = Path(i8_contract.fn.__code__.co_filename)
FIRST_LINE = i8_contract.fn.__code__.co_firstlineno


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def profiled(monkeypatch):
    """Runs i8_contract `times` times on the NPU backend under the given variables; the records logged."""
    for name in ("FURIOSA_OPT_PROFILE", "TUC_PROFILE_LEVEL", "FURIOSA_OPT_PROFILE_OUT"):
        monkeypatch.delenv(name, raising=False)
    collect = Collect()
    logger = logging.getLogger("furiosa_opt.profile")
    logger.addHandler(collect)

    def run(times: int = 1, **variables: str) -> list[logging.LogRecord]:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        with backend("npu") as launch, Context.acquire() as ctx:
            input = HostTensor.from_numpy(np.ones((A.size, K8.size), np.int8), i8, m["A, K8"]).to_hbm(ctx.pdma)
            trf = HostTensor.from_numpy(np.ones((R.size, K8.size), np.int8), i8, m["R, K8"]).to_hbm(ctx.pdma)
            for _ in range(times):
                launch(i8_contract, ctx, input, trf)
        return collect.records

    yield run
    logger.removeHandler(collect)


def test_spans_name_engines_cycles_bytes_and_source_lines(profiled):
    records = profiled(FURIOSA_OPT_PROFILE="info")
    spans: list[Span] = [r.span for r in records]
    assert records and all(r.levelno == logging.INFO for r in records)
    assert {s.kernel for s in spans} == {i8_contract.identity} and len({s.launch for s in spans}) == 1
    # two loads into DM, the TRF fill on sub, the contraction on main, the store: the kernel's five operations
    assert [(s.opcode, s.engine) for s in sorted(spans, key=lambda s: s.index)] == [
        ("to_dm", "tdma"), ("to_dm", "tdma"), ("to_trf", "sub"), ("commit", "main"), ("to_hbm", "tdma"),
    ]  # fmt: skip
    source = KERNEL_FILE.read_text().splitlines()
    kernel_lines = range(FIRST_LINE, FIRST_LINE + len(inspect.getsource(i8_contract.fn).splitlines()))
    for span in spans:  # each span's line is the kernel line that calls its operation
        file, line = span.source.rsplit(":", 1)
        assert file == str(KERNEL_FILE) and int(line) in kernel_lines
        assert f".{span.opcode}(" in source[int(line) - 1], (span, source[int(line) - 1])
    assert len({s.source for s in spans if s.opcode == "to_dm"}) == 2  # the input's load and the TRF operand's
    moved = {s.opcode: s.bytes for s in spans}
    assert moved["to_dm"] == A.size * K8.size and moved["to_hbm"] == A.size * R.size * 4  # i8 in, i32 out
    assert all(s.end > s.begin >= 0 for s in spans)
    by_engine = defaultdict(list)
    for s in spans:
        by_engine[s.engine].append((s.begin, s.end))
    for busy in by_engine.values():  # one command at a time per engine
        busy.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(busy))
    store = next(s for s in spans if s.opcode == "to_hbm")
    assert store.begin >= max(s.end for s in spans if s.opcode == "commit")  # the store waits for the result


def test_spans_carry_the_schedules_estimate_and_the_dma_findings(profiled):
    from furiosa_opt.compiler.driver import compile_kernel
    from furiosa_opt.compiler.schedule import summary

    spans = {r.span.index: r.span for r in profiled(FURIOSA_OPT_PROFILE="info")}
    plan = compile_kernel(i8_contract).plan  # the compiler's schedule of the same kernel
    for slot in plan.slots:
        if slot.costed.command.index in spans:
            assert spans[slot.costed.command.index].scheduled == (slot.start, slot.end)
    reported = {
        d["command"]: [f"{f['rule']}: {f['shown']}. Fix: {f['fix']}" for f in d["findings"]]
        for d in summary(plan)["dma"]
    }
    assert reported and {i: list(spans[i].findings) for i in reported} == reported
    assert all(not span.findings for i, span in spans.items() if i not in reported)  # only Tensor DMAs have them
    assert max(s.end for s in spans.values()) == plan.makespan  # alone, the simulation keeps the estimate


def test_debug_adds_what_each_command_reads_and_writes(profiled):
    records = profiled(TUC_PROFILE_LEVEL="DEBUG")
    info = [r for r in records if r.levelno == logging.INFO]
    debug = [r for r in records if r.levelno == logging.DEBUG]
    assert len(debug) == len(info) == 5
    assert all("reads" in r.getMessage() and "writes" in r.getMessage() for r in debug)


def test_off_unless_asked_and_bad_levels_refused(profiled, tmp_path, monkeypatch):
    assert profiled() == []
    with pytest.raises(EnvError, match="TUC_PROFILE_LEVEL='loud' is not one of off, info, debug, trace"):
        profiled(TUC_PROFILE_LEVEL="loud")
    monkeypatch.delenv("TUC_PROFILE_LEVEL")
    profiled(FURIOSA_OPT_PROFILE="info", TUC_PROFILE_LEVEL="off")  # ours wins over upstream's


def test_trace_of_two_launches_passes_the_perfetto_validator(profiled, tmp_path):
    out = tmp_path / "trace.json"
    assert profiled(times=2, FURIOSA_OPT_PROFILE_OUT=str(out)) == []  # a trace alone logs nothing
    document = json.loads(out.read_text())
    validate(document, ("Main", "Sub", "TDMA"))
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert len({e["pid"] for e in slices}) == 2  # one process per launch
    per_launch = defaultdict(list)
    for e in slices:
        per_launch[e["pid"]].append((e["name"], e["ts"], e["dur"]))
    first, second = (sorted(v) for v in per_launch.values())
    assert first == second and len(first) == 5  # the same binary: the same five commands at the same cycles
    names = [e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"]
    assert len(names) == 2 and all(i8_contract.identity in n for n in names)


def test_unwritable_trace_is_one_line(profiled, tmp_path):
    with pytest.raises(EnvError, match=r"FURIOSA_OPT_PROFILE_OUT=.*cannot write the trace"):
        (tmp_path / "file").write_text("")
        profiled(FURIOSA_OPT_PROFILE_OUT=str(tmp_path / "file" / "trace.json"))  # its directory is a file
