"""Port of upstream `furiosa-opt-examples/src/memory_op.rs` and `tests/memory_op_tests.rs`.

Two memory moves without dedicated examples elsewhere: a DM → DM relayout of a tensor's element
(`DmTensor.to_dm`) and a `commit_view` into a tile of a wider destination axis whose remainder is
bottom padding (`#{!}`), which the commit never writes. Upstream's tests only launch the kernels; here
each also checks its output against what the kernel means.
"""

import numpy as np

from furiosa_opt import *

A, B = axes(A=256, B=4096)
Q, T = axes(Q=896, T=512)


@device(chip=1)
def dm_relayout(ctx: Context, hbm: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["A / 2, A % 2, B"]]:
    dm = hbm.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    # The slice level keeps its size: `A` and `1 # 2, A / 2` both span 256 slices.
    relaid = dm.to_dm(ctx.tdma, m["1 # 2, A / 2"], m["A % 2, B"])
    return relaid.to_hbm(ctx.tdma, m["A / 2, A % 2, B"])


QChip = m["1"]
QCluster = m["1 # 2"]
QSlice = m["T / 32 # 256"]
# Named because ruff reads a string inside an annotation as Python code, and `=` is not an operator there.
QInput = m["T, Q % 56 = 8"]


@device(chip=1)
def commit_view_bottom_pad(
    ctx: Context, input_hbm: HbmTensor[f32, QChip, QInput]
) -> HbmTensor[f32, QChip, m["T, Q % 56"]]:
    input = input_hbm.to_dm(ctx.tdma, QCluster, QSlice, m["T % 32, Q % 56 = 8"])
    result = DmTensor.new(f32, QChip, QCluster, QSlice, m["T % 32, Q % 56"])
    # An 8-wide chunk lands in the 56-wide destination axis; the other 48 positions are bottom padding
    # of the view, so the commit sequencer leaves them alone.
    (
        ctx.main.begin(input.view())
        .fetch(m["T % 32"], m["Q % 56 = 8"])
        .collect(m["T % 32"], m["Q % 56 = 8"])
        .commit_trim(m["Q % 56 = 8"])
        .commit_view(result.view_mut().tile(0, m["Q % 56"], 8, m["T % 32, Q % 56 = 8 #{!} 56"]))
    )
    return result.to_hbm(ctx.tdma, m["T, Q % 56"])


def test_dm_relayout():
    values = np.arange(256 * 4096, dtype=np.int32).reshape(256, 4096)  # element (a, b) holds 4096a + b
    with Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(values, i32, m["A, B"]).to_hbm(ctx.pdma, m["1"], m["A, B"])
        out = launch(dm_relayout, ctx, hbm)
        got = out.to_host(ctx.pdma, m["A, B"]).to_numpy()
    np.testing.assert_array_equal(got, values)  # two relayouts move values, never change them


def test_commit_view_bottom_pad():
    rng = np.random.default_rng(42)
    with Context.acquire() as ctx:
        host = HostTensor.rand(f32, m["T, Q % 56 = 8"], rng)
        input = host.to_hbm(ctx.pdma, QChip, m["T, Q % 56 = 8"])
        out = launch(commit_view_bottom_pad, ctx, input)
        got = out.to_host(ctx.pdma, m["T, Q % 56"]).to_numpy()

    # to_numpy spans every axis whole (Q = 896); the live cells are q < 8 in the input, q < 56 here.
    chunk = host.to_numpy()[:, :8]
    assert got.shape == (512, 896)
    np.testing.assert_array_equal(got[:, :8], chunk)
    # DmTensor.new is zero-filled (upstream's CPU backend: `Tensor::zeroed`); the padded cells stay so.
    np.testing.assert_array_equal(got[:, 8:56], np.zeros((512, 48), np.float32))
