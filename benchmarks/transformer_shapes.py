"""Transformer-shaped kernels on the CPU backend against numpy doing the same math in the same order.

* embedding row copy: one row of a 151936 × 1024 bf16 table, chosen on the host with `tile`, into the same
  row of an out-parameter table (numpy: `out[row] = table[row]`);
* residual add: x + r on 4 tokens × 1024 bf16, added in f32 on the Vector Engine of 64 slice copies and
  rounded to bf16 (numpy: the same f32 add and numpy's own casts);
* RoPE: q·cos + rotate_half(q)·sin on the 8 × 2 heads × 128 of one position of a 512-position query tensor
  (numpy: the same f32 products and add, with numpy's own casts).

The numpy baselines are what a user would write for speed, with numpy's casts (the hardware's flush of
subnormals is not needed for random operands, and the bit-for-bit check would catch it if it were).

Each kernel's output must equal numpy's bit for bit before anything is timed. A kernel's time includes
choosing its tiles on the host and materialising its result in HBM; each side is the best of several
repeats after a warm-up launch. The figure of merit is `launch / numpy`; the target is ≤ 5×.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import transformer_kernels as tk
from common import best_of, duration, machine, row, same_bits

from base_template.oracle import round_bf16
from furiosa_opt import Context, DeviceFunction, HbmTensor, HostTensor, bf16, launch, m

TARGET = 5.0


@dataclass(frozen=True)
class Case:
    """One kernel and its inputs. `bind(ctx, launch)` uploads the inputs under the active backend and
    returns a function that launches the kernel once and returns the HBM tensor holding its output;
    `numpy()` computes the expected output."""

    name: str
    kernel: DeviceFunction
    bind: Callable[[Context, Callable], Callable[[], HbmTensor]]
    numpy: Callable[[], np.ndarray]


def uniform_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return round_bf16(rng.uniform(-1, 1, shape).astype(np.float32))


def embedding_case(rng: np.random.Generator) -> Case:
    # Random bit patterns with the exponent's top bit clear: every finite bf16 below 2 in magnitude, made in
    # place (a float draw of 155 M cells would need 1.2 GB of temporaries for a table that is only copied).
    bits = rng.integers(0, 1 << 16, (tk.V.size, tk.H.size), dtype=np.uint16)
    bits &= 0xBFFF
    table = bits.view(ml_dtypes.bfloat16)
    expected = np.zeros_like(table)
    token = int(rng.integers(tk.V.size))  # the row to copy

    def bind(ctx: Context, run: Callable) -> Callable[[], HbmTensor]:
        table_hbm = HostTensor.from_numpy(table, bf16, tk.Table).to_hbm(ctx.pdma)
        out = HbmTensor.new(bf16, tk.Chip, tk.Table)

        def once() -> HbmTensor:
            src = table_hbm.view().tile(token, m[tk.V], 1, tk.Row)
            run(tk.embedding_row, ctx, src, out.view_mut().tile(token, m[tk.V], 1, tk.RowMut))
            return out

        return once

    def reference() -> np.ndarray:
        expected[token] = table[token]
        return expected

    return Case(f"embedding row {tk.V.size}×{tk.H.size}", tk.embedding_row, bind, reference)


def residual_case(rng: np.random.Generator) -> Case:
    x, r = uniform_bf16(rng, (tk.T.size, tk.H.size)), uniform_bf16(rng, (tk.T.size, tk.H.size))

    def bind(ctx: Context, run: Callable) -> Callable[[], HbmTensor]:
        x_hbm, r_hbm = (HostTensor.from_numpy(a, bf16, tk.Tokens).to_hbm(ctx.pdma) for a in (x, r))

        def once() -> HbmTensor:
            out = run(tk.residual_add, ctx, x_hbm, r_hbm)
            out.values()  # the CPU backend moves lazily: make it land
            return out

        return once

    return Case(
        f"residual add {tk.T.size}×{tk.H.size}",
        tk.residual_add,
        bind,
        lambda: (x.astype(np.float32) + r.astype(np.float32)).astype(ml_dtypes.bfloat16),
    )


def rope_case(rng: np.random.Generator) -> Case:
    q = uniform_bf16(rng, (tk.P.size, tk.N.size, tk.G.size, tk.D.size))
    position = int(rng.integers(tk.P.size))
    half = tk.D.size // 2
    angle = position / 10000.0 ** (np.arange(half) / half)
    cos = round_bf16(np.tile(np.cos(angle), 2).astype(np.float32))
    # rotate_half(q) is [q2, q1] with no sign (upstream's two tiled commits): the sign sits in sin.
    sin = round_bf16(np.concatenate([-np.sin(angle), np.sin(angle)]).astype(np.float32))

    def bind(ctx: Context, run: Callable) -> Callable[[], HbmTensor]:
        q_hbm = HostTensor.from_numpy(q, bf16, tk.Queries).to_hbm(ctx.pdma)
        cos_hbm, sin_hbm = (HostTensor.from_numpy(t, bf16, m[tk.D]).to_hbm(ctx.pdma) for t in (cos, sin))

        def once() -> HbmTensor:
            heads = q_hbm.view().tile(position, m[tk.P], 1, tk.Position)
            out = run(tk.rope, ctx, heads, cos_hbm, sin_hbm)
            out.values()
            return out

        return once

    def reference() -> np.ndarray:
        x = q[position].astype(np.float32)
        rotated = np.concatenate([x[..., half:], x[..., :half]], axis=-1)
        return (x * cos.astype(np.float32) + rotated * sin.astype(np.float32)).astype(ml_dtypes.bfloat16)

    return Case(f"rope {tk.N.size}×{tk.G.size}×{tk.D.size} of {tk.P.size}", tk.rope, bind, reference)


def cases(rng: np.random.Generator) -> list[Case]:
    return [embedding_case(rng), residual_case(rng), rope_case(rng)]


def output(tensor: HbmTensor, ctx: Context) -> np.ndarray:
    return tensor.to_host(ctx.pdma).to_numpy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(machine())
    failed = False
    with Context.acquire() as ctx:
        for case in cases(np.random.default_rng(42)):
            once = case.bind(ctx, launch)
            expected = case.numpy()
            equal = same_bits(output(once(), ctx), expected)
            print(f"{case.name:44} check: the launch {'equals' if equal else 'DIFFERS FROM'} numpy bit for bit")
            if not equal:
                failed = True
                continue
            kernel = best_of(args.repeats, once)
            reference = best_of(args.repeats, case.numpy)
            ratio = kernel / reference
            figures = f"launch {duration(kernel)}, numpy {duration(reference)}"
            row(case.name, figures, f"{ratio:.3g}×", f"≤ {TARGET:g}×", ratio <= TARGET)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
