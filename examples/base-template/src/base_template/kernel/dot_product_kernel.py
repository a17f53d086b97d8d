"""Σ lhs·rhs in f32, rounded to bf16: one slice, the right operand in the tensor register file."""

from furiosa_opt import *

A = axes(A=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["1 # 256"]  # one active slice; m["A / 8 # 256"] would spread over all 256
Time = m["1"]  # no temporal iteration
Lane = m["1"]  # no lane parallelism


@device(chip=1)
def dot_product_kernel(
    ctx: Context, lhs: HbmTensor[bf16, Chip, m["A"]], rhs: HbmTensor[bf16, Chip, m["A"]]
) -> HbmTensor[bf16, Chip, m["1"]]:
    lhs = lhs.to_dm(ctx.tdma, Cluster, Slice, m["A"])
    rhs = rhs.to_dm(ctx.tdma, Cluster, Slice, m["A"])
    rhs = ctx.sub.begin(rhs.view()).fetch(Time, m["A"]).collect(m["Time, A / 16"], m["A % 16"]).to_trf(Lane, m["A"])
    result = (
        ctx.main.begin(lhs.view())
        .fetch(Time, m["A"])
        .collect(m["A / 16"], m["A % 16"])
        .contract_outer(rhs, m["A / 32"], m["A % 32"])
        .contract_packet(m["1"])
        .contract_time(m["1"])
        .contract_lane(LaneMode.Interleaved, m["1"], m["1 # 8"])
        .cast(bf16, m["1 # 16"])  # the f32 accumulator back to bf16
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    return result.to_hbm(ctx.tdma, m["1"])
