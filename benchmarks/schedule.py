"""Schedules and compile times of the base-template kernels.

* makespan / lower bound (max of the critical path and each resource's busy time), target ≤ 1.10;
* our list schedule against a naive in-order one (program order, no overlap between commands);
* a cold full compile (stages 1–3 and the artifact, in-process after imports), target < 1 s per kernel;
* a cached compile (the fast key hits: nothing is imported or traced), target < 50 ms per kernel.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from common import machine

from furiosa_opt.backend.trace import trace
from furiosa_opt.cli.main import main as cli
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["constant_add_kernel", "elementwise_mul_kernel", "dot_product_kernel", "gemv_kernel", "gemm_kernel"]


def compile_seconds(kernel: str) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        code = cli(["compile", f"kernel.{kernel}"])
    if code:
        raise SystemExit(f"compile {kernel} failed")
    return time.perf_counter() - start


def main() -> int:
    print(machine())
    os.chdir(ROOT / "examples" / "base-template")
    with tempfile.TemporaryDirectory() as out:
        os.environ["FURIOSA_OPT_OUT_DIR"] = out
        worst = 0.0
        columns = ("makespan", "bound", "ratio", "in-order", "speedup", "cold", "cached")
        print(f"{'kernel':24}", *(f"{c:>9}" for c in columns))
        for name in KERNELS:
            kernel = getattr(importlib.import_module(f"base_template.kernel.{name}"), name)
            program = lower(trace(kernel)[0])
            ours, naive = schedule(program), schedule(program, "inorder")
            cold, cached = compile_seconds(name), compile_seconds(name)
            ratio = ours.makespan / ours.lower_bound
            worst = max(worst, ratio)
            speedup = naive.makespan / ours.makespan
            print(
                f"{name:24} {ours.makespan:9} {ours.lower_bound:9} {ratio:9.3f} {naive.makespan:9} {speedup:8.2f}x "
                f"{cold * 1e3:7.1f}ms {cached * 1e3:7.1f}ms"
            )
        print(f"worst makespan / lower bound: {worst:.3f} (target ≤ 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
