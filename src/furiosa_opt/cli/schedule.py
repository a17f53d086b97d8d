"""`furiosa-opt schedule summary|diff|critical-path|gaps|export`: analyses of schedule JSON.

Each action prints rich tables, or with `--json` one JSON document on stdout. A file that cannot be
read or is malformed exits 1 with a one-line message on stderr (analysis/README.md says what each
action computes). Strings from the file (names, sources, lanes) are printed as text with their control
characters escaped, so a schedule cannot write escape sequences to the terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from furiosa_opt.analysis.critical_path import Link, critical_path, critical_path_json
from furiosa_opt.analysis.diff import ScheduleDiff, diff, diff_json
from furiosa_opt.analysis.gaps import Gap, gaps, gaps_json
from furiosa_opt.analysis.perfetto import perfetto_trace
from furiosa_opt.analysis.schedule import Instruction, Schedule, ScheduleError, load_schedule
from furiosa_opt.analysis.summary import Summary, findings_of, summarize, summary_json
from furiosa_opt.files import printable, write_atomic


def add_schedule_parser(commands: argparse._SubParsersAction) -> None:
    schedule_ = commands.add_parser("schedule", help="analyse schedule JSON (summary, diff, critical path, gaps)")
    actions = schedule_.add_subparsers(dest="action", metavar="<action>", required=True)
    summary_ = actions.add_parser("summary", help="makespan, lane use, instruction types, hot source lines")
    summary_.add_argument("file", type=Path, metavar="FILE")
    summary_.add_argument("--top", type=int, default=10, metavar="N", help="longest instructions to list")
    diff_ = actions.add_parser("diff", help="what changed from schedule A to schedule B")
    diff_.add_argument("before", type=Path, metavar="A")
    diff_.add_argument("after", type=Path, metavar="B")
    path_ = actions.add_parser("critical-path", help="the chain of instructions that sets the makespan")
    path_.add_argument("file", type=Path, metavar="FILE")
    gaps_ = actions.add_parser("gaps", help="idle intervals per lane, largest first")
    gaps_.add_argument("file", type=Path, metavar="FILE")
    gaps_.add_argument("--lane", metavar="L", help="only this lane (Main, Sub, VE, TDMA, PDMA, Core)")
    export_ = actions.add_parser("export", help="write the schedule as a trace for another viewer")
    export_.add_argument("file", type=Path, metavar="FILE")
    export_.add_argument("--format", choices=("perfetto",), required=True)
    export_.add_argument("-o", "--output", type=Path, required=True, metavar="OUT")
    for action in (summary_, diff_, path_, gaps_, export_):
        action.add_argument("--json", action="store_true", help="print one JSON document instead of tables")


def run_schedule(options: argparse.Namespace) -> int:
    try:
        document, human = _ACTIONS[options.action](options)
    except ScheduleError as error:
        print(f"furiosa-opt schedule {options.action}: error: {printable(str(error))}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(document, indent=2))
    else:
        # Piped output is read by people too: wide enough that file:line cells do not wrap.
        console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
        for renderable in human:
            console.print(renderable)
    return 0


Rendered = tuple[dict[str, Any], list[Any]]


def _summary(options: argparse.Namespace) -> Rendered:
    result = summarize(load_schedule(options.file), options.top)
    return summary_json(result), _summary_human(result)


def _diff(options: argparse.Namespace) -> Rendered:
    result = diff(load_schedule(options.before), load_schedule(options.after))
    return diff_json(result), _diff_human(result)


def _critical_path(options: argparse.Namespace) -> Rendered:
    schedule = load_schedule(options.file)
    chain = critical_path(schedule)
    return critical_path_json(schedule, chain), _critical_path_human(schedule, chain)


def _gaps(options: argparse.Namespace) -> Rendered:
    schedule = load_schedule(options.file)
    found = gaps(schedule, options.lane)
    return gaps_json(schedule, found), _gaps_human(schedule, found)


def _export(options: argparse.Namespace) -> Rendered:
    trace = perfetto_trace(load_schedule(options.file))
    try:
        write_atomic(options.output, json.dumps(trace, allow_nan=False).encode())  # strict JSON, or a ValueError
    except OSError as error:
        raise ScheduleError(f"cannot write {options.output}: {error.strerror or error}") from None
    kinds = [e["ph"] for e in trace["traceEvents"]]
    counts = {"slices": kinds.count("X"), "flows": kinds.count("s"), "counter_samples": kinds.count("C")}
    document = {"output": str(options.output), "format": options.format, "events": len(kinds), **counts}
    line = (
        f"wrote {len(kinds)} events ({counts['slices']} slices, {counts['flows']} flows, "
        f"{counts['counter_samples']} counter samples) to {options.output}; open it at ui.perfetto.dev"
    )
    return document, [Text(printable(line))]


_ACTIONS = {"summary": _summary, "diff": _diff, "critical-path": _critical_path, "gaps": _gaps, "export": _export}


# ---- human output -----------------------------------------------------------------------------------


def _table(title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> Table | Text:
    """A table whose numeric columns (by header) are right-aligned; a line saying so when it is empty."""
    rows = list(rows)
    if not rows:
        return Text(f"{title}: none")
    table = Table(title=title, title_justify="left", title_style="bold")
    for column in columns:
        table.add_column(column, justify="right" if column in _NUMERIC else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(printable(str(cell))) for cell in row))  # no markup, no escape sequences from the file
    return table


_NUMERIC = {"#", "begin", "end", "cycles", "busy", "busy %", "idle", "count", "instructions"}
_NUMERIC |= {"before", "after", "delta", "end delta"}  # diff columns


def _name(instruction: Instruction) -> str:
    return f"{instruction.name} {instruction.tpe}"


def _instruction_row(instruction: Instruction) -> list[Any]:
    lanes = ", ".join(instruction.lanes)
    return [_name(instruction), lanes, instruction.begin, instruction.end, instruction.cycles, instruction.source or ""]


def _header(kernel: str | None, text: str) -> Text:
    """The first line: the kernel's name (from the file: shown as text, escape sequences escaped)."""
    return Text.assemble((printable(kernel), "bold"), f": {text}") if kernel else Text(text)


