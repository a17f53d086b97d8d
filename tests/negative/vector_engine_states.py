"""The Vector Engine's per-pass state, refused where it is broken: the stash is written once and read once
(`Stash` before any `vector_stash`, a second `vector_stash`, a second `Stash` read), each ALU serves one op
per pass (`AddF` and `FmaF` both need FpFma), and after an IntraFirst inter-slice reduce (the intra-slice
chain came first) no intra-slice op may follow: neither an intra-slice reduce nor the tag unit, which may
restart the chain only after an InterFirst reduce (upstream's `ve_vru_then_vau_i32`). One kernel per case,
each refused on its marked line; the legal twins are the stash and ternary kernels of
`tests/upstream/test_vector_engine_normal.py`."""

from furiosa_opt import *

A, R = axes(A=512, R=4)

Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def stash_read_before_write(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.MulInt, 2)
        .vector_clip(ClipBinaryOpI32.Max, Stash)  # refused[visa]: vector-stash-empty
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def stash_written_twice(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_stash()
        .vector_fxp(FxpBinaryOp.MulInt, 2)
        .vector_stash()  # refused[visa]: vector-stash-twice
        .vector_clip(ClipBinaryOpI32.Max, Stash)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def stash_read_twice(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_stash()
        .vector_fxp(FxpBinaryOp.AddFxp, Stash)
        .vector_clip(ClipBinaryOpI32.Max, Stash)  # refused[visa]: vector-stash-read-twice
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def fp_fma_alu_twice(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_binary(FpBinaryOp.AddF, 1.0)
        .vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 3.0))  # refused[visa]: vector-alu
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def intra_reduce_after_intra_first_inter_reduce(
    ctx: Context, input: HbmTensor[i32, Chip, m["R, A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 8, R"], m["A % 8"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 8"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_inter_slice_reduce(InterSliceReduceOpI32.AddSat, m["A / 8, 1 # 4"], m["1"])
        .vector_intra_slice_reduce(  # refused[visa]: vector-stage-order
            IntraSliceReduceOpI32.AddSat, A, m["1"], m["A % 8"]
        )
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def tag_after_intra_first_inter_reduce(
    ctx: Context, input: HbmTensor[i32, Chip, m["R, A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 8, R"], m["A % 8"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 8"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_inter_slice_reduce(InterSliceReduceOpI32.AddSat, m["A / 8, 1 # 4"], m["1"])
        .vector_intra_slice_tag(TagMode.Zero)  # refused[visa]: vector-stage-order
        .vector_fxp(FxpBinaryOp.AddFxp, 100)
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])
