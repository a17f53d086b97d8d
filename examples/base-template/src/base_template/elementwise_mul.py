"""Host program: multiply two random i32 vectors element by element on the device."""

from __future__ import annotations

import sys

import numpy as np

from base_template.kernel.elementwise_mul_kernel import A, elementwise_mul_kernel
from furiosa_opt import Context, HostTensor, i32, launch, m


def reference(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """lhs · rhs with i32 wrap-around."""
    return (lhs.astype(np.int64) * rhs.astype(np.int64) % 2**32).astype(np.uint32).view(np.int32)


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with Context.acquire() as ctx:
        lhs, rhs = HostTensor.rand(i32, m[A], rng), HostTensor.rand(i32, m[A], rng)
        out = launch(elementwise_mul_kernel, ctx, lhs.to_hbm(ctx.pdma), rhs.to_hbm(ctx.pdma))
        return lhs.to_numpy(), rhs.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def main() -> int:
    lhs, rhs, out = run(np.random.default_rng(42))
    same = int(np.sum(out == reference(lhs, rhs)))
    print(f"elementwise_mul: out[{A.size}] i32 = lhs · rhs; {same}/{A.size} equal the numpy oracle")
    return 0 if same == A.size else 1


if __name__ == "__main__":
    sys.exit(main())
