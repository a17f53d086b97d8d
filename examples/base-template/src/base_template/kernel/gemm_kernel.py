"""C = A·Bᵀ in f32, rounded to bf16: a grid of slices, each computing a `tile_i` × `tile_j` tile.

The tile sizes and the cluster split are a search space (`furiosa-opt tune gemm_kernel`, docs/tuning.md);
the first value of each choice is the default layout, 32 × 32 tiles on a 16 × 16 grid of slices of one
cluster. `gemm_kernel.tuned.json` beside this file, when present, sets the choices the tuner found best.
"""

from furiosa_opt import *
from furiosa_opt.tune import space

I, J, K = axes(I=512, J=512, K=64)

choices = space(tile_i=[32, 16, 64], tile_j=[32, 64, 128], cluster=["1 # 2", "I / 256"])
TI, TJ = choices.tile_i, choices.tile_j  # rows of A and of B each slice holds
JT = TJ // 8  # the tile's J / 8 steps: lanes take J % 8
SPLIT = "" if choices.cluster == "1 # 2" else f" % {256 // TI}"  # split over clusters, a cluster's slices take I % 256

Chip = m["1"]
Cluster = m[choices.cluster]
Slice = m[f"I / {TI}{SPLIT}, J / {TJ}"]  # output tiles across slices
Lane = m["J % 8"]


@device(chip=1)
def gemm_kernel(
    ctx: Context, a: HbmTensor[bf16, Chip, m["I, K"]], b: HbmTensor[bf16, Chip, m["J, K"]]
) -> HbmTensor[bf16, Chip, m["I, J"]]:
    a = a.to_dm(ctx.tdma, Cluster, Slice, m[f"I % {TI}, K"])  # each slice gets its rows of A
    b = b.to_dm(ctx.tdma, Cluster, Slice, m[f"J % {TJ}, K"])  # and its rows of B
    b_trf = (  # B into the tensor register file, lanes over J % 8
        ctx.sub.begin(b.view())
        .fetch(m[f"J % 8, J / 8 % {JT}"], m["K"])
        .collect(m[f"J % 8, J / 8 % {JT}, K / 16"], m["K % 16"])
        .to_trf(Lane, m[f"J / 8 % {JT}, K"])
    )
    out = (  # contract over K, keep I and J
        ctx.main.begin(a.view())
        .fetch(m[f"I % {TI}, J / 8 % {JT}"], m["K"])  # J / 8 re-reads A (A has no J)
        .collect(m[f"I % {TI}, J / 8 % {JT}, K / 16"], m["K % 16"])
        .contract_outer(b_trf, m[f"I % {TI}, J / 8 % {JT}, K / 32"], m["K % 32"])
        .contract_packet(m["1"])
        .contract_time(m[f"I % {TI}, J / 8 % {JT}"])
        .contract_lane(LaneMode.Interleaved, m[f"I % {TI}, J / 8 % {JT}"], m["J % 8"])
        .cast(bf16, m["J % 8 # 16"])
        .commit_trim(m["J % 8"])
        .commit(m[f"I % {TI}, J % {TJ}"])
    )
    return out.to_hbm(ctx.tdma, m["I, J"])
