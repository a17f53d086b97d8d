"""Port of upstream `to_vrf_assertions`: the per-slice capacity of the vector register file (8 KiB).

`to_vrf_at_capacity` stores 2048 i32 values (8 KiB) as one slice's element: the largest legal store.
(Upstream's docs say every slice keeps a copy; with `Slice = 1 # 256` only slice 0 of cluster 0 is live
and the others are padding, but each slice's VRF element is still 8 KiB, which is what the rule counts.)

Upstream's module docs pair it with two examples of a generic `store` helper: 2048 values (accepted) and
4096 values (16 KiB, a `compile_fail` example). That refused program is also a fixture of the
refused-program suite, `tests/negative/upstream_to_vrf_assertions.py`. Upstream's test only launches the
kernel; ours also runs the two doc examples on the CPU backend and checks what the VRF holds.
"""

import numpy as np
import pytest

from furiosa_opt import *

A = axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def to_vrf_at_capacity(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> None:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["A"])
    ctx.sub.begin(dm.view()).fetch(m["1"], m["A"]).fetch_cast(i32).collect(m["A / 8"], m["A % 8"]).to_vrf(m["A"])


def test_to_vrf_at_capacity():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m["A"]).to_hbm(ctx.pdma)
        assert launch(to_vrf_at_capacity, ctx, input) is None


def store(ctx: Context, values: np.ndarray, axis: Mapping) -> VrfTensor:
    """Upstream's doc helper `store`: a whole-vector i32 stream on every slice, collected 8 values per
    flit and stored to the VRF; here it also builds the DM tensor the doc example begins on."""
    dm = HostTensor.from_numpy(values, i32, axis).to_hbm(ctx.pdma).to_dm(ctx.tdma, Cluster, Slice, axis)
    return ctx.sub.begin(dm.view()).fetch(m["1"], axis).collect(m["{axis} / 8"], m["{axis} % 8"]).to_vrf(axis)


def test_doc_example_fills_the_file_exactly():
    values = np.random.default_rng(7).integers(-(2**31), 2**31, size=2048, dtype=np.int32)
    with Context.acquire() as ctx:
        vrf = store(ctx, values, m["A"])
    held = vrf.values().reshape(2 * 256, 2048)  # [Cluster, Slice] outermost, then each slice's 8 KiB
    assert held.dtype == np.int32
    np.testing.assert_array_equal(held[0], values)  # the one live slice holds the vector in order
    assert not held[1:].any()  # padding slices: zero, as `values()` documents


def test_doc_example_twice_the_file_is_refused():
    B = axes(A=4096)  # upstream's second doc example redeclares `A = 4096`
    with Context.acquire() as ctx, pytest.raises(VerifyError) as caught:
        store(ctx, np.zeros(4096, dtype=np.int32), m["B"])
    assert caught.value.rule == "vrf-capacity"
    # upstream: "VRF data must fit the vector register file (8192 bytes per slice)"
    assert "VRF data must fit the VRF (8192 bytes per slice)" in caught.value.message
    assert "16384 bytes" in caught.value.message
