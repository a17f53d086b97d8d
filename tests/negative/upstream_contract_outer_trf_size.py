"""Upstream `negative/contract_outer_assertions.rs`, module `trf_size`: a TRF store of 8 lanes × 64 KiB
(legal twin: `valid_to_trf_full` in `tests/upstream/test_contract_outer_assertions.py`). Upstream: "TRF
data (524288 bytes = 8 lanes x 65536 bytes) exceeds the tensor register file capacity (65536 bytes)";
ours: the same numbers, "exceeds register file capacity (65536 bytes)" (upstream's lowering wording)."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def invalid_to_trf_full(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], _output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    trf_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .to_trf(m["A"], m["A, B, C"])  # refused[visa]: trf-capacity
    )
