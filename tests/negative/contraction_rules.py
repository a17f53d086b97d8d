from furiosa_opt import *

A, K, R = axes(A=256, K=64, R=4)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]


def _operands(ctx, x, w, stream_dtype_flit):
    dm, wdm = x.to_dm(ctx.tdma, Cluster, Slice, m["K"]), w.to_dm(ctx.tdma, Cluster, Slice, m["K"])
    trf = ctx.sub.begin(wdm.view()).fetch(m["1"], m["K"]).collect(m["K / 16"], m["K % 16"]).to_trf(m["1"], m["K"])
    flit = stream_dtype_flit
    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["K"]).collect(m["K / {flit}"], m["K % {flit}"])
    return stream, trf


@device
def operands(ctx: Context, x: HbmTensor[i8, Chip, m["A, K"]], w: HbmTensor[bf16, Chip, m["A, K"]]) -> None:
    stream, trf = _operands(ctx, x, w, 32)
    stream.contract_outer(trf, m["K / 32"], m["K % 32"])  # refused[visa]: contraction-operands


@device
def flit(ctx: Context, x: HbmTensor[bf16, Chip, m["A, K"]], w: HbmTensor[bf16, Chip, m["A, K"]]) -> None:
    stream, trf = _operands(ctx, x, w, 16)
    stream.contract_outer(trf, m["K / 32"], m["K / 16 % 2, K % 8, 2"])  # refused[visa]: contract-outer-flit


@device
def tiling_not_innermost(
    ctx: Context, x: HbmTensor[bf16, Chip, m["A, K"]], w: HbmTensor[bf16, Chip, m["A, K"]]
) -> None:
    stream, trf = _operands(ctx, x, w, 16)
    stream.contract_outer(trf, m["R, K / 32"], m["K % 32"])  # refused[visa]: contract-outer-time
