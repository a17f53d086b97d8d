"""Profiling spans of NPU launches: what each command of a launched kernel did, and when, on the simulator.

Upstream's runtime decodes on-device profile records when `TUC_PROFILE_LEVEL` is `info` or more and hands
each one to `tracing` as a span. Here the simulated chip's timing (`sim.timing`, event by event from the
binary) plays the device's part: with `FURIOSA_OPT_PROFILE=info|debug` (or `TUC_PROFILE_LEVEL`, read the
same way) every launch logs one `Span` per command — engine, begin and end cycle, bytes, the user's source
line, the cycles the compiler's schedule gave it (its estimate, beside the simulated ones) and, for a Tensor
DMA, the memory pathologies the book names with their fixes — through the `logging` logger
`furiosa_opt.profile`, at INFO; `debug` adds a DEBUG record per span
with the buffers it reads and writes and the commands it waits for. A handler sees the span itself as
`record.span`:

    class Count(logging.Handler):
        def emit(self, record):
            spans.append(record.span)

    logging.getLogger("furiosa_opt.profile").addHandler(Count())

When nothing in the process has configured logging, the spans go to stderr, so that setting the variable
is enough to see them. `FURIOSA_OPT_PROFILE_OUT=trace.json` (with or without a level) writes the launches
so far as one Perfetto trace — each launch a process, each engine a thread — rewritten after every launch.
Sync commands take no cycles on any engine and make no span.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from furiosa_opt import env
from furiosa_opt.compiler.edf import Edf
from furiosa_opt.files import write_atomic
from furiosa_opt.memsys.findings import findings
from furiosa_opt.sim.timing import Timing, simulate, trace_json

LOGGER = logging.getLogger("furiosa_opt.profile")
LEVELS = {"info": logging.INFO, "debug": logging.DEBUG, "trace": logging.DEBUG}


@dataclass(frozen=True)
class Span:
    """One command of one launch: where it ran and over which cycles of the simulated run."""

    kernel: str
    launch: int  # 1 for the process's first profiled launch
    index: int  # the command's index in the EDF
    opcode: str
    engine: str  # the issuing context and what else it holds: `main`, `main+ve`, `tdma`, …
    begin: int  # cycles from the launch's start
    end: int
    bytes: int  # bytes a DMA moves; for a compute command, the sizes the EDF gives the buffers it writes
    source: str  # the kernel line that asked for it (`file:line`), or ""
    scheduled: tuple[int, int] = (0, 0)  # begin and end in the compiler's schedule (its estimate), as the EDF holds it
    findings: tuple[str, ...] = ()  # a Tensor DMA's memory pathologies, each with the book's fix


class _Profiler:
    """The launches profiled in this process, and the trace events written so far."""

    def __init__(self) -> None:
        self.launches = 0
        self.events: list[dict] = []
        self.flows = 0  # flow ids used by earlier launches: ids are global in a trace
        self.out: Path | None = None  # the file the events were written to; another one starts afresh
        self.lock = threading.Lock()
        self.handler: logging.Handler | None = None


_PROFILER = _Profiler()


def spans_of(edf: Edf, timing: Timing, launch: int) -> list[Span]:
    """The spans of one simulated run of `edf`, in command order."""
    sizes = {b.name: b.bytes for b in edf.buffers}
    scheduled = {index: (begin, end) for index, begin, end in edf.schedule}
    found = []
    for command in timing.lir.commands:
        if command.kind == "sync":
            continue
        costed = timing.costed[command.index]
        engine = "+".join(dict.fromkeys((command.context, *costed.resources)))
        moved = costed.moved or sum(sizes.get(name, 0) for name in command.outputs)
        pathologies = (
            tuple(f"{f.rule}: {f.shown}. Fix: {f.fix}" for f in findings(costed.price)) if costed.price else ()
        )
        found.append(Span(edf.identity, launch, command.index, command.opcode, engine, timing.start[command.index],
                          timing.end[command.index], moved, command.loc or "", scheduled.get(command.index, (0, 0)),
                          pathologies))  # fmt: skip
    return found


def record(edf: Edf) -> None:
    """Profile one launch of `edf` that has just run, if the environment asks for it (a no-op otherwise)."""
    level, out = env.profile_level(), env.profile_out()
    if level == "off" and out is None:
        return
    timing = simulate(edf)
    with _PROFILER.lock:
        _PROFILER.launches += 1
        launch = _PROFILER.launches
        if level != "off":
            _log(edf, timing, launch, LEVELS[level])
        if out is not None:
            _write_trace(out, timing, launch)


def _log(edf: Edf, timing: Timing, launch: int, level: int) -> None:
    LOGGER.setLevel(level)
    if not LOGGER.hasHandlers() and _PROFILER.handler is None:  # nobody listens: show the spans on stderr
        _PROFILER.handler = logging.StreamHandler(sys.stderr)
        LOGGER.addHandler(_PROFILER.handler)
    commands = {c.index: c for c in timing.lir.commands}
    for span in spans_of(edf, timing, launch):
        LOGGER.info(
            "%s launch %d: command %d %s on %s, cycles %d..%d (scheduled %d..%d), %d bytes, %s%s",
            span.kernel, span.launch, span.index, span.opcode, span.engine, span.begin, span.end, *span.scheduled,
            span.bytes, span.source or "no source line", "".join(f"; {f}" for f in span.findings),
            extra={"span": span},
        )  # fmt: skip
        if LOGGER.isEnabledFor(logging.DEBUG):
            command = commands[span.index]
            LOGGER.debug(
                "%s launch %d: command %d reads %s, writes %s, waits for %s",
                span.kernel, span.launch, span.index, ", ".join(command.inputs) or "nothing",
                ", ".join(command.outputs) or "nothing", ", ".join(map(str, command.waits)) or "nothing",
                extra={"span": span, "fields": asdict(span)},
            )  # fmt: skip


def _write_trace(out: Path, timing: Timing, launch: int) -> None:
    """Add the launch to the trace as its own process and rewrite the file (the Perfetto exporter of
    `furiosa-opt schedule export`, over the simulated run in the schedule JSON format)."""
    from furiosa_opt.analysis.perfetto import perfetto_trace  # pure functions over schedule JSON
    from furiosa_opt.analysis.schedule import parse_schedule

    if out != _PROFILER.out:
        _PROFILER.out, _PROFILER.events, _PROFILER.flows = out, [], 0
    document = perfetto_trace(parse_schedule(trace_json(timing), f"launch {launch}"))
    flows = 0
    for event in document["traceEvents"]:
        event["pid"] = launch
        if "id" in event:
            flows = max(flows, event["id"])
            event["id"] += _PROFILER.flows
        if event["ph"] == "M" and event["name"] == "process_name":
            event["args"] = {"name": f"launch {launch}: {event['args']['name']}"}
    _PROFILER.events += document["traceEvents"]
    _PROFILER.flows += flows
    text = json.dumps({"traceEvents": _PROFILER.events, "otherData": {"launches": launch}})
    try:
        write_atomic(out, text.encode())
    except OSError as error:
        raise env.EnvError(
            f"FURIOSA_OPT_PROFILE_OUT={out}: cannot write the trace ({error.strerror or error})"
        ) from None
