"""Upstream `negative/contract_outer_assertions.rs`, module `trf_mapping`: TRF stores whose Lane is not
the outermost Time axes or whose Element is not the rest of `[Time, Packet]` (legal twins: `valid_mapping`
and `valid_unit_time_lane` in `tests/upstream/test_contract_outer_assertions.py`).

Upstream's messages: "`to_trf` lane mismatch: time_outer != Lane: A != E / 4", "`to_trf` element
mismatch: [time_inner, Packet] != Element: B != A, C" and "Lane::SIZE (4) does not divide Time::SIZE (6)";
ours are the same (the lane-time one prefixed with `to_trf:`), mappings shown in backquotes."""

from furiosa_opt import *

A, B, C, D, E, F, R, T, U, V = axes(A=8, B=64, C=128, D=64, E=32, F=6, R=8, T=5, U=3, V=2)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
Lane = m["R"]


@device(chip=1)
def invalid_lane_mapping(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], _output: HbmTensor[i32, Chip, m["A, 1 # 8"]]
) -> None:
    trf_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A, B / 32"], m["B % 32"])
        .to_trf(m["E / 4"], m["B"])  # refused[visa]: trf-lane-mismatch
    )


@device(chip=1)
def invalid_mapping(
    ctx: Context,
    _input: HbmTensor[i8, Chip, m["A, B"]],
    input_trf: HbmTensor[i8, Chip, m["R, B"]],
    _output: HbmTensor[i32, Chip, m["A, 1 # 8"]],
) -> None:
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, B"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["R"], m["B"])
        .fetch_cast(i8)
        .collect(m["R, B / 32"], m["B % 32"])
        .to_trf(Lane, m["A, C"])  # refused[visa]: trf-element-mismatch
    )


@device(chip=1)
def invalid_lane_not_divisible_by_time(ctx: Context, input_trf: HbmTensor[i8, Chip, m["F, E"]]) -> None:
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["F, E"])
    (
        ctx.sub.begin(trf_dm.view())
        .fetch(m["F"], m["E"])
        .fetch_cast(i8)
        .collect(m["F"], m["E"])
        .to_trf(m["R / 2"], m["F, E"])  # refused[visa]: trf-lane-time
    )
