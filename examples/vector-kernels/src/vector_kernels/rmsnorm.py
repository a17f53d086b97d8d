"""Host program: RMSNorm of the 256 rows of a 256 × 256 f32 tensor with a per-column weight."""

from __future__ import annotations

import sys

import numpy as np

from furiosa_opt import Context, HostTensor, f32, launch, m
from vector_kernels import oracle
from vector_kernels.inputs import activations, gains
from vector_kernels.kernel.rmsnorm_kernel import EPS, D, N, rmsnorm_kernel


def reference64(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Textbook RMSNorm in float64."""
    x64 = x.astype(np.float64)
    return x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + EPS) * w.astype(np.float64)


def compute(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """rmsnorm_kernel on an f32 [N, D] array and an f32 [D] weight."""
    with Context.acquire() as ctx:
        x_hbm = HostTensor.from_numpy(x, f32, m[N, D]).to_hbm(ctx.pdma)
        w_hbm = HostTensor.from_numpy(w, f32, m[D]).to_hbm(ctx.pdma)
        return launch(rmsnorm_kernel, ctx, x_hbm, w_hbm).to_host(ctx.pdma).to_numpy()


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(activations, weights, RMSNorm computed by the kernel)."""
    x, w = activations(rng, N.size, D.size), gains(rng, D.size)
    return x, w, compute(x, w)


def main() -> int:
    x, w, out = run(np.random.default_rng(42))
    size = out.size
    same = int(np.sum(out.view(np.uint32) == oracle.rmsnorm(x, w, EPS).view(np.uint32)))
    close = int(np.sum(np.isclose(out, reference64(x, w), rtol=1e-5, atol=0)))
    print(
        f"rmsnorm: y[{N.size}, {D.size}] f32; {same}/{size} equal the sequential-f32 oracle bit for bit, "
        f"{close}/{size} within rtol 1e-5 of float64"
    )
    return 0 if same == close == size else 1


if __name__ == "__main__":
    sys.exit(main())
