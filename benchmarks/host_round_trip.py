"""gemm as a host program runs it, from numpy arrays back to a numpy array, on the CPU backend.

* the round trip `HostTensor.from_numpy` → `to_hbm` → `launch(gemm_kernel)` → `to_host` → `to_numpy`
  (512 × 512 × 64, bf16) against numpy doing the same sequential-k fold (`numpy_gemm`): target ≤ 1.5×;
* the first launch of this process (it builds what later launches reuse) against a warm one: target
  first ≤ warm + 0.3 s;
* peak RSS of `python -m base_template.gemm`, run as a child process: target ≤ 400 MB.

The first launch's output must equal numpy's bit for bit before anything else is timed; the warm
figures are the best of several repeats.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from common import best_of, duration, machine, numpy_gemm, peak_rss, row, same_bits

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from base_template.oracle import round_bf16
from furiosa_opt import Context, HostTensor, bf16, launch, m

ROUND_TRIP_TARGET = 1.5
FIRST_LAUNCH_SLACK = 0.3  # seconds over a warm launch
RSS_TARGET = 400e6  # bytes


def round_trip(ctx: Context, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a_hbm = HostTensor.from_numpy(a, bf16, m[I, K]).to_hbm(ctx.pdma)
    b_hbm = HostTensor.from_numpy(b, bf16, m[J, K]).to_hbm(ctx.pdma)
    return launch(gemm_kernel, ctx, a_hbm, b_hbm).to_host(ctx.pdma).to_numpy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(machine())
    done, rss = peak_rss([sys.executable, "-m", "base_template.gemm"])
    if done.returncode:
        print(f"python -m base_template.gemm failed:\n{done.stdout}{done.stderr}", file=sys.stderr)
        return 1

    rng = np.random.default_rng(42)
    a, b = (round_bf16(rng.uniform(-1, 1, (n.size, K.size)).astype(np.float32)) for n in (I, J))
    expected = numpy_gemm(a, b)
    with Context.acquire() as ctx:
        a_hbm = HostTensor.from_numpy(a, bf16, m[I, K]).to_hbm(ctx.pdma)
        b_hbm = HostTensor.from_numpy(b, bf16, m[J, K]).to_hbm(ctx.pdma)
        start = time.perf_counter()
        out = launch(gemm_kernel, ctx, a_hbm, b_hbm)
        out.values()  # the CPU backend moves lazily: make the result land
        first = time.perf_counter() - start
        equal = same_bits(out.to_host(ctx.pdma).to_numpy(), expected)
        print(f"check: the first launch {'equals' if equal else 'DIFFERS FROM'} numpy_gemm bit for bit")
        if not equal:
            return 1
        warm = best_of(args.repeats, lambda: launch(gemm_kernel, ctx, a_hbm, b_hbm).values())
        trip = best_of(args.repeats, lambda: round_trip(ctx, a, b))
        numpy = best_of(args.repeats, lambda: numpy_gemm(a, b))

    shape = f"{I.size}×{J.size}×{K.size}"
    ratio = trip / numpy
    row(f"gemm {shape} round trip / numpy", f"round trip {duration(trip)}, numpy {duration(numpy)}",
        f"{ratio:.3g}×", f"≤ {ROUND_TRIP_TARGET:g}×", ratio <= ROUND_TRIP_TARGET)  # fmt: skip
    row("first launch − warm launch", f"first {duration(first)}, warm {duration(warm)}",
        f"{first - warm:+.2f} s", f"≤ {FIRST_LAUNCH_SLACK:g} s", first - warm <= FIRST_LAUNCH_SLACK)  # fmt: skip
    row("peak RSS of python -m base_template.gemm", "", f"{rss / 1e6:.0f} MB", f"≤ {RSS_TARGET / 1e6:.0f} MB",
        rss <= RSS_TARGET)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
