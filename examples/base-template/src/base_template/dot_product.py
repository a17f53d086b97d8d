"""Host program: a 2048-element bf16 dot product on one slice."""

from __future__ import annotations

import sys

import numpy as np

from base_template.kernel.dot_product_kernel import A, dot_product_kernel
from base_template.oracle import round_bf16, sequential_dot, within
from furiosa_opt import Context, HostTensor, bf16, launch, m


def run(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with Context.acquire() as ctx:
        lhs, rhs = HostTensor.rand(bf16, m[A], rng), HostTensor.rand(bf16, m[A], rng)
        out = launch(dot_product_kernel, ctx, lhs.to_hbm(ctx.pdma), rhs.to_hbm(ctx.pdma))
        return lhs.to_numpy(), rhs.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def main() -> int:
    lhs, rhs, out = run(np.random.default_rng(42))
    exact = round_bf16(sequential_dot(lhs, rhs))
    wide = float(np.dot(lhs.astype(np.float64), rhs.astype(np.float64)))
    ok = bool(out.view(np.uint16) == exact.view(np.uint16)) and bool(within(out, np.float64(wide), 0.02, 0.5))
    print(
        f"dot_product: {float(out):+.4f} (bf16); sequential f32 oracle {float(exact):+.4f}; f64 {wide:+.4f}; "
        f"{'ok' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
