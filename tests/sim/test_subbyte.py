"""4-bit tensors (i4, f4e2m1) on the NPU path: packed two per byte in device HBM and in DM, element 2k in the
low nibble of byte k (upstream's order), moved by DMA and walked by the sequencers a byte at a time.

Every kernel here also runs in the differential harness; these tests add numpy oracles, the packed device
bytes, and the simulator's write of a byte with one live nibble (a padded axis of odd live size), which must
keep the other."""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt import dtypes
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.lir import Buffer
from furiosa_opt.sim.memory import Memories
from furiosa_opt.sim.tensor_unit import _read, _write

A, B, Q, X, Y = axes(A=256, B=64, Q=4, X=15, Y=4)
Chip, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def i4_round_trip(ctx: Context, x: HbmTensor[i4, Chip, m["A, B"]]) -> HbmTensor[i4, Chip, m["A, B"]]:
    """HBM → DM → DM with the element's 16-element runs reordered → HBM."""
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    moved = dm.to_dm(ctx.tdma, m["A"], m["B / 16 % 2, B / 32, B % 16"])
    return moved.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def f4_round_trip(ctx: Context, x: HbmTensor[f4e2m1, Chip, m["A, B"]]) -> HbmTensor[f4e2m1, Chip, m["A, B"]]:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["B"])
    moved = dm.to_dm(ctx.tdma, m["A"], m["B / 16 % 2, B / 32, B % 16"])
    return moved.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def i4_odd_run(ctx: Context, x: HbmTensor[i4, Chip, m["A, Y, X # 16"]]) -> HbmTensor[i4, Chip, m["A, Y, X # 16"]]:
    """An odd live run (X = 15) padded to whole bytes: the DMAs move the padded run, the commit writes the
    byte holding X = 14 and the padding cell X = 15 without changing the padding."""
    source = x.to_dm(ctx.tdma, Cluster, m["A"], m["Y, X # 16"])
    stream = ctx.main.begin(source.view()).fetch(m["Y"], m["X # 16"]).collect(m["Y"], m["X # 64"])
    return stream.commit_trim(m["X # 16"]).commit(m["Y, X # 16"]).to_hbm(ctx.tdma, m["A, Y, X # 16"])


def _codes(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == i4:
        return rng.integers(-8, 8, shape, dtype=np.int8)
    return rng.integers(0, 16, shape, dtype=np.uint8).view(f4e2m1.storage)


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(("kernel", "dtype"), [(i4_round_trip, i4), (f4_round_trip, f4e2m1)])
def test_round_trip_through_dm(kernel, dtype, on):
    values = _codes(dtype, (A.size, B.size), seed=1)
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(values, dtype, m["A, B"]).to_hbm(ctx.pdma)
        out = launch_(kernel, ctx, x)
        got = out.to_host(ctx.pdma)
    np.testing.assert_array_equal(got.to_numpy().view(np.uint8), values.view(np.uint8))
    assert got.to_buf() == dtypes.pack(values, dtype)


def test_device_memory_holds_the_packed_bytes():
    """Under the NPU backend a 4-bit HBM tensor takes half a byte per element on the device, low nibble first."""
    values = np.array([1, -2, 3, -4, 5, -6, 7, -8] * 2, dtype=np.int8)
    with backend("npu"), Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(values, i4, m["Y, Q"]).to_hbm(ctx.pdma)
        device = hbm.data.device_bytes()
        assert device.tobytes() == bytes([0xE1, 0xC3, 0xA5, 0x87] * 2)
        np.testing.assert_array_equal(hbm.to_host(ctx.pdma).into_vec(), values)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_an_odd_run_padded_to_whole_bytes(on):
    live = _codes(i4, (A.size, Y.size, X.size), seed=2)
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(live, i4, m["A, Y, X # 16"]).to_hbm(ctx.pdma)
        got = launch_(i4_odd_run, ctx, x).to_host(ctx.pdma).into_vec().reshape(A.size, Y.size, 16)
    np.testing.assert_array_equal(got[..., : X.size], live)
    np.testing.assert_array_equal(got[..., X.size], 0)


def test_a_half_byte_write_keeps_the_other_nibble():
    """The simulator's commit of a byte with one live 4-bit position merges into the byte in DM."""
    memories = Memories((Buffer("T0", "", "sram", "i4", [], 0, 8, 0, -1),), {})
    memories.files["sram"][:] = 0xBB
    values = np.tile(np.arange(-8, 8, dtype=np.int8), (memories.files["sram"].shape[0], 1))
    live = np.arange(16) != 15
    _write(memories, "sram", 0, ((8,), (1,)), i4, values, live)
    row = memories.files["sram"][0]
    assert row[:7].tobytes() == dtypes.pack(values[0, :14], i4)
    assert row[7] == 0xB0 | (6 & 0xF)  # position 14 (value 6) written, position 15's nibble kept
    np.testing.assert_array_equal(_read(memories, "sram", 0, ((8,), (1,)), i4, live)[0], np.where(live, values[0], 0))


def test_the_fetch_walks_bytes():
    """The fetch's innermost entry steps one byte over half as many steps as the packet has elements."""
    result = compile_kernel(i4_odd_run)
    assert result.ok, result.diagnostics
    (command,) = [c for c in result.lir.commands if c.kind == "exec"]
    assert [(e.size, e.stride) for e in command.fetch.packet][-1] == (8, 1)
    assert [(e.size, e.stride) for e in command.commit.packet][-1] == (8, 1)
    dmas = [c.dma for c in result.lir.commands if c.kind == "dma"]
    assert all(dma.packet % 8 == 0 for dma in dmas)  # the padded run: 16 codes = 8 bytes per (A, Y) row
