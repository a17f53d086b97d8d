"""Upstream `furiosa-opt-examples/src/negative/switch_assertions.rs`, module `packet`: two collects the compiler
must refuse. `packet_mismatch` collects packet `A # 32` from a stream whose packet is `B`;
`collect_time_mismatch` collects 32 bf16 (two 32-byte flits) without moving the outer flit into time.
`tests/negative/collect_packet_mismatch.py` and `collect_time_mismatch.py` check the same two rules on other
kernels (a reordered packet, no `fetch_cast`, other axes), so these are ported as written here.

Upstream's `negative/mod.rs` states that 17 of its `switch_assertions::invalid_*` fixtures (25 in all) still
compile upstream: its switch check is closed source, and the snapshot that lists which ones is not published.
Here every one is refused, and the rule that refuses it is the marker on its line. These two are not among the
`invalid_*` ones; upstream words their messages (`furiosa-opt-lower/src/verify/engine/collect.rs`) "Collect
packet mismatch" and "Collect time mismatch", and so do we."""

from furiosa_opt import *

A, B = axes(A=8, B=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def packet_mismatch(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]], output: HbmTensor[i8, Chip, m["A, B"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(i8)
        .collect(m["A"], m["A # 32"])  # refused[visa]: collect-packet-mismatch
        .commit_trim(m["A # 32"])
        .commit(m["A, B"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())


@device(chip=1)
def collect_time_mismatch(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A, B"]], output: HbmTensor[bf16, Chip, m["A, B % 16"]]
) -> None:
    input_dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    # 32 bf16 of B are 64 bytes, two flits: the legal collect moves the outer flit into time
    # (`m["A, B / 16"]`); keeping time `A` drops it.
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["A"], m["B"])
        .fetch_cast(bf16)
        .collect(m["A"], m["B % 16"])  # refused[visa]: collect-time-mismatch
        .commit_trim(m["B % 16"])
        .commit(m["A, B % 16"])
    )
    result.view().to_hbm_view(ctx.tdma, output.view_mut())
