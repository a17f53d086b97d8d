"""The simulator's timing against the compiler's estimate, and its speed against the functional simulation.

* For every kernel the example packages build (`furiosa-opt compile` in each of examples/*, into a scratch
  output directory) and every module-level kernel of the upstream ports (tests/upstream/*.py) that
  compiles, the static schedule's makespan (the estimate) over the simulated one (sim/timing.py, commands
  sharing DMA engines, HBM channels and DM banks). Targets: median within 5%, worst within 25%.
* Timing gemm's EDF (`simulate`) against one functional launch of the same binary on the simulator (the
  data moved and computed, timing off). Target: timing ≤ the functional launch. Both best of five.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import best_of, duration, launch_npu, machine, npu_backend, row

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from furiosa_opt import Context, HostTensor, bf16, m
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.edf.container import read_edf_file
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.runtime import compiled_here
from furiosa_opt.sim.timing import simulate

ROOT = Path(__file__).resolve().parents[1]
FURIOSA_OPT = Path(sys.executable).with_name("furiosa-opt")


def ratio(static: int, simulated: int) -> float:
    """The estimate over the simulated makespan; 1 when both are 0 (a kernel of views only)."""
    return static / simulated if simulated else float(static == 0)


def ratios(out: Path) -> dict[str, float]:
    """Estimate / simulated makespan of every kernel the example packages compile into `out`."""
    for package in sorted((ROOT / "examples").iterdir()):  # one process a package: each imports its own modules
        env = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(out / package.name)}
        done = subprocess.run([FURIOSA_OPT, "compile"], cwd=package, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"compiling {package.name} failed: {done.stderr.strip()[-500:]}")
    found = {}
    for path in sorted(out.rglob("*.edf")):
        edf = read_edf_file(path)
        static = max((end for _, _, end in edf.schedule), default=0)
        found[edf.identity] = ratio(static, simulate(edf).makespan)
    return found


def upstream_ratios() -> dict[str, float]:
    """Estimate / simulated makespan of every module-level kernel of tests/upstream that compiles (the
    refused programs there are refused on purpose)."""
    sys.path.insert(0, str(ROOT / "tests"))  # the ports import the tests' shared helpers
    found = {}
    for path in sorted((ROOT / "tests" / "upstream").glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"upstream_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for value in vars(module).values():
            if not isinstance(value, DeviceFunction) or not value.identity.startswith(f"{module.__name__}."):
                continue
            result = compile_kernel(value)
            if result.ok:
                found[value.identity] = ratio(result.plan.makespan, simulate(read_edf(result.edf)).makespan)
    return found


def timing_versus_functional() -> tuple[float, float]:
    """(seconds to time gemm's EDF, seconds of one functional launch of it), each the best of five."""
    edf = compiled_here(gemm_kernel)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (I.size, K.size)).astype(np.float32)
    b = rng.uniform(-1, 1, (J.size, K.size)).astype(np.float32)
    with npu_backend(), Context.acquire() as ctx:
        a_hbm = HostTensor.from_numpy(a, bf16, m[I, K]).to_hbm(ctx.pdma)
        b_hbm = HostTensor.from_numpy(b, bf16, m[J, K]).to_hbm(ctx.pdma)
        functional = best_of(5, lambda: launch_npu(gemm_kernel, ctx, a_hbm, b_hbm).values())
    return best_of(5, lambda: simulate(edf)), functional


def main() -> int:
    print(machine())
    with tempfile.TemporaryDirectory() as out:
        examples = ratios(Path(out))
    upstream = upstream_ratios()
    found = {**examples, **upstream}
    for identity, ratio in found.items():
        print(f"{identity:72} estimate / simulated {ratio:.5f}")
    off = [abs(r - 1) for r in found.values()]
    median, worst = statistics.median(off), max(off)
    which = f"{len(examples)} example + {len(upstream)} upstream-port kernels"
    row(f"{which}, median |ratio − 1|", f"{median:.3%}", f"{median:.2%}", "≤ 5%", median <= 0.05)
    row(f"{which}, worst |ratio − 1|", f"{worst:.3%}", f"{worst:.2%}", "≤ 25%", worst <= 0.25)
    timing, functional = timing_versus_functional()
    figures = f"timing {duration(timing)}, launch {duration(functional)}"
    row(
        "gemm: timing the EDF / a functional launch",
        figures,
        f"{timing / functional:.3g}×",
        "≤ 1×",
        timing <= functional,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
