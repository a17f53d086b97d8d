"""C = A·Bᵀ in f32, rounded to bf16: a 16 × 16 grid of slices, each computing a 32 × 32 tile."""

from furiosa_opt import *

I, J, K = axes(I=512, J=512, K=64)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["I / 32, J / 32"]  # output tiles across slices
Lane = m["J % 8"]


@device(chip=1)
def gemm_kernel(
    ctx: Context, a: HbmTensor[bf16, Chip, m["I, K"]], b: HbmTensor[bf16, Chip, m["J, K"]]
) -> HbmTensor[bf16, Chip, m["I, J"]]:
    a = a.to_dm(ctx.tdma, Cluster, Slice, m["I % 32, K"])  # each slice gets its rows of A
    b = b.to_dm(ctx.tdma, Cluster, Slice, m["J % 32, K"])  # and its rows of B
    b_trf = (  # B into the tensor register file, lanes over J % 8
        ctx.sub.begin(b.view())
        .fetch(m["J % 8, J / 8 % 4"], m["K"])
        .collect(m["J % 8, J / 8 % 4, K / 16"], m["K % 16"])
        .to_trf(Lane, m["J / 8 % 4, K"])
    )
    out = (  # contract over K, keep I and J
        ctx.main.begin(a.view())
        .fetch(m["I % 32, J / 8 % 4"], m["K"])  # J / 8 % 4 re-reads A (A has no J)
        .collect(m["I % 32, J / 8 % 4, K / 16"], m["K % 16"])
        .contract_outer(b_trf, m["I % 32, J / 8 % 4, K / 32"], m["K % 32"])
        .contract_packet(m["1"])
        .contract_time(m["I % 32, J / 8 % 4"])
        .contract_lane(LaneMode.Interleaved, m["I % 32, J / 8 % 4"], m["J % 8"])
        .cast(bf16, m["J % 8 # 16"])
        .commit_trim(m["J % 8"])
        .commit(m["I % 32, J % 32"])
    )
    return out.to_hbm(ctx.tdma, m["I, J"])
