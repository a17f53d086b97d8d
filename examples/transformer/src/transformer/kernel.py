"""Qwen3-0.6B decode, one token per launch: the six `@device` entry points of upstream's transformer example.

Port of upstream `furiosa-opt-examples/src/transformer/` — `axes.rs`, `mod.rs` (the entry points) and
`kernel/{rmsnorm,projection,rope,attention,residual,mlp,lm_head}.rs` (their helpers) — with the same
signatures, mappings and engines, step for step. Each helper's docstring names the Rust function it ports.

Differences from upstream, all of spelling:

* Rust infers `to_dm` targets, `commit` elements and `to_trf`/`to_vrf` layouts from declared types; here they
  are passed explicitly (the same mappings upstream declares).
* Upstream's generic helpers (`rmsnorm::forward::<Cluster, Slice>`, `residual::forward`, `attention::norm`)
  take their cluster and slice mappings from the input tensor.
* `unsafe { x.reshape() }` is `x.reshape(Chip, Cluster, Slice, Element)` with the target type's mappings.

Layouts (upstream's): the hidden state `[H]` is broadcast over 64 slice groups (`SliceP4 = [Dummy64, 1 # 4]`);
a KV head owns a 32-slice group (`SliceN32 = [N, 1 # 32]`); projections give each slice a few output rows
(weights into the TRF on the sub context, the input streamed by the main context through the Contraction
Engine, f32 accumulation, bf16 cast) and a Broadcast1 switch gathers the rows back.
"""

from furiosa_opt import *

# axes.rs
H, C, P, E, Q, W, Wp = axes(H=1024, C=64, P=1024, E=32768, Q=2048, W=151936, Wp=155648)
N, G, D, L, T, Dummy4, Dummy64 = axes(N=8, G=2, D=128, L=3072, T=512, Dummy4=4, Dummy64=64)

# mod.rs
Chip = m["1"]
LAYERS = 28  # decoder layers of Qwen3-0.6B
Cluster = m["1 # 2"]
Slice = m["1 # 256"]
SliceP4 = m["Dummy64, 1 # 4"]  # the hidden state, broadcast to 64 groups of 4 slices
SliceN32 = m["N, 1 # 32"]  # one KV head per 32-slice group

EPS = 6.25e-8  # rmsnorm epsilon, and the softmax denominator's
SQRT_HEAD_DIM = 11.313708  # sqrt(D): attention logits are divided by it
ROW_BYTES = N.size * D.size * 2  # `dma_scatter` takes byte offsets: one `[N, D]` bf16 row of the KV cache

# lm_head.rs
LmCluster = m["Wp / 4096 % 2"]
LmSlice = m["Wp / 16 % 256"]

# The host's layout of the lm_head weight: W rows padded to Wp, cut into 19 tiles of 8192 rows.
LmHeadWeight = m["W # 155648 / 8192, W # 155648 % 8192, H"]


# ---------------------------------------------------------------------------------------------------------
# rmsnorm.rs


