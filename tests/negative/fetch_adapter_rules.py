"""Fetch-adapter rules (upstream `furiosa-opt-std/src/engine/fetch_adapter.rs` and `cast.rs`): the refused
twins of kernels in `tests/upstream/test_fetch_table_lookup.py` and `tests/upstream/test_contract_element_types.py`.

* `fetch_table_lookup` exists on the main context only (upstream implements it for `TuTensor<{ Tu::Main }, …>`,
  so a sub-context call does not compile); the f8e4m3 → bf16 decode on `ctx.sub` is refused.
* `fetch_zero_point_sub` takes a zero point inside the source type's range (`i8`: -128..=127; upstream asserts
  it at run time); 200 from an i8 stream is refused.
* An i9 stream is not materializable: upstream routes it only into `contract_outer`, so `commit_trim` on it
  does not compile.

The stages after each refused one depend on it and are not reported again.
"""

from furiosa_opt import *

A, K, R, Bf = axes(A=8, K=32, R=8, Bf=16)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def table_lookup_on_sub(ctx: Context, input: HbmTensor[f8e4m3, Chip, m["A, Bf"]]) -> HbmTensor[bf16, Chip, m["A, Bf"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, Bf"])
    decoded = (
        ctx.sub.begin(input_dm.view())
        .fetch(m["A"], m["Bf"])
        .fetch_table_lookup(bf16)  # refused[visa]: fetch-table-context
        .collect(m["A"], m["Bf"])
        .commit_trim(m["Bf"])
        .commit(m["A, Bf"])
    )
    return decoded.to_hbm(ctx.tdma, m["A, Bf"])


@device(chip=1)
def zero_point_out_of_range(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, K"]], input_trf: HbmTensor[i8, Chip, m["R, K"]]
) -> HbmTensor[i32, Chip, m["A, R"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K"])
    trf_dm = input_trf.to_dm(ctx.tdma, Cluster, Slice, m["R, K"])
    trf = (
        ctx.sub.begin(trf_dm.view()).fetch(m["R"], m["K"]).fetch_cast(i8).collect(m["R"], m["K"]).to_trf(m["R"], m["K"])
    )
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K"])
        .fetch_zero_point_sub(200, i9)  # refused[visa]: fetch-zero-point-range
        .collect(m["A"], m["K"])
        .contract_outer(trf, m["A"], m["K"])
        .contract_packet(m["1"])
        .contract_time(m["A"])
        .contract_lane(LaneMode.Interleaved, m["A"], m["R"])
        .commit_trim(m["R"])
        .commit(m["A, R"])
    )
    return result.to_hbm(ctx.tdma, m["A, R"])


@device(chip=1)
def i9_committed(ctx: Context, input: HbmTensor[i8, Chip, m["A, K"]]) -> HbmTensor[i8, Chip, m["A, K"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, K"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["K"])
        .fetch_zero_point_sub(3, i9)
        .collect(m["A"], m["K"])
        .commit_trim(m["K"])  # refused[visa]: not-materializable
        .commit(m["A, K"])
    )
    return result.to_hbm(ctx.tdma, m["A, K"])
