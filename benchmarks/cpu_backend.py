"""CPU backend speed: `launch(gemm_kernel)` against numpy doing the same math in the same fold order.

Both sides compute C = A·Bᵀ (512 × 512 × 64, bf16 in, f32 sequential fold over k, bf16 out) from the same
inputs, measured in one run, best of several repeats after a warm-up launch (the first launch builds
and caches the layout index maps; `--cold` reports it too). The figure of merit is the ratio
`launch / numpy`; the target is ≤ 3×.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from common import best_of, machine, numpy_gemm

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from furiosa_opt import Context, HostTensor, bf16, launch, m


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="also report the first (cache-building) launch")
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(42)
    with Context.acquire() as ctx:
        a, b = HostTensor.rand(bf16, m[I, K], rng), HostTensor.rand(bf16, m[J, K], rng)
        a_hbm, b_hbm = a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma)
        a_np, b_np = a.to_numpy(), b.to_numpy()

        start = time.perf_counter()
        out = launch(gemm_kernel, ctx, a_hbm, b_hbm)
        result = out.to_host(ctx.pdma).to_numpy()
        cold = time.perf_counter() - start
        expected = numpy_gemm(a_np, b_np)
        if not np.array_equal(result.view(np.uint16), expected.view(np.uint16)):
            print("gemm: the launch and the numpy reference disagree; not timing", file=sys.stderr)
            return 1

        def run_launch() -> None:
            launch(gemm_kernel, ctx, a_hbm, b_hbm).values()

        kernel = best_of(args.repeats, run_launch)
        reference = best_of(args.repeats, lambda: numpy_gemm(a_np, b_np))
    ratio = kernel / reference
    print(
        f"gemm {I.size}×{J.size}×{K.size}: launch {kernel * 1e3:.1f} ms, numpy {reference * 1e3:.1f} ms, "
        f"ratio {ratio:.2f}× (target ≤ 3×)"
    )
    if args.cold:
        print(f"first launch (builds and caches the index maps): {cold:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
