"""`python -m furiosa_opt.sim KERNEL.edf IN... --out OUT...`: run an EDF on raw argument files.

Given only the binary and the argument bytes (each in its tensor's wire order), it writes each output's
bytes; this is how the simulator runs apart from any Python kernel code.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from furiosa_opt.compiler.edf import EdfError, read_edf_file
from furiosa_opt.files import write_atomic
from furiosa_opt.sim.machine import SimulatorError, run
from furiosa_opt.sim.timing import compare, simulate, trace_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m furiosa_opt.sim", description=__doc__.splitlines()[0])
    parser.add_argument("edf", type=Path)
    parser.add_argument("inputs", type=Path, nargs="*", metavar="IN")
    parser.add_argument("--out", type=Path, nargs="*", default=[], metavar="OUT")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write the simulated run as schedule JSON")
    options = parser.parse_args(argv)
    try:
        edf = read_edf_file(options.edf)
        if len(options.inputs) != len(edf.arguments) or len(options.out) != len(edf.outputs):
            raise SimulatorError(
                f"kernel {edf.identity} takes {len(edf.arguments)} input file(s) and writes {len(edf.outputs)} "
                f"output file(s); got {len(options.inputs)} and {len(options.out)}"
            )
        inputs = [path.read_bytes() for path in options.inputs]
        for path, data in zip(options.out, run(edf, inputs), strict=True):
            write_atomic(path, data)
        timing = simulate(edf)
        print(f"{edf.identity}: {timing.makespan} simulated cycles ({compare(edf, timing)})", file=sys.stderr)
        if options.trace is not None:
            write_atomic(options.trace, json.dumps(trace_json(timing), indent=1, sort_keys=True).encode())
    except (EdfError, SimulatorError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
