"""Kernels with out-parameters and structured parameters, shared by the runtime and compiler tests (and,
like every kernel under tests/, run on both backends by the differential harness)."""

from dataclasses import dataclass

from furiosa_opt import *

A, B = axes(A=256, B=8)
S = axes(S=128)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]
Rows = HbmTensor[i32, Chip, m["A, B"]]


@device
def copy_into(ctx: Context, x: Rows, out: Rows) -> None:
    """`out = x`, written in place (upstream's `&mut HbmTensor` out-parameter)."""
    x.view().to_hbm_view(ctx.tdma, out.view_mut())


@device
def copy_and_transpose(ctx: Context, x: Rows, out: Rows) -> HbmTensor[i32, Chip, m["B, A"]]:
    """An in-place output (`out = x`) and a returned one (`x` transposed)."""
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    dm.view().to_hbm_view(ctx.tdma, out.view_mut())
    return dm.to_hbm(ctx.tdma, m["B, A"])


@device
def store_through_view(
    ctx: Context, x: HbmTensor[bf16, Chip, m["S"]], out: HbmTensorViewMut[bf16, Chip, m["S"]]
) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["S"])
    dm.view().to_hbm_view(ctx.tdma, out)


@device
def increment(ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]]) -> None:
    """`x += 1` in place: a second launch reads what the first wrote."""
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["B"])
        .collect(m["1"], m["B"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["B"])
        .commit(m["B"])
    )
    result.view().to_hbm_view(ctx.tdma, x.view_mut())


@device
def swap_pair(ctx: Context, pair: tuple[Rows, Rows]) -> tuple[Rows, Rows]:
    """Tuple parameters and results: (b, a) of (a, b)."""
    first, second = pair
    return second.to_hbm(ctx.tdma, m["A, B"]), first.to_hbm(ctx.tdma, m["A, B"])


@dataclass
class Transfer:
    """Upstream's `#[derive(DeviceSend)]` struct: a source and its destination."""

    source: Rows
    target: Rows


@device
def run_transfer(ctx: Context, transfer: Transfer) -> None:
    transfer.source.view().to_hbm_view(ctx.tdma, transfer.target.view_mut())


@device
def two_vrf_chain(
    ctx: Context, x: Rows, p: HbmTensor[i32, Chip, m["B"]], q: HbmTensor[i32, Chip, m["B"]]
) -> HbmTensor[i32, Chip, m["A, B"]]:
    """`((x + p) · q) + p` with p and q in two VRF tensors: each Vector Engine stage must read its own."""

    def to_vrf(t):
        dm = t.to_dm(ctx.tdma, Cluster, Slice, m["B"])
        return ctx.sub.begin(dm.view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).to_vrf(m["B"])

    vrf1, vrf2 = to_vrf(p), to_vrf(q)
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    out = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["B"])
        .collect(m["1"], m["B"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, vrf1)
        .vector_fxp(FxpBinaryOp.MulInt, vrf2)
        .vector_clip(ClipBinaryOpI32.AddFxp, vrf1)
        .vector_final()
        .commit_trim(m["B"])
        .commit(m["B"])
    )
    return out.to_hbm(ctx.tdma, m["A, B"])
