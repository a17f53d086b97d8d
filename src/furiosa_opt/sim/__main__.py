"""`python -m furiosa_opt.sim KERNEL.edf IN... --out OUT...`: run an EDF on raw argument files.

Given only the binary and the argument bytes (each in its tensor's wire order), it writes each output's
bytes; this is how the simulator runs apart from any Python kernel code.

Nothing is allocated before it is known to fit: `read_edf` checks the binary against the hardware (loop
counts, sizes, capacities, address ranges, syncs that cannot deadlock), then the host memory the run
needs is estimated and compared with the budget (`--memory-budget`, else `FURIOSA_OPT_SIM_MEMORY`, else
`env.sim_memory_budget`'s default). Each input file is read by its buffer's size, never to its end: a
file of another length is refused. The simulated timing is worked out before any output is written, so a
failure leaves no output behind. Every refusal is one line on stderr and exit status 1; a bad command
line is exit status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TypeVar

from furiosa_opt import env
from furiosa_opt.compiler.edf import Edf, EdfError, Leaf, footprint, read_edf_file
from furiosa_opt.compiler.lir import Command
from furiosa_opt.configs.layouts import box_size
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import printable, write_atomic
from furiosa_opt.sim.machine import SimulatorError, run
from furiosa_opt.sim.memory import SLICES
from furiosa_opt.sim.timing import compare, simulate, trace_json
from furiosa_opt.sim.walk import extent

POSITION_BYTES = 32  # host bytes per stream position and slice: values, tags and an engine's temporaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m furiosa_opt.sim", description=__doc__.splitlines()[0])
    parser.add_argument("edf", type=Path)
    parser.add_argument("inputs", type=Path, nargs="*", metavar="IN")
    parser.add_argument("--out", type=Path, nargs="*", default=[], metavar="OUT")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write the simulated run as schedule JSON")
    parser.add_argument(
        "--memory-budget",
        type=_size,
        metavar="SIZE",
        help="host memory the run may plan to use (`512M`, `4G`; default: FURIOSA_OPT_SIM_MEMORY, else half the "
        "machine's memory, at most 16G)",
    )
    options = parser.parse_args(argv)
    try:
        budget = options.memory_budget if options.memory_budget is not None else env.sim_memory_budget()
    except env.EnvError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    loaded: list[Edf] = []
    try:
        simulate_files(options.edf, options.inputs, options.out, options.trace, budget, loaded)
    except (EdfError, SimulatorError) as error:
        print(f"error: {printable(str(error))}", file=sys.stderr)
        return 1
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {printable(where + (error.strerror or str(error)))}", file=sys.stderr)
        return 1
    except MemoryError:
        kernel = f"kernel {loaded[0].identity}: " if loaded else ""
        print(
            f"error: {kernel}the host ran out of memory within the {budget}-byte budget; lower --memory-budget "
            "below what this process may allocate",
            file=sys.stderr,
        )
        return 1
    return 0


def simulate_files(
    edf_path: Path, inputs: list[Path], outputs: list[Path], trace: Path | None, budget: int, loaded: list[Edf]
) -> None:
    """What `main` does, raising what it reports: read and check the EDF (appended to `loaded`), check the
    budget, time the run, read the inputs by size, run, and only then write the outputs and the trace."""
    edf = read_edf_file(edf_path)
    loaded.append(edf)
    if len(inputs) != len(edf.arguments) or len(outputs) != len(edf.outputs):
        raise SimulatorError(
            f"kernel {edf.identity} takes {len(edf.arguments)} input file(s) and writes {len(edf.outputs)} "
            f"output file(s); got {len(inputs)} and {len(outputs)}"
        )
    check_budget(edf, budget)
    timing = guarded(edf, "timing the streams", lambda: simulate(edf))  # before any output exists
    data = [read_input(path, tensor, edf) for path, tensor in zip(inputs, edf.arguments, strict=True)]
    for path, output in zip(outputs, guarded(edf, "running the kernel", lambda: run(edf, data)), strict=True):
        write_atomic(path, output)
    print(f"{edf.identity}: {timing.makespan} simulated cycles ({compare(edf, timing)})", file=sys.stderr)
    if trace is not None:
        write_atomic(trace, json.dumps(trace_json(timing), indent=1, sort_keys=True).encode())


class SimulatorFailure(SimulatorError):
    """The simulator failed on an EDF `read_edf` accepted: the binary is damaged in a way the reader does
    not check, or the simulator has a bug. One line for the user; `__cause__` keeps the original error."""


T = TypeVar("T")


def guarded(edf: Edf, doing: str, action: Callable[[], T]) -> T:
    """`action()`, with an unexpected exception (not a FuriosaOptError, not a MemoryError) turned into a
    SimulatorFailure naming the kernel and what was being done."""
    try:
        return action()
    except (FuriosaOptError, MemoryError):
        raise
    except Exception as error:
        detail = printable(str(error).splitlines()[0] if str(error) else "")
        raise SimulatorFailure(
            f"kernel {edf.identity}: the simulator failed while {doing} ({type(error).__name__}: {detail}); the "
            "EDF is damaged in a way its reader does not check, or this is a simulator bug"
        ) from error


def _size(text: str) -> int:
    try:
        return env.parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def read_input(path: Path, tensor: Leaf, edf: Edf) -> bytes:
    """The argument's bytes: exactly its buffer's size, read no further; a file of another length (or a
    device or pipe that gives more or less) is a SimulatorError naming the file and the argument."""
    size = next(b.bytes for b in edf.buffers if b.name == tensor.buffer)
    where = f"{printable(str(path))}: kernel {edf.identity}: argument {tensor.path}"
    if tensor.bytes != size:
        raise SimulatorError(
            f"{where} is {tensor.bytes} bytes in a {size}-byte buffer; the simulator binds whole buffers"
        )
    with open(path, "rb") as handle:
        status = os.fstat(handle.fileno())
        if stat.S_ISREG(status.st_mode) and status.st_size != size:
            raise SimulatorError(f"{where} is {size} bytes, the file holds {status.st_size}")
        data = handle.read(size)
        if len(data) < size:
            raise SimulatorError(f"{where} is {size} bytes, the file ends after {len(data)}")
        if handle.read(1):
            raise SimulatorError(f"{where} is {size} bytes, the file holds more")
    return data


def check_budget(edf: Edf, budget: int) -> None:
    """Refuse, before anything is allocated, a run whose estimated host memory exceeds `budget`."""
    need = host_memory(edf)
    if need > budget:
        raise SimulatorError(
            f"kernel {edf.identity}: running it needs about {need} bytes of host memory, over the {budget}-byte "
            "budget (raise it with --memory-budget or FURIOSA_OPT_SIM_MEMORY)"
        )


def host_memory(edf: Edf) -> int:
    """An estimate, generous by design, of the host bytes a run holds at its peak: every DRAM buffer, the
    input bytes read and the output bytes returned, the DM/TRF/VRF files of every slice, and the largest
    temporary one command makes (a DMA's copy, a Tensor Unit stream per slice)."""
    rows = edf.chip * SLICES
    dram = sum(b.bytes for b in edf.buffers if b.memory == "dram")
    tables = sum(t.bytes for t in edf.arguments) + sum(t.bytes for t in edf.outputs)
    files = sum(
        rows * max((b.address + b.span for b in edf.buffers if b.memory == memory), default=0)
        for memory in ("sram", "trf", "vrf")
    )
    return dram + tables + files + max((_temporary(edf, c, rows) for c in edf.commands()), default=0)


def _temporary(edf: Edf, command: Command, rows: int) -> int:
    buffers = {b.name: b for b in edf.buffers}
    walk = command.dma or command.fill or command.indirect
    if walk is not None:
        moved = math.prod(loop.size for loop in walk.loops) * walk.packet
        target = buffers[command.outputs[0]]
        return min(moved, footprint(target.memory, target.bytes, edf.chip)) + 8 * len(getattr(walk, "entries", ()))
    if command.kind != "exec":
        return 0
    positions = [
        math.prod(entry.size for entry in sequencer.time + sequencer.packet)
        for sequencer in (command.fetch, command.commit)
        if sequencer is not None
    ]
    for config in command.engines:  # what a stage makes: its stream, a fold's terms, a walk's reach or table
        values = {f.name: getattr(config, f.name) for f in fields(config)}
        positions += [values["steps"] * values["lanes"]] if "steps" in values else []
        positions += [box_size(values[key]) for key in ("terms", "target") if key in values]
        positions += [
            extent(v) if k.endswith("walk") else len(v) for k, v in values.items() if k.endswith(("walk", "table"))
        ]
    positions += [buffers[name].bytes * 2 for name in command.inputs]  # a register file: 4-bit at the most
    return rows * max(positions, default=1) * POSITION_BYTES


if __name__ == "__main__":
    sys.exit(main())
