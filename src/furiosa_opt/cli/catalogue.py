"""`furiosa-opt doc`: a kernel catalogue of the selected packages.

For every kernel: its signature (the annotations the compiler reads), device, source line, the vISA op and
LIR command counts, the static and simulated makespans, the memory high-water per tier, where the time
goes (the critical path of `furiosa-opt schedule critical-path`, summed by lane and by source line), and
two files beside the catalogue: its schedule (open it with `furiosa-opt view`) and its summary, the
`summary.md` that `furiosa-opt compile --dump-summary` writes. `index.md` opens with one row per kernel.
Kernels are compiled in memory; the catalogue is all that is written.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from furiosa_opt.analysis.critical_path import critical_path
from furiosa_opt.analysis.schedule import Schedule, parse_schedule
from furiosa_opt.analysis.summary import UNKNOWN_SOURCE
from furiosa_opt.cli.compile import Reporter, Target, compile_target, summary_numbers
from furiosa_opt.compiler.driver import Compiled
from furiosa_opt.compiler.schedule import schedule_json, summary_markdown
from furiosa_opt.files import printable, write_atomic
from furiosa_opt.lang.device import DeviceFunction

TOP_LINES = 5  # source lines listed per kernel under "where the time goes"


def write_catalogue(found: list[Target], folder: Path, report: Reporter) -> int:
    """Write `folder/index.md` and one schedule per kernel; 1 if any kernel failed to compile or a file
    could not be written (one line)."""
    try:
        return _write_catalogue(found, folder, report)
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        report.status("Error", printable(f"cannot write {where}{error.strerror or error}"))
        return 1


def _write_catalogue(found: list[Target], folder: Path, report: Reporter) -> int:
    sections, rows, failed = [], [], 0
    for target in found:
        compiled = compile_target(target, report)
        if compiled is None:
            failed += 1
            continue
        kernel, result = compiled
        schedule_text = json.dumps(schedule_json(result.plan), indent=1, sort_keys=True)
        numbers = summary_numbers(result)
        path = path_summary(parse_schedule(json.loads(schedule_text), kernel.identity))
        write_atomic(folder / f"{kernel.identity}.schedule.json", schedule_text.encode())
        write_atomic(folder / f"{kernel.identity}.summary.md", summary_markdown(numbers).encode())
        sections.append(_section(kernel, result, numbers, path, target.package.root))
        rows.append(_row(kernel, numbers, path))
    title = (
        f"# Kernel catalogue\n\n{len(sections)} kernel(s). Open a schedule with `furiosa-opt view FILE`; cycles are "
        "the compiler's static schedule unless marked simulated.\n\n"
        "| kernel | makespan | simulated | critical path: busiest lane | top source line |\n|---|---|---|---|---|\n"
    )
    write_atomic(folder / "index.md", "\n".join([title + "\n".join(rows) + "\n", *sections]).encode())
    report.status("Finished" if not failed else "Error", f"catalogue of {len(sections)} kernel(s) in {folder}")
    return 1 if failed else 0


def signature(kernel: DeviceFunction) -> str:
    """The kernel's `def` line as the compiler reads it: parameters with their tensor types."""
    params = [f"{p.name}: Context" if p.type is None else f"{p.name}: {p.type!r}" for p in kernel.parameters]
    returns = kernel.returns or ()
    result = "None" if not returns else repr(returns[0]) if len(returns) == 1 else f"tuple{list(returns)!r}"
    return f"def {kernel.__name__}({', '.join(params)}) -> {result}"


@dataclass(frozen=True)
class PathSummary:
    """The critical path (`analysis.critical_path`) of a schedule, summed: it runs from cycle 0 to the
    makespan, each instruction starting when a predecessor ends or after a wait, so the lanes' cycles and
    the waits add up to the makespan."""

    makespan: int
    instructions: int
    lanes: tuple[tuple[str, int], ...]  # cycles per lane (`+`-joined when an instruction holds several)
    lines: tuple[tuple[str, int], ...]  # cycles per source line
    waits: int  # cycles spent waiting for something the schedule does not show (`gap` links)

    def share(self, cycles: int) -> str:
        return f"{cycles / max(self.makespan, 1):.1%}"


def path_summary(schedule: Schedule) -> PathSummary:
    chain = critical_path(schedule)
    lanes: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    for link in chain:
        instruction = link.instruction
        if instruction.cycles:
            lanes["+".join(instruction.lanes) or "(no lane)"] += instruction.cycles
            lines[instruction.source or UNKNOWN_SOURCE] += instruction.cycles
    ordered = lambda counts: tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))  # noqa: E731
    return PathSummary(schedule.makespan, len(chain), ordered(lanes), ordered(lines), sum(k.wait for k in chain))


def _row(kernel: DeviceFunction, numbers: dict, path: PathSummary) -> str:
    lane = f"{path.lanes[0][0]} {path.share(path.lanes[0][1])}" if path.lanes else ""
    line = f"`{printable(path.lines[0][0])}` {path.share(path.lines[0][1])}" if path.lines else ""
    return f"| `{kernel.identity}` | {numbers['makespan']} | {numbers['simulated']['makespan']} | {lane} | {line} |"


def _section(kernel: DeviceFunction, result: Compiled, numbers: dict, path: PathSummary, root: Path) -> str:
    location = Path(kernel.location.file).resolve()
    where = location.relative_to(root.resolve()) if location.is_relative_to(root.resolve()) else location
    memory = ", ".join(f"{tier} {size} B" for tier, size in numbers["memory_high_water_bytes"].items())
    busy = ", ".join(f"{lane} {share:.1%}" for lane, share in numbers["utilisation"].items())
    lanes = ", ".join(f"{lane} {cycles} ({path.share(cycles)})" for lane, cycles in path.lanes)
    schedule_file, summary_file = f"{kernel.identity}.schedule.json", f"{kernel.identity}.summary.md"
    return "\n".join(
        [
            f"## `{kernel.identity}`",
            "",
            "```python",
            f"@device(chip={kernel.device.chip}, pe={kernel.device.pe})",
            signature(kernel),
            "```",
            "",
            f"* source: `{where.as_posix()}:{kernel.location.line}`",
            f"* {len(result.visa.ops)} vISA ops → {len(result.lir.commands)} LIR commands",
            f"* makespan: {result.plan.makespan} cycles static, {numbers['simulated']['makespan']} simulated "
            f"(lower bound {result.plan.lower_bound})",
            f"* lanes busy: {busy}",
            f"* memory high-water: {memory}",
            f"* schedule: [{schedule_file}]({schedule_file}); summary: [{summary_file}]({summary_file})",
            f"* critical path: {path.instructions} instruction(s); cycles by lane: {lanes or 'none'}; "
            f"waiting: {path.waits} ({path.share(path.waits)})",
            "",
            "| critical path: source line | cycles | share of the makespan |",
            "|---|---|---|",
            *(f"| `{printable(line)}` | {cycles} | {path.share(cycles)} |" for line, cycles in path.lines[:TOP_LINES]),
            "",
        ]
    )
