"""Host program: C = A·Bᵀ for 512 × 64 bf16 matrices on a 16 × 16 grid of slices."""

from __future__ import annotations

import sys

import numpy as np

from base_template.kernel.gemm_kernel import I, J, K, gemm_kernel
from base_template.oracle import round_bf16, sequential_dot, within
from furiosa_opt import Context, HostTensor, bf16, launch, m


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with Context.acquire() as ctx:
        a, b = HostTensor.rand(bf16, m[I, K], rng), HostTensor.rand(bf16, m[J, K], rng)
        out = launch(gemm_kernel, ctx, a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma))
        return a.to_numpy(), b.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def main() -> int:
    a, b, out = run(np.random.default_rng(42))
    exact = round_bf16(sequential_dot(a[:, None, :], b[None, :, :]))
    cells = I.size * J.size
    same = int(np.sum(out.view(np.uint16) == exact.view(np.uint16)))
    close = int(np.sum(within(out, a.astype(np.float64) @ b.astype(np.float64).T, 0.05, 1.0)))
    print(
        f"gemm: C[{I.size}×{J.size}] bf16 over K={K.size}; {same}/{cells} equal the sequential-f32 oracle bit "
        f"for bit, {close}/{cells} within tolerance of float64"
    )
    return 0 if same == close == cells else 1


if __name__ == "__main__":
    sys.exit(main())
