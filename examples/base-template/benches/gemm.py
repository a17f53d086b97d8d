"""Time `launch(gemm_kernel)`: best of several launches after a warm-up, on whichever backend is active
(the CPU backend under plain `python`, the compiled kernel on the simulator under `furiosa-opt bench`)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from furiosa_opt import Context, HostTensor, bf16, launch, m


def main(repeats: int = 5) -> int:
    rng = np.random.default_rng(0)
    with Context.acquire() as ctx:
        a = HostTensor.rand(bf16, m[I, K], rng).to_hbm(ctx.pdma)
        b = HostTensor.rand(bf16, m[J, K], rng).to_hbm(ctx.pdma)
        launch(gemm_kernel, ctx, a, b)  # warm-up: builds and caches the layout maps
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            launch(gemm_kernel, ctx, a, b)
            times.append(time.perf_counter() - start)
    backend = os.environ.get("FURIOSA_OPT_BACKEND", "cpu") or "cpu"
    print(f"gemm {I.size}×{J.size}×{K.size} on the {backend} backend: best of {repeats} {min(times) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:2])))