def _summary_human(result: Summary) -> list[Any]:
    lanes = [(u.lane, u.busy, f"{u.share:.1%}", u.idle) for u in result.lanes]
    lines = [(line.source, line.cycles, line.instructions) for line in result.lines]
    return [
        _header(result.kernel, f"makespan {result.makespan} cycles, {result.instructions} instructions"),
        _table("Lanes", ("lane", "busy", "busy %", "idle"), lanes),
        _table("Instructions by type", ("type", "count"), result.counts.items()),
        _table("Longest instructions", ("instruction", "lanes", "begin", "end", "cycles", "source"),
               map(_instruction_row, result.longest)),
        _table("Cycles per source line", ("source", "cycles", "instructions"), lines),
        _table("DMA memory pathologies (the book's rule, what the streams show, the fix)",
               ("instruction", "source", "cycles", "bottleneck", "rule", "shown", "fix"),
               [(i.name, i.source or "", i.cycles, str(i.memory.get("bottleneck", "")), f["rule"], f["shown"], f["fix"])
                for i in result.dma for f in findings_of(i.memory)]),
    ]  # fmt: skip


def _signed(value: int) -> str:
    return f"{value:+d}"


def _diff_human(result: ScheduleDiff) -> list[Any]:
    makespan = result.makespan
    share = f", {makespan.delta / makespan.before:+.1%}" if makespan.before else ""
    moved = [
        (_name(m.after), m.after.source or "", f"{m.before.begin} → {m.after.begin}",
         f"{m.before.cycles} → {m.after.cycles}", _signed(m.after.end - m.before.end))
        for m in result.moved
    ]  # fmt: skip
    columns = ("instruction", "lanes", "begin", "end", "cycles", "source")
    return [
        Text(f"makespan {makespan.before} → {makespan.after} cycles ({_signed(makespan.delta)}{share})"),
        _table("Lane busy cycles", ("lane", "before", "after", "delta"),
               [(c.name, c.before, c.after, _signed(c.delta)) for c in result.lanes]),
        _table("Source lines whose cycles changed", ("source", "before", "after", "delta"),
               [(c.name, c.before, c.after, _signed(c.delta)) for c in result.lines]),
        _table("Moved instructions", ("instruction", "source", "begin", "cycles", "end delta"), moved),
        _table("Added instructions", columns, map(_instruction_row, result.added)),
        _table("Removed instructions", columns, map(_instruction_row, result.removed)),
    ]  # fmt: skip


def _bound(link: Link) -> str:
    after = link.after.name if link.after else "cycle 0"
    return {
        "data": f"data from {after}",
        "lane": f"lane after {after}",
        "start": "starts at cycle 0",
        "gap": f"gap of {link.wait} after {after}",
    }[link.bound]


def _critical_path_human(schedule: Schedule, chain: list[Link]) -> list[Any]:
    rows = [(n + 1, *_instruction_row(link.instruction), _bound(link)) for n, link in enumerate(chain)]
    columns = ("#", "instruction", "lanes", "begin", "end", "cycles", "source", "bound by")
    text = f"critical path of {len(chain)} instructions, makespan {schedule.makespan} cycles"
    return [_header(schedule.kernel, text), _table("Critical path", columns, rows)]


def _gaps_human(schedule: Schedule, found: list[Gap]) -> list[Any]:
    rows = [
        (g.lane, g.begin, g.end, g.cycles, f"{_name(g.ended_by)} ({g.ended_by.source or '?'})" if g.ended_by else "end")
        for g in found
    ]
    text = f"{len(found)} idle intervals, makespan {schedule.makespan} cycles"
    return [
        _header(schedule.kernel, text),
        _table("Idle intervals", ("lane", "begin", "end", "cycles", "ended by"), rows),
    ]
