"""The lm_head as upstream runs it: a 151936 × 1024 bf16 weight in HBM, cut on the host into 19 tiles of 8192
rows, each launched through `lm_head_tile` (logits = weight · x, folded in f32 over H, rounded to bf16).

* peak RSS of the whole program (the weight from numpy to HBM, 19 launches, the logits back and checked)
  in a child process: target ≤ 3 GB;
* `HostTensor.from_numpy` of the weight against `np.asarray` of it, timed in this process: target ≤ 2×.
  numpy has no bf16 of its own, so a weight usually arrives in f32 (torch's `.float().numpy()`) and both
  sides convert it; a weight already in bf16 is timed too, against `np.asarray(copy=True)`, since
  `np.asarray` of an array in its own dtype copies nothing. `from_numpy` also pads the weight to 19 tiles.

The child's logits must equal numpy's (`numpy_gemm` per tile) bit for bit, or it fails.
"""

from __future__ import annotations

import argparse
import sys
import time

import ml_dtypes
import numpy as np
import transformer_kernels as tk
from common import best_of, duration, machine, numpy_gemm, peak_rss, row, same_bits

from furiosa_opt import Context, HbmTensor, HostTensor, bf16, launch, m

RSS_TARGET = 3e9  # bytes
FROM_NUMPY_TARGET = 2.0
ROWS = 8192  # rows per tile


def weight_f32(rng: np.random.Generator, rows: int = tk.W.size) -> np.ndarray:
    return rng.standard_normal((rows, tk.H.size), dtype=np.float32) * np.float32(0.02)


def weight_bf16(rng: np.random.Generator) -> np.ndarray:
    """The weight drawn a tile at a time: an f32 draw of the whole (622 MB) would inflate the child's peak."""
    weight = np.empty((tk.W.size, tk.H.size), dtype=ml_dtypes.bfloat16)
    for start in range(0, tk.W.size, ROWS):
        rows = min(ROWS, tk.W.size - start)
        weight[start : start + rows] = weight_f32(rng, rows)
    return weight


def tile_loop() -> int:
    """The child: upload, launch every tile, read the logits back and check them against numpy."""
    rng = np.random.default_rng(42)
    weight = weight_bf16(rng)
    x = np.asarray(rng.uniform(-1, 1, tk.H.size).astype(np.float32), dtype=ml_dtypes.bfloat16)
    tiles = tk.Wp.size // ROWS
    with Context.acquire() as ctx:
        start = time.perf_counter()
        weight_hbm = HostTensor.from_numpy(weight, bf16, tk.Weight).to_hbm(ctx.pdma).reshape(tk.Chip, m[tk.Wp, tk.H])
        x_hbm = HostTensor.from_numpy(x, bf16, m[tk.H]).to_hbm(ctx.pdma)
        logits_hbm = HbmTensor.new(bf16, tk.Chip, tk.Logits)
        uploaded = time.perf_counter()
        for i in range(tiles):
            tile = weight_hbm.view().tile(i, tk.TileIndex, 1, tk.WeightTile)
            launch(tk.lm_head_tile, ctx, x_hbm, tile, logits_hbm.view_mut().tile(i, tk.TileIndex, 1, tk.LogitsTile))
        launched = time.perf_counter()
        logits = logits_hbm.to_host(ctx.pdma).to_numpy()
    expected = np.zeros(tk.Wp.size, dtype=ml_dtypes.bfloat16)  # the padding rows hold zero weights
    for i in range(tiles):
        rows = slice(i * ROWS, min((i + 1) * ROWS, tk.W.size))
        expected[rows] = numpy_gemm(x[None, :], weight[rows])[0]
    equal = same_bits(logits, expected)
    print(f"check: {tiles} tiles of logits {'equal' if equal else 'DIFFER FROM'} numpy bit for bit")
    print(f"upload {uploaded - start:.2f} s, {tiles} launches {launched - uploaded:.2f} s")
    return 0 if equal else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tile-loop", action="store_true", help=argparse.SUPPRESS)  # the measured child
    args = parser.parse_args()
    if args.tile_loop:
        return tile_loop()
    print(machine())
    done, rss = peak_rss([sys.executable, __file__, "--tile-loop"])
    print(done.stdout, end="")
    if done.returncode:
        print(f"the tile loop failed:\n{done.stderr}", file=sys.stderr)
        return 1
    row("peak RSS of the tile loop", "", f"{rss / 1e9:.2f} GB", f"≤ {RSS_TARGET / 1e9:g} GB", rss <= RSS_TARGET)

    w32 = weight_f32(np.random.default_rng(42))
    w16 = np.asarray(w32, dtype=ml_dtypes.bfloat16)
    for source, baseline, what in (
        (w32, lambda: np.asarray(w32, dtype=ml_dtypes.bfloat16), "f32 weight, np.asarray(dtype=bf16)"),
        (w16, lambda: np.asarray(w16, copy=True), "bf16 weight, np.asarray(copy=True)"),
    ):
        ours = best_of(args.repeats, lambda source=source: HostTensor.from_numpy(source, bf16, tk.Weight))
        numpy = best_of(args.repeats, baseline)
        ratio = ours / numpy
        figures = f"from_numpy {duration(ours)}, numpy {duration(numpy)}"
        row(f"from_numpy, {what}", figures, f"{ratio:.3g}×", f"≤ {FROM_NUMPY_TARGET:g}×", ratio <= FROM_NUMPY_TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
