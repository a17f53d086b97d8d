"""The Vector Engine's pair mode, refused where it is broken (upstream's `VectorTensorPair`, in
`furiosa-opt-std/src/engine/vector/`, where these are type or assertion errors): an unzip needs the size-2
Time axis `begin_interleaved` adds; `begin_interleaved` pairs two tensors of one shape; the unzip's TileTime
(a group's tile of Time, the axis a `1 # 2` hole) and SplitTime (Time without the axis) must be the stream's;
the two groups share the pass's ALUs, so an ALU one group's op used cannot serve a later op of the other
group; and a pass has one register-file port, so both groups cannot read a VRF tensor in one op. One kernel
per case, each refused on its marked line; the legal twins are the kernels of
`tests/upstream/test_vector_engine_zip.py`."""

from furiosa_opt import *

A, I, Q = axes(A=512, I=2, Q=2)

Chip = m["1"]
Cluster = m["1 # 2"]


def _finish(ctx: Context, pair):
    result = pair.vector_clip_zip(ClipBinaryOpI32.AddFxp).vector_final().commit_trim(m["A % 2"]).commit(m["A % 2"])
    return result.to_hbm(ctx.tdma, m["A"])


def _collected(ctx: Context, lhs, rhs):
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    return (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
    )


@device(chip=1)
def unzip_without_interleave(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    """A plain `begin` stream has Time `1`: no `I` to split at."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    pair = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])  # refused[visa]: vector-unzip-axis
    )
    return _finish(ctx, pair)


@device(chip=1)
def interleave_different_shapes(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    """lhs over slices `A / 2` with elements `A % 2`, rhs over `A / 4 # 256` with `A % 4`."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 4 # 256"], m["A % 4"])
    pair = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)  # refused[visa]: begin-interleaved-mismatch
        .fetch(m["I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
    )
    return _finish(ctx, pair)


@device(chip=1)
def unzip_wrong_tile(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    """Time `I`: a group's tile is `1 # 2` (the axis a hole), not `1`."""
    pair = _collected(ctx, lhs, rhs).vector_intra_slice_unzip(I, m["1"], m["1"])  # refused[visa]: vector-unzip-tile
    return _finish(ctx, pair)


@device(chip=1)
def unzip_wrong_split(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["Q, A"]], rhs: HbmTensor[i32, Chip, m["Q, A"]]
) -> HbmTensor[i32, Chip, m["Q, A"]]:
    """Time `Q, I`: the tile is right (`Q, 1 # 2`), but a group's time is `Q`, not `1`."""
    lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["Q, A % 2"])
    rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["Q, A % 2"])
    result = (
        ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
        .fetch(m["Q, I"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["Q, I"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["Q, 1 # 2"], m["1"])  # refused[visa]: vector-unzip-split
        .vector_clip_zip(ClipBinaryOpI32.AddFxp)
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["Q, A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["Q, A"])


@device(chip=1)
def alu_reused_by_the_other_group(
    ctx: Context, lhs: HbmTensor[i32, Chip, m["A"]], rhs: HbmTensor[i32, Chip, m["A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    """`AddFxp` on group 0 takes FxpAdd for the pass; `SubFxp` on group 1 needs FxpAdd again."""
    pair = (
        _collected(ctx, lhs, rhs)
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.AddFxp, 1, None)
        .vector_fxp(FxpBinaryOp.SubFxp, None, 2)  # refused[visa]: vector-alu
    )
    return _finish(ctx, pair)


@device(chip=1)
def both_groups_read_the_vrf(
    ctx: Context,
    lhs: HbmTensor[i32, Chip, m["A"]],
    rhs: HbmTensor[i32, Chip, m["A"]],
    bias: HbmTensor[i32, Chip, m["A"]],
) -> HbmTensor[i32, Chip, m["A"]]:
    """One group reading `vrf` is legal; both in one op need two register-file ports."""
    bias_dm = bias.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    vrf = (
        ctx.sub.begin(bias_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .to_vrf(m["A % 2"])
    )
    pair = (
        _collected(ctx, lhs, rhs)
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_fxp(FxpBinaryOp.AddFxp, vrf, vrf)  # refused[visa]: vector-pair-operand
    )
    return _finish(ctx, pair)
