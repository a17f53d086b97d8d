"""Simulator speed: kernels run from their EDF on the TCP simulator against the same launches on the CPU backend.

gemm (512 × 512 × 64) and the three transformer-shaped kernels of `transformer_shapes.py`, each launched with
`FURIOSA_OPT_BACKEND=npu` (HBM tensors in the simulated device's memory, the EDF compiled in this process
beforehand, untimed) and on the CPU backend. On each backend the output must equal numpy's bit for bit
before that backend is timed, so the two also agree with each other. Each side is the best of several
repeats after that first launch. The figure of merit is `simulator / CPU backend`; the target is ≤ 1.5× for
gemm and ≤ 5× for the others.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np
from common import best_of, duration, launch_npu, machine, npu_backend, numpy_gemm, row, same_bits
from transformer_shapes import Case, cases, output, uniform_bf16

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from furiosa_opt import Context, HbmTensor, HostTensor, bf16, launch, m
from furiosa_opt.runtime import compiled_here

TARGETS = {"gemm": 1.5}  # by the case name's first word; else TARGET
TARGET = 5.0


def gemm_case(rng: np.random.Generator) -> Case:
    a, b = uniform_bf16(rng, (I.size, K.size)), uniform_bf16(rng, (J.size, K.size))

    def bind(ctx: Context, run: Callable) -> Callable[[], HbmTensor]:
        a_hbm = HostTensor.from_numpy(a, bf16, m[I, K]).to_hbm(ctx.pdma)
        b_hbm = HostTensor.from_numpy(b, bf16, m[J, K]).to_hbm(ctx.pdma)

        def once() -> HbmTensor:
            out = run(gemm_kernel, ctx, a_hbm, b_hbm)
            out.values()  # the CPU backend moves lazily: make the result land
            return out

        return once

    return Case(f"gemm {I.size}×{J.size}×{K.size}", gemm_kernel, bind, lambda: numpy_gemm(a, b))


def timed(case: Case, run: Callable, repeats: int) -> float | None:
    """Best-of time of one launch with `run`, or None when its output differs from numpy's."""
    with Context.acquire() as ctx:
        once = case.bind(ctx, run)
        if not same_bits(output(once(), ctx), case.numpy()):
            return None
        return best_of(repeats, once)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(42)
    failed = False
    for case in [gemm_case(rng), *cases(rng)]:
        compiled_here(case.kernel)
        cpu = timed(case, launch, args.repeats)
        with npu_backend():
            simulated = timed(case, launch_npu, args.repeats)
        agree = {"CPU backend": cpu, "simulator": simulated}
        print(f"{case.name:44} check: " + ", ".join(
            f"{name} {'equals' if t is not None else 'DIFFERS FROM'} numpy" for name, t in agree.items()
        ) + " bit for bit")  # fmt: skip
        if cpu is None or simulated is None:
            failed = True
            continue
        ratio = simulated / cpu
        figures = f"simulator {duration(simulated)}, CPU {duration(cpu)}"
        target = TARGETS.get(case.name.split()[0], TARGET)
        row(case.name, figures, f"{ratio:.3g}×", f"≤ {target:g}×", ratio <= target)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
