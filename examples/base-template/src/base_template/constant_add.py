"""Host program: add 1 to 2048 random i32 values on the device and check the result."""

from __future__ import annotations

import sys

import numpy as np

from base_template.kernel.constant_add_kernel import A, constant_add_kernel
from furiosa_opt import Context, HostTensor, i32, launch, m


def reference(x: np.ndarray) -> np.ndarray:
    """x + 1 with i32 wrap-around."""
    return (x.astype(np.int64) + 1).astype(np.int32)


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    with Context.acquire() as ctx:
        x = HostTensor.rand(i32, m[A], rng)
        out = launch(constant_add_kernel, ctx, x.to_hbm(ctx.pdma))
        return x.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def main() -> int:
    x, out = run(np.random.default_rng(42))
    same = int(np.sum(out == reference(x)))
    print(f"constant_add: out[{A.size}] i32 = x + 1; {same}/{A.size} equal the numpy oracle; out[:4] = {out[:4]}")
    return 0 if same == A.size else 1


if __name__ == "__main__":
    sys.exit(main())
