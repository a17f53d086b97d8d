"""`furiosa-opt doc`: a kernel catalogue of the selected packages.

For every kernel: its signature (the annotations the compiler reads), device, source line, the vISA op and
LIR command counts, the static and simulated makespans, the memory high-water per tier, and its schedule
as a JSON file beside the catalogue (open it with `furiosa-opt view`). Kernels are compiled in memory;
the catalogue is all that is written.
"""

from __future__ import annotations

import json
from pathlib import Path

from furiosa_opt.cli.compile import Reporter, Target, compile_target
from furiosa_opt.compiler.driver import Compiled
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.schedule import schedule_json, summary
from furiosa_opt.files import printable, write_atomic
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.sim.timing import simulate


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
    sections, failed = [], 0
    for target in found:
        compiled = compile_target(target, report)
        if compiled is None:
            failed += 1
            continue
        kernel, result = compiled
        schedule_file = f"{kernel.identity}.schedule.json"
        write_atomic(folder / schedule_file, json.dumps(schedule_json(result.plan), indent=1, sort_keys=True).encode())
        sections.append(_section(kernel, result, schedule_file, target.package.root))
    title = f"# Kernel catalogue\n\n{len(sections)} kernel(s). Open a schedule with `furiosa-opt view FILE`.\n"
    write_atomic(folder / "index.md", "\n".join([title, *sections]).encode())
    report.status("Finished" if not failed else "Error", f"catalogue of {len(sections)} kernel(s) in {folder}")
    return 1 if failed else 0


def signature(kernel: DeviceFunction) -> str:
    """The kernel's `def` line as the compiler reads it: parameters with their tensor types."""
    params = [f"{p.name}: Context" if p.type is None else f"{p.name}: {p.type!r}" for p in kernel.parameters]
    returns = kernel.returns or ()
    result = "None" if not returns else repr(returns[0]) if len(returns) == 1 else f"tuple{list(returns)!r}"
    return f"def {kernel.__name__}({', '.join(params)}) -> {result}"


def _section(kernel: DeviceFunction, result: Compiled, schedule_file: str, root: Path) -> str:
    numbers = summary(result.plan)
    simulated = simulate(read_edf(result.edf)).makespan
    location = Path(kernel.location.file).resolve()
    where = location.relative_to(root.resolve()) if location.is_relative_to(root.resolve()) else location
    memory = ", ".join(f"{tier} {size} B" for tier, size in numbers["memory_high_water_bytes"].items())
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
            f"* makespan: {result.plan.makespan} cycles static, {simulated} simulated "
            f"(lower bound {result.plan.lower_bound})",
            f"* memory high-water: {memory}",
            f"* schedule: [{schedule_file}]({schedule_file})",
            "",
        ]
    )
