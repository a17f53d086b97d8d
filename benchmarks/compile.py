"""Compile time of each base-template kernel, cold: a fresh interpreter per kernel.

Reports the wall time of `furiosa-opt compile <kernel>` (interpreter start, package discovery, imports,
all stages, printing) and, inside it, the stages' own time (stage 1 target: < 0.3 s each).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["constant_add_kernel", "elementwise_mul_kernel", "dot_product_kernel", "gemv_kernel", "gemm_kernel"]
TOOL = Path(sys.executable).with_name("furiosa-opt")


def main() -> int:
    worst = 0.0
    print(machine())
    with tempfile.TemporaryDirectory() as out:
        # An output directory of its own: artifacts left in target/ (by `make demo`) would make every
        # compile a cache hit, with no stage time to report.
        environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": out}
        for name in KERNELS:
            start = time.perf_counter()
            done = subprocess.run(
                [str(TOOL), "compile", f"kernel.{name}"], cwd=ROOT / "examples" / "base-template",
                env=environment, capture_output=True, text=True, check=False,
            )  # fmt: skip
            wall = time.perf_counter() - start
            stage = re.search(r"\((\d+) vISA ops → \d+ LIR commands, [^)]*?([\d.]+) s\)", done.stderr)
            if done.returncode or not stage:
                print(f"{name}: compile failed\n{done.stderr}", file=sys.stderr)
                return 1
            worst = max(worst, float(stage[2]))
            print(f"{name:24} {stage[1]:>3} ops   stages {float(stage[2]) * 1e3:6.1f} ms   command {wall:5.2f} s")
    print(f"slowest stages 1+2: {worst * 1e3:.1f} ms (stage 1 target < 300 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