def rmsnorm(ctx: Context, input: DmTensor, rms_weight: HbmTensor) -> DmTensor:
    """`rmsnorm::forward`: `x / sqrt(mean(x²) + eps) · w` over `[H]`, in f32, cast to bf16; any cluster and slice
    mappings (taken from `input`)."""
    _, cluster, slice_, _ = input.params
    ms = (
        ctx.main.begin(input.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["H / 4"], m["H % 4"])
        .vector_stash()
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, H, m["1"], m["1 # 4"])
        .vector_fp_div(1024.0)
        .vector_widen_pad(m["1 # 8"])
        .vector_clip(ClipBinaryOpF32.Add, EPS)
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    rms = (
        ctx.main.begin(ms.view())
        .fetch(m["1"], m["1 # 8"])
        .collect(m["1"], m["1 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["1 # 4"])
        .vector_fp_unary(FpUnaryOp.Sqrt)
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    weight = rms_weight.to_dm(ctx.tdma, cluster, slice_, m["H"])
    weight_vrf = (
        ctx.sub.begin(weight.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .to_vrf(m["H"])
    )
    rms_vrf = ctx.sub.begin(rms.view()).fetch(m["1"], m["1 # 8"]).collect(m["1"], m["1 # 8"]).to_vrf(m["1 # 8"])
    return (
        ctx.main.begin(input.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["H / 4"], m["H % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), weight_vrf)
        .vector_fp_div(rms_vrf)
        .vector_widen_concat(m["H / 8"], m["H % 8"])
        .vector_final()
        .cast(bf16, m["H % 8 # 16"])
        .commit_trim(m["H % 8"])
        .commit(m["H"])
    )


def rmsnorm_q(ctx: Context, input: DmTensor, rms_weight: HbmTensor) -> DmTensor:
    """`rmsnorm::forward_q`: the q-norm of every query head `[G, D]` of a KV head's slice group."""
    ms = (
        ctx.main.begin(input.view())
        .fetch(m["G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["G, D / 4"], m["D % 4"])
        .vector_stash()
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, D, m["G"], m["1 # 4"])
        .vector_fp_div(128.0)
        .vector_widen_pad(m["1 # 8"])
        .vector_clip(ClipBinaryOpF32.Add, EPS)
        .vector_final()
        .transpose(m["1"], m["G # 8"])
        .commit_trim(m["G"])
        .commit(m["G"])
    )
    rms = (
        ctx.main.begin(ms.view())
        .fetch(m["1"], m["G # 8"])
        .collect(m["1"], m["G # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["G # 4"])
        .vector_fp_unary(FpUnaryOp.Sqrt)
        .vector_widen_pad(m["G # 8"])
        .vector_final()
        .commit_trim(m["G"])
        .commit(m["G"])
    )
    weight = rms_weight.to_dm(ctx.tdma, Cluster, SliceN32, m["D"])
    weight_vrf = (
        ctx.sub.begin(weight.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .to_vrf(m["D"])
    )
    rms_vrf = ctx.sub.begin(rms.view()).fetch(m["1"], m["G # 8"]).collect(m["1"], m["G # 8"]).to_vrf(m["G # 8"])
    return (
        ctx.main.begin(input.view())
        .fetch(m["G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["G, D / 4"], m["D % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), weight_vrf)
        .vector_fp_div(rms_vrf)
        .vector_widen_concat(m["G, D / 8"], m["D % 8"])
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["G, D"])
    )


def rmsnorm_k(ctx: Context, input: DmTensor, rms_weight: HbmTensor) -> DmTensor:
    """`rmsnorm::forward_k`: the k-norm of a KV head's `[D]`."""
    ms = (
        ctx.main.begin(input.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["D / 4"], m["D % 4"])
        .vector_stash()
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, D, m["1"], m["1 # 4"])
        .vector_fp_div(128.0)
        .vector_widen_pad(m["1 # 8"])
        .vector_clip(ClipBinaryOpF32.Add, EPS)
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    rms = (
        ctx.main.begin(ms.view())
        .fetch(m["1"], m["1 # 8"])
        .collect(m["1"], m["1 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["1 # 4"])
        .vector_fp_unary(FpUnaryOp.Sqrt)
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    weight = rms_weight.to_dm(ctx.tdma, Cluster, SliceN32, m["D"])
    weight_vrf = (
        ctx.sub.begin(weight.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .to_vrf(m["D"])
    )
    rms_vrf = ctx.sub.begin(rms.view()).fetch(m["1"], m["1 # 8"]).collect(m["1"], m["1 # 8"]).to_vrf(m["1 # 8"])
    return (
        ctx.main.begin(input.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["D / 4"], m["D % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), weight_vrf)
        .vector_fp_div(rms_vrf)
        .vector_widen_concat(m["D / 8"], m["D % 8"])
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["D"])
    )


# ---------------------------------------------------------------------------------------------------------
# projection.rs

SliceQ = m["Q / 32, 1 # 4"]
SliceP = m["P / 32, 1 # 8"]
SliceO = m["H / 16, 1 # 4"]


def proj_q(ctx: Context, input: DmTensorView, weight: HbmTensor) -> DmTensor:
    """`projection::proj_q`: `q = W_q · x`, 32 rows of Q per 4-slice group, gathered to `[G, D]` per KV head."""
    input = input.reshape(Chip, Cluster, SliceQ, m["H"])
    weight_dm = weight.to_dm(ctx.tdma, Cluster, SliceQ, m["Q % 32, H"])
    weight_trf = (
        ctx.sub.begin(weight_dm.view())
        .fetch(m["Q % 32, H / 16"], m["H % 16"])
        .collect(m["Q % 32, H / 16"], m["H % 16"])
        .to_trf(m["Q / 4 % 8"], m["Q % 4, H"])
    )
    result = (
        ctx.main.begin(input)
        .fetch(m["H / 16"], m["H % 16"])
        .collect(m["H / 16"], m["H % 16"])
        .contract_outer(weight_trf, m["H / 32, Q % 4"], m["H % 32"])
        .contract_packet(m["1"])
        .contract_time(m["Q % 4"])
        .contract_lane(LaneMode.Interleaved, m["Q % 4"], m["Q / 4 % 8"])
        .cast(bf16, m["Q / 4 % 8 # 16"])
        .transpose(m["Q / 4 % 8"], m["Q % 4 # 16"])
        .commit_trim(m["Q % 4"])
        .commit(m["Q % 32"])
    )
    result = (
        ctx.main.begin(result.view())
        .fetch(m["1"], m["Q % 32"])
        .switch(SwitchConfig.Broadcast1(slice1=8, slice0=4), m["Q / 256, 1 # 32"], m["Q / 32 % 8"])
        .collect(m["Q / 16 % 16"], m["Q % 16"])
        .commit_trim(m["Q % 16"])
        .commit(m["Q % 256"])
    )
    return result.reshape(Chip, Cluster, SliceN32, m["G, D"])


def proj_p(ctx: Context, input: DmTensorView, weight: HbmTensor) -> DmTensor:
    """`projection::proj_p`: the shared `[P]` projection of the K and V heads, gathered to `[D]` per KV head."""
    input = input.reshape(Chip, Cluster, SliceP, m["H"])
    weight_dm = weight.to_dm(ctx.tdma, Cluster, SliceP, m["P % 32, H"])
    weight_trf = (
        ctx.sub.begin(weight_dm.view())
        .fetch(m["P % 8, P / 8 % 4, H / 16"], m["H % 16"])
        .collect(m["P % 8, P / 8 % 4, H / 16"], m["H % 16"])
        .to_trf(m["P % 8"], m["P / 8 % 4, H"])
    )
    result = (
        ctx.main.begin(input)
        .fetch(m["H / 16"], m["H % 16"])
        .collect(m["H / 16"], m["H % 16"])
        .contract_outer(weight_trf, m["H / 32, P / 8 % 4"], m["H % 32"])
        .contract_packet(m["1"])
        .contract_time(m["P / 8 % 4"])
        .contract_lane(LaneMode.Interleaved, m["P / 8 % 4"], m["P % 8"])
        .cast(bf16, m["P % 8 # 16"])
        .commit_trim(m["P % 8"])
        .commit(m["P % 32"])
    )
    result = (
        ctx.main.begin(result.view())
        .fetch(m["1"], m["P % 32"])
        .switch(SwitchConfig.Broadcast1(slice1=4, slice0=8), m["P / 128, 1 # 32"], m["P / 32 % 4"])
        .collect(m["P / 16 % 8"], m["P % 16"])
        .commit_trim(m["P % 16"])
        .commit(m["P % 128"])
    )
    return result.reshape(Chip, Cluster, SliceN32, m["D"])


def proj_v(ctx: Context, input: DmTensorView, kv_offset: HbmTensor, weight: HbmTensor, v_cache: HbmTensor) -> None:
    """`projection::proj_v`: `v = W_v · x`, scattered into row `kv_offset / ROW_BYTES` of the V cache."""
    proj_p(ctx, input, weight).dma_scatter(kv_offset, v_cache, m["1"])


def proj_o(ctx: Context, input: DmTensor, weight: HbmTensor) -> DmTensor:
    """`projection::proj_o`: `W_o · attn`, 16 rows of H per 4-slice group, broadcast back to `SliceP4`."""
    input = input.reshape(Chip, Cluster, SliceO, m["Q"])
    weight_dm = weight.to_dm(ctx.tdma, Cluster, SliceO, m["H % 16, Q"])
    weight_trf = (
        ctx.sub.begin(weight_dm.view())
        .fetch(m["H % 16, Q / 16"], m["Q % 16"])
        .collect(m["H % 16, Q / 16"], m["Q % 16"])
        .to_trf(m["H / 4 % 4"], m["H % 4, Q"])
    )
    result = (
        ctx.main.begin(input.view())
        .fetch(m["Q / 16"], m["Q % 16"])
        .collect(m["Q / 16"], m["Q % 16"])
        .contract_outer(weight_trf, m["Q / 32, H % 4"], m["Q % 32"])
        .contract_packet(m["1"])
        .contract_time(m["H % 4"])
        .contract_lane(LaneMode.Interleaved, m["H % 4"], m["H / 4 % 4 # 8"])
        .cast(bf16, m["H / 4 % 4 # 16"])
        .transpose(m["H / 4 % 4"], m["H % 4 # 16"])
        .commit_trim(m["H % 4"])
        .commit(m["H % 16"])
    )
    return (
        ctx.main.begin(result.view())
        .fetch(m["1"], m["H % 16"])
        .switch(SwitchConfig.Broadcast1(slice1=64, slice0=4), SliceP4, m["H / 16"])
        .collect(m["H / 16"], m["H % 16"])
        .commit_trim(m["H % 16"])
        .commit(m["H"])
    )


# ---------------------------------------------------------------------------------------------------------
# rope.rs


def _rope_table(ctx: Context, table: HbmTensor) -> VrfTensor:
    dm = table.to_dm(ctx.tdma, Cluster, SliceN32, m["D"])
    return (
        ctx.sub.begin(dm.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .to_vrf(m["D"])
    )


def _rotate_half(ctx: Context, x: DmTensor, outer: str) -> DmTensor:
    """The halves of D swapped (no sign: upstream folds it into `sin`), by two tiled commits; `outer` is
    `"G, "` for q and `""` for k."""
    rotated = DmTensor.new(bf16, Chip, Cluster, SliceN32, m[f"{outer}D"])
    for start in (0, 64):
        (
            ctx.main.begin(x.view().tile(start, m["D"], 64, m[f"{outer}D = 64 # 128"]))
            .fetch(m[outer.rstrip(", ") or "1"], m["D = 64"])
            .collect(m[f"{outer}D = 64 / 16"], m["D = 64 % 16"])
            .commit_trim(m["D = 64 % 16"])
            .commit_view(rotated.view_mut().tile(64 - start, m["D"], 64, m[f"{outer}D = 64 #{{!}} 128"]))
        )
    return rotated


def _times(ctx: Context, x: DmTensor, table: VrfTensor, alu: FpMulAlu, outer: str) -> DmTensor:
    """`x · table` in f32 (x widened from bf16, the `[D]` table broadcast over `outer`), kept in f32."""
    return (
        ctx.main.begin(x.view())
        .fetch(m[f"{outer}D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m[f"{outer}D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m[f"{outer}D / 4"], m["D % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(alu), table)
        .vector_widen_concat(m[f"{outer}D / 8"], m["D % 8"])
        .vector_final()
        .commit_trim(m["D % 8"])
        .commit(m[f"{outer}D"])
    )


def _plus(ctx: Context, a: DmTensor, b: DmTensor, outer: str) -> DmTensor:
    """`a + b` in f32, cast to bf16."""
    b_vrf = (
        ctx.sub.begin(b.view())
        .fetch(m[f"{outer}D / 8"], m["D % 8"])
        .collect(m[f"{outer}D / 8"], m["D % 8"])
        .to_vrf(m[f"{outer}D"])
    )
    return (
        ctx.main.begin(a.view())
        .fetch(m[f"{outer}D / 8"], m["D % 8"])
        .collect(m[f"{outer}D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip(ClipBinaryOpF32.Add, b_vrf)
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m[f"{outer}D"])
    )


def apply_rope(
    ctx: Context,
    q: DmTensor,
    k: DmTensor,
    kv_offset: HbmTensor,
    cos: HbmTensor,
    sin: HbmTensor,
    k_cache: HbmTensor,
) -> DmTensor:
    """`rope::apply_rope`: `x · cos + rotate_half(x) · sin` for q and k (f32, cast to bf16 once); k is scattered
    into the K cache, q is returned. Upstream writes each of q and k out in full; the helpers here group the
    same streams (`_rotate_half`, `_times`, `_plus`), in upstream's order."""
    cos_vrf = _rope_table(ctx, cos)
    sin_vrf = _rope_table(ctx, sin)
    rotate_half_q = _rotate_half(ctx, q, "G, ")
    rotate_half_k = _rotate_half(ctx, k, "")
    tcq = _times(ctx, q, cos_vrf, FpMulAlu.Mul0, "G, ")
    tsq = _times(ctx, rotate_half_q, sin_vrf, FpMulAlu.Mul1, "G, ")
    result_q = _plus(ctx, tcq, tsq, "G, ")
    tck = _times(ctx, k, cos_vrf, FpMulAlu.Mul0, "")
    tsk = _times(ctx, rotate_half_k, sin_vrf, FpMulAlu.Mul1, "")
    result_k = _plus(ctx, tck, tsk, "")
    result_k.dma_scatter(kv_offset, k_cache, m["1"])
    return result_q


# ---------------------------------------------------------------------------------------------------------
# residual.rs


def residual(ctx: Context, input: DmTensor, residual: DmTensor) -> DmTensor:
    """`residual::forward`: `input + residual` over `[H]` in f32, cast to bf16."""
    residual_vrf = (
        ctx.sub.begin(residual.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .to_vrf(m["H"])
    )
    return (
        ctx.main.begin(input.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip(ClipBinaryOpF32.Add, residual_vrf)
        .vector_final()
        .cast(bf16, m["H % 8 # 16"])
        .commit_trim(m["H % 8"])
        .commit(m["H"])
    )


# ---------------------------------------------------------------------------------------------------------
# mlp.rs

SliceUG = m["L / 24, 1 # 2"]
SliceD = m["H / 8, 1 # 2"]


def _up_or_gate(ctx: Context, x: DmTensor, weight: HbmTensor) -> DmTensor:
    """`W · x` for 24 rows of L per 2-slice group (the body upstream writes twice, for up and for gate)."""
    weight_dm = weight.to_dm(ctx.tdma, Cluster, SliceUG, m["L % 24, H"])
    weight_trf = (
        ctx.sub.begin(weight_dm.view())
        .fetch(m["L % 8, L / 8 % 3, H / 16"], m["H % 16"])
        .collect(m["L % 8, L / 8 % 3, H / 16"], m["H % 16"])
        .to_trf(m["L % 8"], m["L / 8 % 3, H"])
    )
    return (
        ctx.main.begin(x.view())
        .fetch(m["H / 16"], m["H % 16"])
        .collect(m["H / 16"], m["H % 16"])
        .contract_outer(weight_trf, m["H / 32, L / 8 % 3"], m["H % 32"])
        .contract_packet(m["1"])
        .contract_time(m["L / 8 % 3"])
        .contract_lane(LaneMode.Interleaved, m["L / 8 % 3"], m["L % 8"])
        .cast(bf16, m["L % 8 # 16"])
        .commit_trim(m["L % 8"])
        .commit(m["L % 24"])
    )


def mlp(ctx: Context, input: DmTensor, up_weight: HbmTensor, gate_weight: HbmTensor, down_weight: HbmTensor):
    """`mlp::forward`: `W_down · (silu(W_gate · x) · (W_up · x))`, SiLU as `x · sigmoid(x)` in f32."""
    x = input.reshape(Chip, Cluster, m["L / 48, 1 # 4"], m["H"])
    x = (
        ctx.main.begin(x.view())
        .fetch(m["H / 16"], m["H % 16"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=4), m["L / 48, Dummy4"], m["H / 16"])
        .collect(m["H / 16"], m["H % 16"])
        .commit_trim(m["H % 16"])
        .commit(m["H"])
    )
    x = x.reshape(Chip, Cluster, SliceUG, m["H"])
    up = _up_or_gate(ctx, x, up_weight)
    gate = _up_or_gate(ctx, x, gate_weight)
    silu = (
        ctx.sub.begin(gate.view())
        .fetch(m["L / 8 % 3"], m["L % 8"])
        .fetch_cast(f32)
        .collect(m["L / 8 % 3"], m["L % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["L / 4 % 6"], m["L % 4"])
        .vector_stash()
        .vector_fp_unary(FpUnaryOp.Sigmoid)
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), Stash)
        .vector_widen_concat(m["L / 8 % 3"], m["L % 8"])
        .vector_final()
        .commit_trim(m["L % 8"])
        .commit(m["L % 24"])
    )
    silu_vrf = (
        ctx.sub.begin(silu.view())
        .fetch(m["L / 8 % 3"], m["L % 8"])
        .collect(m["L / 8 % 3"], m["L % 8"])
        .to_vrf(m["L % 24"])
    )
    x = (
        ctx.main.begin(up.view())
        .fetch(m["L / 8 % 3"], m["L % 8"])
        .fetch_cast(f32)
        .collect(m["L / 8 % 3"], m["L % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["L / 4 % 6"], m["L % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), silu_vrf)
        .vector_widen_concat(m["L / 8 % 3"], m["L % 8"])
        .vector_final()
        .cast(bf16, m["L % 8 # 16"])
        .commit_trim(m["L % 8"])
        .commit(m["L % 24"])
    )
    x = (
        ctx.main.begin(x.view())
        .fetch(m["L / 8 % 3"], m["L % 8 # 16"])
        .switch(SwitchConfig.Broadcast1(slice1=128, slice0=2), SliceD, m["L / 8 % 3, L / 24"])
        .collect(m["L / 8 % 3, L / 24"], m["L % 8 # 16"])
        .commit_trim(m["L % 8"])
        .commit(m["L"])
    )
    down_dm = down_weight.to_dm(ctx.tdma, Cluster, SliceD, m["H % 8, L"])
    weight_trf = (
        ctx.sub.begin(down_dm.view())
        .fetch(m["H % 8, L / 16"], m["L % 16"])
        .collect(m["H % 8, L / 16"], m["L % 16"])
        .to_trf(m["H % 8"], m["L"])
    )
    down = (
        ctx.main.begin(x.view())
        .fetch(m["L / 16"], m["L % 16"])
        .collect(m["L / 16"], m["L % 16"])
        .contract_outer(weight_trf, m["L / 32"], m["L % 32"])
        .contract_packet(m["1"])
        .contract_time(m["1"])
        .contract_lane(LaneMode.Interleaved, m["1"], m["H % 8"])
        .commit_trim(m["H % 8"])
        .commit(m["H % 8"])
    )
    return (
        ctx.main.begin(down.view())
        .fetch(m["1"], m["H % 8"])
        .switch(SwitchConfig.Broadcast1(slice1=128, slice0=2), SliceP4, m["H / 8"])
        .collect(m["H / 8"], m["H % 8"])
        .cast(bf16, m["H % 8 # 16"])
        .commit_trim(m["H % 8"])
        .commit(m["H"])
    )


# ---------------------------------------------------------------------------------------------------------
# attention.rs


def ng_to_vrf(ctx: Context, x: DmTensor) -> VrfTensor:
    """`attention::ng_to_vrf`: a per-head `[N, G]` f32 value into the VRF."""
    return ctx.sub.begin(x.view()).fetch(m["N / 4"], m["N % 4, G"]).collect(m["N / 4"], m["N % 4, G"]).to_vrf(m["N, G"])


SliceQK = m["T / 8, 1 # 4"]
SliceQV = m["N, T / 16"]


def qk_scaled(ctx: Context, q: HbmTensor, k: HbmTensor) -> DmTensor:
    """`attention::qk_scaled`: logits `q · K^T / sqrt(D)` `[N, G, T]` in bf16, 8 keys per 4-slice group,
    gathered to every slice."""
    q_dm = q.to_dm(ctx.tdma, Cluster, SliceQK, m["N, G, D"])
    k_dm = k.to_dm(ctx.tdma, Cluster, SliceQK, m["T % 8, N, D"])
    k_trf = (
        ctx.sub.begin(k_dm.view())
        .fetch(m["T % 8, N, D / 16"], m["D % 16"])
        .collect(m["T % 8, N, D / 16"], m["D % 16"])
        .to_trf(m["T % 8"], m["N, D"])
    )
    qk = (
        ctx.main.begin(q_dm.view())
        .fetch(m["N, G, D / 16"], m["D % 16"])
        .collect(m["N, G, D / 16"], m["D % 16"])
        .contract_outer(k_trf, m["N, G, D / 32"], m["D % 32"])
        .contract_packet(m["1"])
        .contract_time(m["N, G"])
        .contract_lane(LaneMode.Interleaved, m["N, G"], m["T % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["N, G, T / 4 % 2"], m["T % 4"])
        .vector_fp_div(SQRT_HEAD_DIM)
        .vector_widen_concat(m["N, G"], m["T % 8"])
        .vector_final()
        .cast(bf16, m["T % 8 # 16"])
        .commit_trim(m["T % 8"])
        .commit(m["N, G, T % 8"])
    )
    return (
        ctx.main.begin(qk.view())
        .fetch(m["N, G"], m["T % 8 # 16"])
        .switch(SwitchConfig.Broadcast1(slice1=64, slice0=4), Slice, m["N, G, T / 8"])
        .collect(m["N, G, T / 8"], m["T % 8 # 16"])
        .commit_trim(m["T % 8"])
        .commit(m["N, G, T"])
    )


def row_max(ctx: Context, qk: DmTensor) -> DmTensor:
    """`attention::row_max`: the per-head maximum of the logits, `[N, G]` in f32."""
    return (
        ctx.main.begin(qk.view())
        .fetch(m["N, G, T / 16"], m["T % 16"])
        .fetch_cast(f32)
        .collect(m["N, G, T / 8"], m["T % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["N, G, T / 4"], m["T % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Max, T, m["N, G"], m["1 # 4"])
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .transpose(m["N"], m["G # 8"])
        .commit_trim(m["G"])
        .commit(m["N, G"])
    )


def masked_exp(ctx: Context, qk: DmTensor, max_vrf: VrfTensor, mask: HbmTensor) -> DmTensor:
    """`attention::masked_exp`: `min(exp(qk - max), mask)` `[N, G, T]` in f32 (mask 1 keeps a key, 0 drops it)."""
    exp = (
        ctx.main.begin(qk.view())
        .fetch(m["N, G, T / 16"], m["T % 16"])
        .fetch_cast(f32)
        .collect(m["N, G, T / 8"], m["T % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["N, G, T / 4"], m["T % 4"])
        .vector_fp_binary(FpBinaryOp.SubF, max_vrf)
        .vector_fp_unary(FpUnaryOp.Exp)
        .vector_widen_concat(m["N, G, T / 8"], m["T % 8"])
        .vector_final()
        .commit_trim(m["T % 8"])
        .commit(m["N, G, T"])
    )
    mask_dm = mask.to_dm(ctx.tdma, Cluster, Slice, m["T"])
    mask_vrf = (
        ctx.sub.begin(mask_dm.view()).fetch(m["T / 8"], m["T % 8"]).collect(m["T / 8"], m["T % 8"]).to_vrf(m["T"])
    )
    return (
        ctx.main.begin(exp.view())
        .fetch(m["N, G, T / 8"], m["T % 8"])
        .collect(m["N, G, T / 8"], m["T % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip(ClipBinaryOpF32.Min, mask_vrf)
        .vector_final()
        .commit_trim(m["T % 8"])
        .commit(m["N, G, T"])
    )


def row_sum(ctx: Context, masked_exp: DmTensor) -> DmTensor:
    """`attention::row_sum`: the per-head sum of the masked exponentials plus EPS, `[N, G]`."""
    return (
        ctx.main.begin(masked_exp.view())
        .fetch(m["N, G, T / 8"], m["T % 8"])
        .collect(m["N, G, T / 8"], m["T % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["N, G, T / 4"], m["T % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, T, m["N, G"], m["1 # 4"])
        .vector_widen_pad(m["1 # 8"])
        .vector_clip(ClipBinaryOpF32.Add, EPS)
        .vector_final()
        .transpose(m["N"], m["G # 8"])
        .commit_trim(m["G"])
        .commit(m["N, G"])
    )


def weighted_sum(ctx: Context, masked_exp: DmTensor, v: HbmTensor) -> DmTensor:
    """`attention::weighted_sum`: the unnormalised output `exp · V` `[N, G, D]`: 16 keys per slice (bf16
    weights, f32 products folded by the Contraction Engine), then an inter-slice Add over the 32 slices of
    a KV head, cast to bf16 and broadcast to every slice."""
    weight = (
        ctx.main.begin(masked_exp.view())
        .fetch(m["N, G, T / 8"], m["T % 8"])
        .collect(m["N, G, T / 8"], m["T % 8"])
        .cast(bf16, m["T % 8 # 16"])
        .commit_trim(m["T % 8"])
        .commit(m["N, G, T"])
    )
    weight = weight.to_dm(ctx.tdma, SliceQV, m["G, T % 16"])
    v_dm = v.to_dm(ctx.tdma, Cluster, SliceQV, m["T % 16, D"])
    v_dm = (
        ctx.main.begin(v_dm.view())
        .fetch(m["D / 8, T % 16"], m["D % 8 # 16"])
        .collect(m["D / 8, T % 16"], m["D % 8 # 16"])
        .transpose(m["D / 8, T / 4 % 4, D % 8"], m["T % 4 # 16"])
        .commit_trim(m["T % 4"])
        .commit(m["D, T % 16"])
    )
    v_trf = (
        ctx.sub.begin(v_dm.view())
        .fetch(m["D % 8, D / 8"], m["T % 16"])
        .collect(m["D % 8, D / 8"], m["T % 16"])
        .to_trf(m["D % 8"], m["D / 8, T % 16"])
    )
    result = (
        ctx.main.begin(weight.view())
        .fetch(m["G"], m["T % 16"])
        .collect(m["G"], m["T % 16"])
        .contract_outer(v_trf, m["G, D / 8"], m["T % 16"])
        .contract_packet(m["1"])
        .contract_time(m["G, D / 8"])
        .contract_lane(LaneMode.Interleaved, m["G, D / 8"], m["D % 8"])
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["G, D"])
    )
    result = (
        ctx.main.begin(result.view())
        .fetch(m["G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_inter_slice_reduce(InterSliceReduceOpF32.Add, m["N, 1 # 32"], m["G, D / 8"])
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["G, D"])
    )
    return result.to_dm(ctx.tdma, Slice, m["N, G, D"])


def _fold_ng(ctx: Context, x: DmTensor, finish) -> DmTensor:
    """A Vector Engine pass over an `[N, G]` f32 tensor: `finish` adds the ops between the tag and the final."""
    stream = (
        ctx.main.begin(x.view())
        .fetch(m["N / 4"], m["N % 4, G"])
        .collect(m["N / 4"], m["N % 4, G"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
    )
    return finish(stream).vector_final().commit_trim(m["N % 4, G"]).commit(m["N, G"])


def _rescale_out(ctx: Context, out: DmTensor, operand, clip: bool) -> DmTensor:
    """`out · alpha` (mul, `clip=False`) or `out + result` (clip Add, `clip=True`) over `[N, G, D]`, cast to bf16."""
    stream = (
        ctx.main.begin(out.view())
        .fetch(m["N, G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["N, G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
    )
    if clip:
        stream = stream.vector_clip(ClipBinaryOpF32.Add, operand)
    else:
        stream = (
            stream.vector_narrow_split(m["N, G, D / 4"], m["D % 4"])
            .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), operand)
            .vector_widen_concat(m["N, G, D / 8"], m["D % 8"])
        )
    return stream.vector_final().cast(bf16, m["D % 8 # 16"]).commit_trim(m["D % 8"]).commit(m["N, G, D"])


def attention_first(ctx, q, k, v, mask, max_hbm, sum_hbm, out_hbm) -> None:
    """`attention::forward_first`: the first KV chunk initialises the running max, sum and output."""
    qk = qk_scaled(ctx, q, k)
    max_ = row_max(ctx, qk)
    max_vrf = ng_to_vrf(ctx, max_)
    exp = masked_exp(ctx, qk, max_vrf, mask)
    sum_ = row_sum(ctx, exp)
    result = weighted_sum(ctx, exp, v)
    max_.view().to_hbm_view(ctx.tdma, max_hbm.view_mut())
    sum_.view().to_hbm_view(ctx.tdma, sum_hbm.view_mut())
    result.view().to_hbm_view(ctx.tdma, out_hbm.view_mut())


def attention_next(ctx, q, k, v, mask, max_hbm, sum_hbm, out_hbm) -> None:
    """`attention::forward`: a later KV chunk folded into the running (online-softmax) state in HBM:
    `max' = max(max, m)`, `alpha = exp(max - max')`, `sum' = sum · alpha + Σ exp`, `out' = out · alpha + exp · V`."""
    qk = qk_scaled(ctx, q, k)
    max_ = row_max(ctx, qk)
    old_max = max_hbm.to_dm(ctx.tdma, Cluster, Slice, m["N, G"])
    old_max_vrf = ng_to_vrf(ctx, old_max)
    max_ = _fold_ng(ctx, max_, lambda s: s.vector_clip(ClipBinaryOpF32.Max, old_max_vrf))
    max_.view().to_hbm_view(ctx.tdma, max_hbm.view_mut())
    alpha = _fold_ng(
        ctx,
        max_,
        lambda s: (
            s.vector_narrow_split(m["N / 2"], m["N % 2, G"])
            .vector_fp_binary_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10, old_max_vrf)
            .vector_fp_unary(FpUnaryOp.Exp)
            .vector_widen_concat(m["N / 4"], m["N % 4, G"])
        ),
    )
    alpha_vrf = ng_to_vrf(ctx, alpha)
    max_vrf = ng_to_vrf(ctx, max_)
    exp = masked_exp(ctx, qk, max_vrf, mask)
    expsum = row_sum(ctx, exp)
    expsum_vrf = ng_to_vrf(ctx, expsum)
    sum_ = sum_hbm.to_dm(ctx.tdma, Cluster, Slice, m["N, G"])
    sum_ = _fold_ng(
        ctx,
        sum_,
        lambda s: (
            s.vector_narrow_split(m["N / 2"], m["N % 2, G"])
            .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), alpha_vrf)
            .vector_widen_concat(m["N / 4"], m["N % 4, G"])
            .vector_clip(ClipBinaryOpF32.Add, expsum_vrf)
        ),
    )
    sum_.view().to_hbm_view(ctx.tdma, sum_hbm.view_mut())
    result = weighted_sum(ctx, exp, v)
    # Written as upstream writes it: `result` (8 KiB) loaded into the VRF while `alpha` is still live would
    # need 8256 bytes of the 8 KiB VRF, so stage 2 places the buffers in an order where `out · alpha` runs
    # first (docs/lowering.md, "When the written order does not fit").
    result_vrf = (
        ctx.sub.begin(result.view())
        .fetch(m["N, G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["N, G, D / 8"], m["D % 8"])
        .to_vrf(m["N, G, D"])
    )
    out = out_hbm.to_dm(ctx.tdma, Cluster, Slice, m["N, G, D"])
    out = _rescale_out(ctx, out, alpha_vrf, clip=False)
    out = _rescale_out(ctx, out, result_vrf, clip=True)
    out.view().to_hbm_view(ctx.tdma, out_hbm.view_mut())


def attention_norm(ctx: Context, input: DmTensor, sum_hbm: HbmTensor) -> DmTensor:
    """`attention::norm`: the accumulated output divided by the final softmax sum (run by `decoder`)."""
    _, cluster, slice_, _ = input.params
    sum_ = sum_hbm.to_dm(ctx.tdma, cluster, slice_, m["N, G"])
    sum_vrf = ng_to_vrf(ctx, sum_)
    return (
        ctx.main.begin(input.view())
        .fetch(m["N, G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["N, G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["N, G, D / 4"], m["D % 4"])
        .vector_fp_div(sum_vrf)
        .vector_widen_concat(m["N, G, D / 8"], m["D % 8"])
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["N, G, D"])
    )


# ---------------------------------------------------------------------------------------------------------
# lm_head.rs


def lm_head(ctx: Context, input: DmTensor, weight: HbmTensorView, out: HbmTensor) -> None:
    """`lm_head::forward`: logits `W_lm · x` over the padded vocabulary, 19 tiles of 8192 rows (16 rows per
    slice per tile), gathered in DM and stored once."""
    logits = DmTensor.new(bf16, Chip, LmCluster, LmSlice, m["Wp / 8192, Wp % 16"])
    for i in range(19):
        weight_dm = weight.tile(i, m["Wp / 8192"], 1, m["1 # 19, Wp % 8192, H"]).to_dm(
            ctx.tdma, LmCluster, LmSlice, m["Wp % 16, H"]
        )
        weight_trf = (
            ctx.sub.begin(weight_dm.view())
            .fetch(m["Wp % 8, Wp / 8 % 2, H / 16"], m["H % 16"])
            .collect(m["Wp % 8, Wp / 8 % 2, H / 16"], m["H % 16"])
            .to_trf(m["Wp % 8"], m["Wp / 8 % 2, H"])
        )
        (
            ctx.main.begin(input.view())
            .fetch(m["H / 16"], m["H % 16"])
            .collect(m["H / 16"], m["H % 16"])
            .contract_outer(weight_trf, m["H / 32, Wp / 8 % 2"], m["H % 32"])
            .contract_packet(m["1"])
            .contract_time(m["Wp / 8 % 2"])
            .contract_lane(LaneMode.Interleaved, m["Wp / 8 % 2"], m["Wp % 8"])
            .cast(bf16, m["Wp % 8 # 16"])
            .commit_trim(m["Wp % 8"])
            .commit_view(logits.view_mut().tile(i, m["Wp / 8192"], 1, m["1 #{!} 19, Wp % 16"]))
        )
    gathered = (
        ctx.main.begin(logits.view())
        .fetch(m["Wp / 8192"], m["Wp % 16"])
        .switch(SwitchConfig.Broadcast1(slice1=8, slice0=1), m["Wp / 128 % 32, 1 # 8"], m["Wp / 8192, Wp / 16 % 8"])
        .collect(m["Wp / 8192, Wp / 16 % 8"], m["Wp % 16"])
        .commit_trim(m["Wp % 16"])
        .commit(m["Wp / 8192, Wp % 128"])
    )
    gathered.view().to_hbm_view(ctx.tdma, out.view_mut())


# ---------------------------------------------------------------------------------------------------------
# mod.rs: the six entry points


@device(chip=1)
def embedding(ctx: Context, input: HbmTensor[bf16, Chip, m["H"]], out: HbmTensor[bf16, Chip, m["H"]]) -> None:
    """`ops::embedding`: the token's row of the embedding table (chosen by the host) copied into the hidden state."""
    input.view().to_hbm_view(ctx.tdma, out.view_mut())


@device(chip=1)
def projection(
    ctx: Context,
    x: HbmTensor[bf16, Chip, m["H"]],
    q_weight: HbmTensor[bf16, Chip, m["Q, H"]],
    k_weight: HbmTensor[bf16, Chip, m["P, H"]],
    v_weight: HbmTensor[bf16, Chip, m["P, H"]],
    input_rms_weight: HbmTensor[bf16, Chip, m["H"]],
    q_rms_weight: HbmTensor[bf16, Chip, m["D"]],
    k_rms_weight: HbmTensor[bf16, Chip, m["D"]],
    kv_offset: HbmTensor[i32, Chip, m["1"]],
    cos: HbmTensor[bf16, Chip, m["D"]],
    sin: HbmTensor[bf16, Chip, m["D"]],
    k_cache: HbmTensor[bf16, Chip, m["T, N, D"]],
    v_cache: HbmTensor[bf16, Chip, m["T, N, D"]],
    q_out: HbmTensor[bf16, Chip, m["N, G, D"]],
) -> None:
    """`ops::projection`: input rmsnorm, q/k/v projections, q/k norms, RoPE; k and v go into their caches at
    byte offset `kv_offset` (row `kv_offset / ROW_BYTES`), q into `q_out`."""
    x = x.to_dm(ctx.tdma, Cluster, SliceP4, m["H"])
    x = rmsnorm(ctx, x, input_rms_weight)
    q = proj_q(ctx, x.view(), q_weight)
    k = proj_p(ctx, x.view(), k_weight)
    proj_v(ctx, x.view(), kv_offset, v_weight, v_cache)
    q = rmsnorm_q(ctx, q, q_rms_weight)
    k = rmsnorm_k(ctx, k, k_rms_weight)
    q = apply_rope(ctx, q, k, kv_offset, cos, sin, k_cache)
    q.view().to_hbm_view(ctx.tdma, q_out.view_mut())


@device(chip=1)
def attention_forward_first(
    ctx: Context,
    q: HbmTensor[bf16, Chip, m["N, G, D"]],
    k: HbmTensor[bf16, Chip, m["T, N, D"]],
    v: HbmTensor[bf16, Chip, m["T, N, D"]],
    mask: HbmTensor[f32, Chip, m["T"]],
    max_hbm: HbmTensor[f32, Chip, m["N, G"]],
    sum_hbm: HbmTensor[f32, Chip, m["N, G"]],
    out_hbm: HbmTensor[bf16, Chip, m["N, G, D"]],
) -> None:
    """`ops::attention_forward_first`: attention over KV chunk 0 (writes max, sum and unnormalised output)."""
    attention_first(ctx, q, k, v, mask, max_hbm, sum_hbm, out_hbm)


@device(chip=1)
def attention_forward(
    ctx: Context,
    q: HbmTensor[bf16, Chip, m["N, G, D"]],
    k: HbmTensor[bf16, Chip, m["T, N, D"]],
    v: HbmTensor[bf16, Chip, m["T, N, D"]],
    mask: HbmTensor[f32, Chip, m["T"]],
    max_hbm: HbmTensor[f32, Chip, m["N, G"]],
    sum_hbm: HbmTensor[f32, Chip, m["N, G"]],
    out_hbm: HbmTensor[bf16, Chip, m["N, G, D"]],
) -> None:
    """`ops::attention_forward`: a later KV chunk folded into the running max, sum and output."""
    attention_next(ctx, q, k, v, mask, max_hbm, sum_hbm, out_hbm)


@device(chip=1)
def decoder(
    ctx: Context,
    x: HbmTensor[bf16, Chip, m["N, G, D"]],
    sum_hbm: HbmTensor[f32, Chip, m["N, G"]],
    rx_hbm: HbmTensor[bf16, Chip, m["H"]],
    o_weight: HbmTensor[bf16, Chip, m["H, Q"]],
    post_rms_weight: HbmTensor[bf16, Chip, m["H"]],
    up_weight: HbmTensor[bf16, Chip, m["L, H"]],
    gate_weight: HbmTensor[bf16, Chip, m["L, H"]],
    down_weight: HbmTensor[bf16, Chip, m["H, L"]],
) -> None:
    """`ops::decoder`: attention normalised by its sum, o projection, residual, rmsnorm, MLP, residual; the
    new hidden state is written over `rx_hbm`."""
    x = x.to_dm(ctx.tdma, Cluster, SliceP4, m["N, G, D"])
    x = attention_norm(ctx, x, sum_hbm)
    x = x.reshape(Chip, Cluster, SliceP4, m["Q"])
    x = proj_o(ctx, x, o_weight)
    rx = rx_hbm.to_dm(ctx.tdma, Cluster, SliceP4, m["H"])
    rx = residual(ctx, x, rx)
    x = rmsnorm(ctx, rx, post_rms_weight)
    x = mlp(ctx, x, up_weight, gate_weight, down_weight)
    rx = residual(ctx, x, rx)
    rx = rx.reshape(Chip, Cluster, Slice, m["H"])
    rx.view().to_hbm_view(ctx.tdma, rx_hbm.view_mut())


@device(chip=1)
def final_layer(
    ctx: Context,
    input: HbmTensor[bf16, Chip, m["H"]],
    rms_weight: HbmTensor[bf16, Chip, m["H"]],
    lm_head_weight: HbmTensor[bf16, Chip, LmHeadWeight],
    out: HbmTensor[bf16, Chip, m["Wp"]],
) -> None:
    """`ops::final_layer`: final rmsnorm and the lm_head over the padded vocabulary."""
    x = input.to_dm(ctx.tdma, LmCluster, LmSlice, m["H"])
    x = rmsnorm(ctx, x, rms_weight)
    weight = lm_head_weight.view().reshape(Chip, m["Wp / 8192, Wp % 8192, H"])
    lm_head(ctx, x, weight, out)


@device(chip=1)
def mlp_forward(
    ctx: Context,
    x: HbmTensor[bf16, Chip, m["H"]],
    up_weight: HbmTensor[bf16, Chip, m["L, H"]],
    gate_weight: HbmTensor[bf16, Chip, m["L, H"]],
    down_weight: HbmTensor[bf16, Chip, m["H, L"]],
) -> HbmTensor[bf16, Chip, m["H"]]:
    """The decoder's MLP alone on one token's hidden state (`mlp::forward`, the layout `decoder` gives it):
    not one of upstream's entry points, it lets a PyTorch model run this MLP (`transformer.torch_mlp`)."""
    x = x.to_dm(ctx.tdma, Cluster, SliceP4, m["H"])
    x = mlp(ctx, x, up_weight, gate_weight, down_weight)
    return x.reshape(Chip, Cluster, Slice, m["H"]).to_hbm(ctx.tdma, m["H"])


ENTRY_POINTS = (embedding, projection, attention_forward_first, attention_forward, decoder, final_layer)


def differential_inputs(kernel, ctx: Context, rng) -> tuple | None:
    """Launch arguments for tests/test_differential.py where random ones break a precondition: `projection`'s
    `kv_offset` must be a byte offset of a KV-cache row (a random i32 faults as past the cache); the rest random."""
    if kernel is not projection:
        return None
    import numpy as np

    def rand(dtype, element):
        return HostTensor.rand(dtype, element, rng).to_hbm(ctx.pdma)

    offset = np.array([int(rng.integers(0, T.size)) * ROW_BYTES], dtype=np.int32)
    return (
        rand(bf16, m["H"]),
        rand(bf16, m["Q, H"]),
        rand(bf16, m["P, H"]),
        rand(bf16, m["P, H"]),
        rand(bf16, m["H"]),
        rand(bf16, m["D"]),
        rand(bf16, m["D"]),
        HostTensor.from_numpy(offset, i32, m["1"]).to_hbm(ctx.pdma),
        rand(bf16, m["D"]),
        rand(bf16, m["D"]),
        rand(bf16, m["T, N, D"]),
        rand(bf16, m["T, N, D"]),
        rand(bf16, m["N, G, D"]),
    )
