"""Host program: softmax over the 256 rows of a 256 × 256 f32 tensor of logits, one row per slice."""

from __future__ import annotations

import sys

import numpy as np

from furiosa_opt import Context, HostTensor, f32, launch, m
from vector_kernels import oracle
from vector_kernels.inputs import logits
from vector_kernels.kernel.softmax_kernel import D, N, softmax_kernel

TINY = np.finfo(np.float32).tiny  # below it f32 keeps absolute, not relative, precision


def reference64(x: np.ndarray) -> np.ndarray:
    """Textbook softmax in float64."""
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def compute(x: np.ndarray) -> np.ndarray:
    """softmax_kernel on an f32 [N, D] array."""
    with Context.acquire() as ctx:
        out = launch(softmax_kernel, ctx, HostTensor.from_numpy(x, f32, m[N, D]).to_hbm(ctx.pdma))
        return out.to_host(ctx.pdma).to_numpy()


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(logits, softmax computed by the kernel)."""
    x = logits(rng, N.size, D.size)
    return x, compute(x)


def main() -> int:
    x, out = run(np.random.default_rng(42))
    size = out.size
    same = int(np.sum(out.view(np.uint32) == oracle.softmax(x).view(np.uint32)))
    close = int(np.sum(np.isclose(out, reference64(x), rtol=1e-5, atol=TINY)))
    print(
        f"softmax: y[{N.size}, {D.size}] f32; {same}/{size} equal the sequential-f32 oracle bit for bit, "
        f"{close}/{size} within rtol 1e-5 of float64"
    )
    return 0 if same == close == size else 1


if __name__ == "__main__":
    sys.exit(main())
