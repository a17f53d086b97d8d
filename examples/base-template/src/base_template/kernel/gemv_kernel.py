"""y = M·v in f32, rounded to bf16: rows on slices, the vector in every slice's register file."""

from furiosa_opt import *

I, J = axes(I=256, J=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["I"]  # one output row per slice
Time = m["J / 32"]  # reduction steps
Packet = m["J % 32"]  # reduction within a step
Lane = m["1"]


@device(chip=1)
def gemv_kernel(
    ctx: Context, matrix: HbmTensor[bf16, Chip, m["I, J"]], vector: HbmTensor[bf16, Chip, m["J"]]
) -> HbmTensor[bf16, Chip, m["I"]]:
    matrix = matrix.to_dm(ctx.tdma, Cluster, Slice, m["J"])
    vector = vector.to_dm(ctx.tdma, Cluster, Slice, m["J"])  # broadcast to every slice
    vector_trf = (
        ctx.sub.begin(vector.view()).fetch(m["1"], m["J"]).collect(m["J / 16"], m["J % 16"]).to_trf(Lane, m["J"])
    )
    result = (
        ctx.main.begin(matrix.view())
        .fetch(m["J / 16"], m["J % 16"])
        .collect(m["J / 16"], m["J % 16"])
        .contract_outer(vector_trf, Time, Packet)
        .contract_packet(m["1"])
        .contract_time(m["1"])
        .contract_lane(LaneMode.Interleaved, m["1"], m["1 # 8"])
        .cast(bf16, m["1 # 16"])
        .commit_trim(m["1 # 4"])
        .commit(m["1 # 4"])
    )
    return result.to_hbm(ctx.tdma, m["I"])
