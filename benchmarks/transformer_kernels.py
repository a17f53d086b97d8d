"""Transformer-shaped kernels for the benchmarks, laid out as upstream's transformer example lays them out
(`furiosa-opt-examples/src/transformer/kernel/`): an embedding row copy between host-tiled views, a residual
add broadcast over 64 slice groups and RoPE on the heads of one position of a query tensor
(`transformer.py`), and one 8192-row tile of the lm_head (`lm_head.py`).
"""

from furiosa_opt import (
    ClipBinaryOpF32,
    Context,
    DmTensor,
    FpBinaryOp,
    FpMulAlu,
    HbmTensor,
    HbmTensorView,
    HbmTensorViewMut,
    LaneMode,
    TagMode,
    VrfTensor,
    axes,
    bf16,
    device,
    f32,
    m,
)

V, H = axes(V=151936, H=1024)  # vocabulary, hidden size
T, Copies = axes(T=4, Copies=64)  # residual tokens; the broadcast of upstream's `SliceP4 = [Dummy64, 1 # 4]`
P, N, G, D = axes(P=512, N=8, G=2, D=128)  # positions, KV heads, query heads per KV head, head size
W, Wp = axes(W=151936, Wp=155648)  # lm_head rows, and padded to 19 tiles of 8192

Chip = m["1"]
Cluster = m["1 # 2"]
Table, Tokens, Queries = m["V, H"], m["T, H"], m["P, N, G, D"]  # host layouts, for the benchmarks
TokenSlice = m["Copies, T"]  # upstream pads its one decode token to 4 slices; we fill them with 4 tokens
HeadSlice = m["N, 1 # 32"]  # upstream's SliceN32: one KV head per 32-slice group
Row = m["1 # 151936, H"]  # one live row of the `[V, H]` table
RowMut = m["1 #{!} 151936, H"]
Position = m["1 # 512, N, G, D"]  # one live position of the `[P, N, G, D]` query tensor
LmCluster, LmSlice = m["Wp / 4096 % 2"], m["Wp / 16 % 256"]  # upstream's lm_head: 16 rows of a tile per slice
WeightTile = m["1 # 19, Wp % 8192, H"]  # tile i of the `[Wp / 8192, Wp % 8192, H]` weight
LogitsTile = m["1 #{!} 19, Wp % 8192"]
Weight, Logits, TileIndex = m["W # 155648, H"], m["Wp"], m["Wp / 8192"]  # the weight uploads padded to Wp rows


@device(chip=1)
def embedding_row(ctx: Context, row: HbmTensorView[bf16, Chip, Row], out: HbmTensorViewMut[bf16, Chip, RowMut]) -> None:
    """Upstream's `embedding`: one HBM → HBM move; the host chooses the row on both ends."""
    row.to_hbm_view(ctx.tdma, out)


