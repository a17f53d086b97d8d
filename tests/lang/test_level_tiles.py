"""Tiles of the outer levels (`chip_tile`, `cluster_tile`, `slice_tile`) and the shuffles built from them
(`dm_cluster_shuffle`, `hbm_chip_shuffle`), on the CPU backend and the simulator, against numpy oracles.

Our own kernels (no upstream file): upstream's only shuffle example, `dm_chip_shuffle`, is ported in
`tests/upstream/test_cluster_chip_shuffle_slice.py`. Every kernel here moves a few hundred bytes per slice
or per chip. All inputs are distinct values, so a cell read from the wrong place cannot pass.
"""

from pathlib import Path

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

C, S, E = axes(C=2, S=64, E=32)  # DM: clusters, slices, bytes per slice (i8)
T = axes(T=128)  # 128 slices, halved by slice_tile
H, W = axes(H=16, W=32)  # HBM: H carries the chip digit, W the in-chip payload (i32)

One = m["1"]
DmLayout = (m["C"], m["S"], m["E"])  # cluster, slice, element


# ---- dm_cluster_shuffle -----------------------------------------------------------------------------


@device(chip=1)
def cluster_swap(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """Cluster 0 of the result holds cluster 1 of `x` and the other way round."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    return dm.view().dm_cluster_shuffle(ctx.tdma, [1, 0]).to_hbm(ctx.tdma, m["C, S, E"])


@device(chip=1)
def cluster_swap_explicit_dim(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """`cluster_swap` with upstream's const `CLUSTER_DIM` spelled out."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    return dm.view().dm_cluster_shuffle(ctx.tdma, [1, 0], 2).to_hbm(ctx.tdma, m["C, S, E"])


@device(chip=1)
def cluster_broadcast(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """Both clusters of the result hold cluster 1 of `x` (a source may be named twice)."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    return dm.view().dm_cluster_shuffle(ctx.tdma, [1, 1]).to_hbm(ctx.tdma, m["C, S, E"])


@device(chip=1)
def cluster_partial(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """A pattern shorter than the cluster level: cluster 0 gets cluster 1, cluster 1 is never written."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    return dm.view().dm_cluster_shuffle(ctx.tdma, [1], 2).to_hbm(ctx.tdma, m["C, S, E"])


def _cluster_input() -> np.ndarray:
    return (np.arange(C.size * S.size * E.size) % 251 - 125).astype(np.int8).reshape(C.size, S.size, E.size)


def _run_cluster(kernel, on: str) -> np.ndarray:
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(_cluster_input(), i8, m["C, S, E"]).to_hbm(ctx.pdma)
        return launch_(kernel, ctx, x).to_host(ctx.pdma).to_numpy()


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(
    ("kernel", "pattern"),
    [(cluster_swap, [1, 0]), (cluster_swap_explicit_dim, [1, 0]), (cluster_broadcast, [1, 1])],
    ids=["swap", "swap_explicit_dim", "broadcast"],
)
def test_dm_cluster_shuffle(kernel, pattern, on):
    values = _cluster_input()
    got = _run_cluster(kernel, on)
    assert got.dtype == np.int8 and got.shape == values.shape
    np.testing.assert_array_equal(got, values[pattern])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_dm_cluster_shuffle_short_pattern(on):
    """The named target gets its source; the unnamed cluster is never written and reads as a fresh DM tensor
    does, zero (`DmTensor.new` zero-fills on the CPU backend; the compiled kernel clears it)."""
    values = _cluster_input()
    got = _run_cluster(cluster_partial, on)
    np.testing.assert_array_equal(got[0], values[1])
    np.testing.assert_array_equal(got[1], np.zeros_like(values[1]))


@device(chip=1)
def short_pattern_over_dead_dm(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """`cluster_partial` after a DM tensor has died: the shuffle's fresh tensor is placed where `scratch`
    was, so without a clear its unwritten cluster would hold what `scratch` held."""
    scratch = x.to_dm(ctx.tdma, *DmLayout)
    dm = scratch.to_dm(ctx.tdma, m["S"], m["E"])  # the last use of `scratch`
    return dm.view().dm_cluster_shuffle(ctx.tdma, [1], 2).to_hbm(ctx.tdma, m["C, S, E"])


def _clears(kernel) -> list:
    """The memsets stage 2 added to clear fresh DM tensors (a `memset` command made by a `dm_new` op)."""
    compiled = compile_kernel(kernel)
    return [c for c in compiled.lir.commands if c.kind == "memset" and compiled.visa.ops[c.op].opcode == "dm_new"]


def test_short_pattern_fresh_tensor_reuses_dead_dm_and_is_cleared():
    """The premise of the next test: the shuffle's fresh DM tensor takes the dead `scratch`'s address, and
    stage 2 clears it before the shuffle writes cluster 0, because cluster 1 is read but never written."""
    lir = compile_kernel(short_pattern_over_dead_dm).lir
    sram = [b for b in lir.buffers if b.memory == "sram"]
    assert len(sram) == 3
    scratch, _, fresh = sorted(sram, key=lambda b: b.first)
    assert scratch.last < fresh.first and fresh.address == scratch.address
    (clear,) = _clears(short_pattern_over_dead_dm)
    assert clear.outputs == [fresh.name] and clear.index == fresh.first
    assert clear.fill.pattern == [0]  # the zero byte, repeated
    line = int(clear.loc.rsplit(":", 1)[1])  # where the tensor is made: the shuffle's line
    assert "dm_cluster_shuffle(ctx.tdma, [1], 2)" in Path(__file__).read_text().splitlines()[line - 1]


def test_fully_written_fresh_tensors_are_not_cleared():
    """A shuffle that names every cluster writes every cell before the tensor is read: no clear, no cost."""
    assert _clears(cluster_swap) == [] and _clears(cluster_broadcast) == []


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_dm_cluster_shuffle_short_pattern_over_dead_dm(on):
    values = _cluster_input()
    got = _run_cluster(short_pattern_over_dead_dm, on)
    np.testing.assert_array_equal(got[0], values[1])
    np.testing.assert_array_equal(got[1], np.zeros_like(values[1]))  # not the dead `scratch`'s bytes


# ---- hbm_chip_shuffle -------------------------------------------------------------------------------

Chip4, Elem4 = m["H % 4"], m["H / 4, W"]  # the chip is the innermost digit of H
Chip2, Elem2 = m["H / 8"], m["H % 8, W"]


@device(chip=4)
def hbm_chip_permute_tdma(ctx: Context, x: HbmTensor[i32, Chip4, Elem4]) -> HbmTensor[i32, Chip4, Elem4]:
    """Chip `t` of the result holds chip `[2, 0, 3, 1][t]` of `x`, moved on the tensor DMA."""
    return x.view().hbm_chip_shuffle(ctx.tdma, [2, 0, 3, 1])


@device(chip=2)
def hbm_chip_swap_pdma(ctx: Context, x: HbmTensor[i32, Chip2, Elem2]) -> HbmTensor[i32, Chip2, Elem2]:
    """The two chips' halves swap places, moved on the PCIe DMA, with `CHIP_DIM` spelled out."""
    return x.view().hbm_chip_shuffle(ctx.pdma, [1, 0], 2)


def _hbm_input() -> np.ndarray:
    return (np.arange(H.size * W.size, dtype=np.int32) * 7 - 1000).reshape(H.size, W.size)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_hbm_chip_shuffle_tdma(on):
    values = _hbm_input()
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(values, i32, m["H, W"]).to_hbm(ctx.pdma, Chip4, Elem4)
        got = launch_(hbm_chip_permute_tdma, ctx, x).to_host(ctx.pdma, m["H, W"]).to_numpy()
    split = values.reshape(H.size // 4, 4, W.size)  # H / 4, H % 4 (the chip), W
    np.testing.assert_array_equal(got, split[:, [2, 0, 3, 1]].reshape(H.size, W.size))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_hbm_chip_shuffle_pdma(on):
    values = _hbm_input()
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(values, i32, m["H, W"]).to_hbm(ctx.pdma, Chip2, Elem2)
        got = launch_(hbm_chip_swap_pdma, ctx, x).to_host(ctx.pdma, m["H, W"]).to_numpy()
    np.testing.assert_array_equal(got, np.concatenate([values[8:], values[:8]]))


def test_hbm_chip_shuffle_is_one_move_per_target_on_its_dma():
    for kernel, dma, count in [(hbm_chip_permute_tdma, "tdma", 4), (hbm_chip_swap_pdma, "pdma", 2)]:
        result = compile_kernel(kernel)
        assert result.ok, result.diagnostics
        moves = [line for line in result.visa_text.splitlines() if line.startswith("to_hbm_view")]
        assert len(moves) == count and all(f"ctx={dma}" in line for line in moves)


# ---- chip_tile on an HBM view -----------------------------------------------------------------------


@device(chip=4)
def hbm_chip_halves(ctx: Context, x: HbmTensor[i32, Chip4, Elem4]) -> HbmTensor[i32, Chip4, Elem4]:
    """Chips 0-1 of `x` go to chips 2-3 of the result and chips 2-3 to chips 0-1 (two-chip tiles)."""
    out = HbmTensor.new(i32, Chip4, Elem4)
    low = x.view().chip_tile(0, m["H % 4"], 2, m["H % 4 = 2 # 4"])
    high = x.view().chip_tile(2, m["H % 4"], 2, m["H % 4 = 2 # 4"])
    low.to_hbm_view(ctx.tdma, out.view_mut().chip_tile(2, m["H % 4"], 2, m["H % 4 = 2 #{!} 4"]))
    high.to_hbm_view(ctx.tdma, out.view_mut().chip_tile(0, m["H % 4"], 2, m["H % 4 = 2 #{!} 4"]))
    return out


@device(chip=4)
def hbm_chip_digit_tile(ctx: Context, x: HbmTensor[i32, Chip4, Elem4]) -> HbmTensor[i32, Chip4, Elem4]:
    """The chip digit `H % 2` tiled alone: chips 0 and 2 (`H % 2 = 0`) of `x` go to chips 1 and 3, chips
    1 and 3 to chips 0 and 2."""
    out = HbmTensor.new(i32, Chip4, Elem4)
    even = x.view().chip_tile(0, m["H % 2"], 1, m["H / 2 % 2, 1 # 2"])
    odd = x.view().chip_tile(1, m["H % 2"], 1, m["H / 2 % 2, 1 # 2"])
    even.to_hbm_view(ctx.tdma, out.view_mut().chip_tile(1, m["H % 2"], 1, m["H / 2 % 2, 1 #{!} 2"]))
    odd.to_hbm_view(ctx.tdma, out.view_mut().chip_tile(0, m["H % 2"], 1, m["H / 2 % 2, 1 #{!} 2"]))
    return out


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(
    ("kernel", "chips"), [(hbm_chip_halves, [2, 3, 0, 1]), (hbm_chip_digit_tile, [1, 0, 3, 2])], ids=["halves", "digit"]
)
def test_hbm_chip_tile(kernel, chips, on):
    values = _hbm_input()
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(values, i32, m["H, W"]).to_hbm(ctx.pdma, Chip4, Elem4)
        got = launch_(kernel, ctx, x).to_host(ctx.pdma, m["H, W"]).to_numpy()
    split = values.reshape(H.size // 4, 4, W.size)
    np.testing.assert_array_equal(got, split[:, chips].reshape(H.size, W.size))


# ---- slice_tile and cluster_tile moved into view_mut() tiles ------------------------------------------


@device(chip=1)
def slice_halves_swap(ctx: Context, x: HbmTensor[i8, One, m["T, E"]]) -> HbmTensor[i8, One, m["T, E"]]:
    """Slices 0-63 and 64-127 swap, DM → DM: once tiled by the slice axis `T` with a raw start, once by the
    digit `T / 64`."""
    dm = x.to_dm(ctx.tdma, One, m["T"], m["E"])
    out = DmTensor.new(i8, One, One, m["T"], m["E"])
    low = dm.view().slice_tile(0, m["T"], 64, m["T = 64 # 128"])
    low.to_dm_view(ctx.tdma, out.view_mut().slice_tile(64, m["T"], 64, m["T = 64 #{!} 128"]))
    high = dm.view().slice_tile(1, m["T / 64"], 1, m["1 # 2, T % 64"])
    high.to_dm_view(ctx.tdma, out.view_mut().slice_tile(0, m["T / 64"], 1, m["1 #{!} 2, T % 64"]))
    return out.to_hbm(ctx.tdma, m["T, E"])


@device(chip=1)
def slice_tile_to_hbm(ctx: Context, x: HbmTensor[i8, One, m["T, E"]]) -> HbmTensor[i8, One, m["T, E"]]:
    """Slices 32-95 of a DM tensor go DM → HBM into rows 0-63 of the result, slices 96-127 and 0-31 into
    rows 64-127: the result is `x` rolled by 32 rows."""
    dm = x.to_dm(ctx.tdma, One, m["T"], m["E"])
    out = HbmTensor.new(i8, One, m["T, E"])
    middle = dm.view().slice_tile(32, m["T"], 64, m["T = 64 # 128"])
    middle.to_hbm_view(ctx.tdma, out.view_mut().tile(0, m["T"], 64, m["T = 64 #{!} 128, E"]))
    top = dm.view().slice_tile(96, m["T"], 32, m["T = 32 # 128"])
    top.to_hbm_view(ctx.tdma, out.view_mut().tile(64, m["T"], 32, m["T = 32 #{!} 128, E"]))
    bottom = dm.view().slice_tile(0, m["T"], 32, m["T = 32 # 128"])
    bottom.to_hbm_view(ctx.tdma, out.view_mut().tile(96, m["T"], 32, m["T = 32 #{!} 128, E"]))
    return out


@device(chip=1)
def cluster_tile_to_dm(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """The two clusters trade places through explicit one-cluster tiles, DM → DM."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    out = DmTensor.new(i8, One, *DmLayout)
    for target, source in enumerate([1, 0]):
        piece = dm.view().cluster_tile(source, m["C"], 1, m["1 # 2"])
        piece.to_dm_view(ctx.tdma, out.view_mut().cluster_tile(target, m["C"], 1, m["1 #{!} 2"]))
    return out.to_hbm(ctx.tdma, m["C, S, E"])


@device(chip=1)
def cluster_tile_to_hbm(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """Each DM cluster goes DM → HBM into the other cluster's rows of the result."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    out = HbmTensor.new(i8, One, m["C, S, E"])
    for target, source in enumerate([1, 0]):
        piece = dm.view().cluster_tile(source, m["C"], 1, m["1 # 2"])
        piece.to_hbm_view(ctx.tdma, out.view_mut().tile(target, m["C"], 1, m["1 #{!} 2, S, E"]))
    return out


@device(chip=1)
def cluster_slice_tile(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> HbmTensor[i8, One, m["C, S, E"]]:
    """A cluster tile cut again by a slice tile: the first 32 slices of cluster 0 go to the last 32 slices
    of cluster 1 and back; every other (cluster, 32-slice) block stays in place."""
    dm = x.to_dm(ctx.tdma, *DmLayout)
    out = DmTensor.new(i8, One, *DmLayout)
    moves = [((0, 0), (1, 32)), ((1, 32), (0, 0)), ((0, 32), (0, 32)), ((1, 0), (1, 0))]
    for (src_c, src_s), (dst_c, dst_s) in moves:
        piece = dm.view().cluster_tile(src_c, m["C"], 1, m["1 # 2"]).slice_tile(src_s, m["S"], 32, m["S = 32 # 64"])
        slot = out.view_mut().cluster_tile(dst_c, m["C"], 1, m["1 #{!} 2"])
        piece.to_dm_view(ctx.tdma, slot.slice_tile(dst_s, m["S"], 32, m["S = 32 #{!} 64"]))
    return out.to_hbm(ctx.tdma, m["C, S, E"])


def _slice_input() -> np.ndarray:
    return (np.arange(T.size * E.size) % 253 - 126).astype(np.int8).reshape(T.size, E.size)


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize(("kernel", "shift"), [(slice_halves_swap, 64), (slice_tile_to_hbm, -32)], ids=["dm", "hbm"])
def test_slice_tile(kernel, shift, on):
    values = _slice_input()
    with backend(on) as launch_, Context.acquire() as ctx:
        x = HostTensor.from_numpy(values, i8, m["T, E"]).to_hbm(ctx.pdma)
        got = launch_(kernel, ctx, x).to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(got, np.roll(values, shift, axis=0))


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize("kernel", [cluster_tile_to_dm, cluster_tile_to_hbm], ids=["dm", "hbm"])
def test_cluster_tile(kernel, on):
    values = _cluster_input()
    np.testing.assert_array_equal(_run_cluster(kernel, on), values[[1, 0]])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_cluster_tile_then_slice_tile(on):
    values = _cluster_input()
    expected = values.copy()
    expected[1, 32:], expected[0, :32] = values[0, :32], values[1, 32:]
    np.testing.assert_array_equal(_run_cluster(cluster_slice_tile, on), expected)


def test_tile_types():
    """Read tiles pad with Top padding, write tiles with Bottom padding, on every level."""
    dm = DmTensor.new(i8, One, *DmLayout)
    assert dm.view().cluster_tile(1, m["C"], 1).params[1] == m["1 # 2"]
    assert dm.view_mut().cluster_tile(1, m["C"], 1).params[1] == m["1 #{!} 2"]
    assert dm.view().slice_tile(8, m["S"], 16).params[2] == m["S = 16 # 64"]
    assert dm.view_mut().slice_tile(8, m["S"], 16).params[2] == m["S = 16 #{!} 64"]
    hbm = HbmTensor.new(i32, Chip4, Elem4)
    assert hbm.view().chip_tile(3, m["H % 4"], 1).params[0] == m["1 # 4"]
    assert hbm.view_mut().chip_tile(3, m["H % 4"], 1).params[0] == m["1 #{!} 4"]
