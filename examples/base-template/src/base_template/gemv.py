"""Host program: y = M·v for a 256 × 2048 bf16 matrix, one row per slice."""

from __future__ import annotations

import sys

import numpy as np

from base_template.kernel.gemv_kernel import I, J, gemv_kernel
from base_template.oracle import round_bf16, sequential_dot, within
from furiosa_opt import Context, HostTensor, bf16, launch, m


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with Context.acquire() as ctx:
        matrix, vector = HostTensor.rand(bf16, m[I, J], rng), HostTensor.rand(bf16, m[J], rng)
        out = launch(gemv_kernel, ctx, matrix.to_hbm(ctx.pdma), vector.to_hbm(ctx.pdma))
        return matrix.to_numpy(), vector.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def main() -> int:
    matrix, vector, out = run(np.random.default_rng(42))
    exact = round_bf16(sequential_dot(matrix, vector[None, :]))
    same = int(np.sum(out.view(np.uint16) == exact.view(np.uint16)))
    close = int(np.sum(within(out, matrix.astype(np.float64) @ vector.astype(np.float64), 0.02, 0.5)))
    print(
        f"gemv: y[{I.size}] bf16; {same}/{I.size} equal the sequential-f32 oracle bit for bit, "
        f"{close}/{I.size} within tolerance of float64"
    )
    return 0 if same == close == I.size else 1


if __name__ == "__main__":
    sys.exit(main())