@device(chip=1)
def residual_add(
    ctx: Context, x: HbmTensor[bf16, Chip, Tokens], residual: HbmTensor[bf16, Chip, Tokens]
) -> HbmTensor[bf16, Chip, Tokens]:
    """x + residual in f32 on the Vector Engine, rounded to bf16 (upstream's `residual::forward`). Every
    token is computed by 64 slices, as upstream's decoder keeps its hidden state broadcast."""
    x_dm = x.to_dm(ctx.tdma, Cluster, TokenSlice, m["H"])
    residual_dm = residual.to_dm(ctx.tdma, Cluster, TokenSlice, m["H"])
    residual_vrf = (
        ctx.sub.begin(residual_dm.view())
        .fetch(m["H / 16"], m["H % 16"])
        .fetch_cast(f32)
        .collect(m["H / 8"], m["H % 8"])
        .to_vrf(m["H"])
    )
    out = (
        ctx.main.begin(x_dm.view())
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
    # Copy 0 of the 64 goes to HBM, as upstream's decoder reshapes its broadcast state before the store.
    return out.reshape(Chip, Cluster, m["1 # 64, T"], m["H"]).to_hbm(ctx.tdma, Tokens)


@device(chip=1)
def rope(
    ctx: Context,
    q: HbmTensorView[bf16, Chip, Position],
    cos: HbmTensor[bf16, Chip, m["D"]],
    sin: HbmTensor[bf16, Chip, m["D"]],
) -> HbmTensor[bf16, Chip, m["N, G, D"]]:
    """q·cos + rotate_half(q)·sin for one position: upstream's `rope::apply_rope` on q (its k and the
    k-cache scatter are left out: they repeat q's ops on one head). rotate_half swaps the halves of D with
    two tiled commits; the sign of the first half lives in the caller's sin."""
    q_dm = q.to_dm(ctx.tdma, Cluster, HeadSlice, m["G, D"])
    cos_vrf, sin_vrf = (to_vrf(ctx, table.to_dm(ctx.tdma, Cluster, HeadSlice, m["D"])) for table in (cos, sin))
    rotated = DmTensor.new(bf16, Chip, Cluster, HeadSlice, m["G, D"])
    for start in (0, 64):
        (
            ctx.main.begin(q_dm.view().tile(start, m["D"], 64, m["G, D = 64 # 128"]))
            .fetch(m["G"], m["D = 64"])
            .collect(m["G, D = 64 / 16"], m["D = 64 % 16"])
            .commit_trim(m["D = 64 % 16"])
            .commit_view(rotated.view_mut().tile(64 - start, m["D"], 64, m["G, D = 64 #{!} 128"]))
        )
    q_cos = times(ctx, q_dm, cos_vrf, FpMulAlu.Mul0)
    rotated_sin = times(ctx, rotated, sin_vrf, FpMulAlu.Mul1)
    rotated_sin_vrf = (
        ctx.sub.begin(rotated_sin.view())
        .fetch(m["G, D / 8"], m["D % 8"])
        .collect(m["G, D / 8"], m["D % 8"])
        .to_vrf(m["G, D"])
    )
    out = (
        ctx.main.begin(q_cos.view())
        .fetch(m["G, D / 8"], m["D % 8"])
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_clip(ClipBinaryOpF32.Add, rotated_sin_vrf)
        .vector_final()
        .cast(bf16, m["D % 8 # 16"])
        .commit_trim(m["D % 8"])
        .commit(m["G, D"])
    )
    return out.to_hbm(ctx.tdma, m["N, G, D"])


def to_vrf(ctx: Context, table: DmTensor) -> VrfTensor:
    """A bf16 `[D]` table widened to f32 in every slice's vector register file."""
    return (
        ctx.sub.begin(table.view())
        .fetch(m["D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["D / 8"], m["D % 8"])
        .to_vrf(m["D"])
    )


def times(ctx: Context, x: DmTensor, table: VrfTensor, alu: FpMulAlu) -> DmTensor:
    """x·table in f32 (x widened from bf16, `table` broadcast over G), kept in f32 in DM."""
    return (
        ctx.main.begin(x.view())
        .fetch(m["G, D / 16"], m["D % 16"])
        .fetch_cast(f32)
        .collect(m["G, D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["G, D / 4"], m["D % 4"])
        .vector_fp_binary(FpBinaryOp.MulF(alu), table)
        .vector_widen_concat(m["G, D / 8"], m["D % 8"])
        .vector_final()
        .commit_trim(m["D % 8"])
        .commit(m["G, D"])
    )


@device(chip=1)
def lm_head_tile(
    ctx: Context,
    x: HbmTensor[bf16, Chip, m["H"]],
    weight: HbmTensorView[bf16, Chip, WeightTile],
    logits: HbmTensorViewMut[bf16, Chip, LogitsTile],
) -> None:
    """logits = weight · x for one tile of 8192 rows, folded in f32 over H and rounded to bf16: the body of
    upstream's `lm_head::forward` loop as one launch, the tile chosen on the host. Upstream gathers every
    tile's logits in DM and stores them once; here each launch stores its own, into its tile of `logits`."""
    x_dm = x.to_dm(ctx.tdma, LmCluster, LmSlice, m["H"])
    weight_dm = weight.to_dm(ctx.tdma, LmCluster, LmSlice, m["Wp % 16, H"])
    weight_trf = (
        ctx.sub.begin(weight_dm.view())
        .fetch(m["Wp % 8, Wp / 8 % 2, H / 16"], m["H % 16"])
        .collect(m["Wp % 8, Wp / 8 % 2, H / 16"], m["H % 16"])
        .to_trf(m["Wp % 8"], m["Wp / 8 % 2, H"])
    )
    out = (
        ctx.main.begin(x_dm.view())
        .fetch(m["H / 16"], m["H % 16"])
        .collect(m["H / 16"], m["H % 16"])
        .contract_outer(weight_trf, m["H / 32, Wp / 8 % 2"], m["H % 32"])
        .contract_packet(m["1"])
        .contract_time(m["Wp / 8 % 2"])
        .contract_lane(LaneMode.Interleaved, m["Wp / 8 % 2"], m["Wp % 8"])
        .cast(bf16, m["Wp % 8 # 16"])
        .commit_trim(m["Wp % 8"])
        .commit(m["Wp % 16"])
    )
    out.view().to_hbm_view(ctx.tdma, logits)
