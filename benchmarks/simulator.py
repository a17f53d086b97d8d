"""Simulator speed: gemm run from its EDF on the TCP simulator against the same launch on the CPU backend.

Both runs take the same HBM arguments; the simulator's output must equal the CPU backend's bit for bit
before anything is timed. Each side is the best of several repeats after a warm-up (both cache layout
index maps on first use). The figure of merit is `simulator / CPU backend`; the target is ≤ 10×.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from cpu_backend import best_of  # the same timing discipline as the CPU backend benchmark

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from furiosa_opt import Context, HostTensor, bf16, launch, m
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.sim import run

TARGET = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    edf = read_edf(compile_kernel(gemm_kernel).edf)
    rng = np.random.default_rng(42)
    with Context.acquire() as ctx:
        a = HostTensor.rand(bf16, m[I, K], rng).to_hbm(ctx.pdma)
        b = HostTensor.rand(bf16, m[J, K], rng).to_hbm(ctx.pdma)
        inputs = [a.data.values().tobytes(), b.data.values().tobytes()]
        expected = launch(gemm_kernel, ctx, a, b).data.values().tobytes()
        if run(edf, inputs) != [expected]:
            print("gemm: the simulator and the CPU backend disagree; not timing", file=sys.stderr)
            return 1
        cpu = best_of(args.repeats, lambda: launch(gemm_kernel, ctx, a, b).data.values())
        simulated = best_of(args.repeats, lambda: run(edf, inputs))
    ratio = simulated / cpu
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"gemm {I.size}×{J.size}×{K.size}: CPU backend {cpu * 1e3:.1f} ms, simulator {simulated * 1e3:.1f} ms "
          f"→ {ratio:.1f}× ({verdict} the ≤ {TARGET:.0f}× target)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
