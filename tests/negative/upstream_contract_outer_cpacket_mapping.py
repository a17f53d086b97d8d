"""Upstream `negative/contract_outer_assertions.rs`, module `cpacket_mapping`: `contract_outer` OutPackets
that are not `[packed innermost Time cells, the input Packet]` (legal twin: `valid_two_collect_flits` in
`tests/upstream/test_contract_outer_assertions.py`). The stream is i8 `Time = [A, B / 32]`, `Packet =
B % 32`; a 64-byte OutPacket packs the innermost 2 Time cells (`B / 32`) in front of that flit.

Upstream's messages: "`contract_outer`: inner flit of OutPacket must equal the input Packet" (the first
and third kernels) and "`contract_outer`: OutPacket's packed cells must equal the innermost 2 cells of
Time" (the second); ours say the same and also show the two mappings compared."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
Lane = m["R"]


@device(chip=1)
def invalid_mapping(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["D"])  # refused[visa]: contract-outer-flit
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_one_collect_flit_no_padding(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["A / 4, B % 32"])  # refused[visa]: contract-outer-packed
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def invalid_one_collect_flit_no_padding_reversed(
    ctx: Context,
    input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    output: HbmTensor[i32, Chip, m["A, R # 8"]],
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    trf = (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["B"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .contract_outer(trf, m["A"], m["B % 32, A / 4"])  # refused[visa]: contract-outer-flit
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R # 8"])
        .commit_trim(m["R # 8"])
        .commit(m["A, R # 8"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
