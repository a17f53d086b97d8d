"""The CPU backend's read and write of a view at a window (`cpu.window_read`, `cpu.window_write`): one
block reads its live cells alone, as the view's grid, whatever strides the buffer has (a constant's stride-0
array included), and writes its live cells alone, leaving every other cell as it was; a grid's values hold
its padding value everywhere else, bit for bit (bfloat16 included). The oracle is numpy slicing and
`np.full` over the view's positions."""

import ml_dtypes
import numpy as np
import pytest

from furiosa_opt.backend import cpu
from furiosa_opt.mapping import axes, m
from furiosa_opt.mapping.views import live_cells

R, C = axes(R=6, C=8)


@pytest.mark.parametrize("view", ["R, C", "1 # 6, C", "R # 8, C % 4 # 8", "2 # 3, C # 16"])
@pytest.mark.parametrize("made", ["array", "constant"])
def test_one_block_reads_the_live_cells_at_its_window(view, made):
    factors = m[view].factors
    element, window = 400, 37
    values = np.arange(element, dtype=np.int32) if made == "array" else np.full(element, 9, np.int32)
    buf = cpu.Buf(values) if made == "array" else cpu.constant(9, np.dtype(np.int32), element)
    live = live_cells(factors)
    positions = values[window : window + m[view].size]
    padded = np.zeros(m[view].size, np.int32)
    padded[: len(positions)] = positions
    expected = padded.reshape(live.shape)[live.take]
    got = cpu.window_read(buf, 1, element, window, factors)
    assert got.layout == factors and np.array_equal(got.base, expected)
    assert np.array_equal(got.values(), np.where(_live_mask(live), padded.reshape(live.shape), 0).reshape(-1))


def _live_mask(live) -> np.ndarray:
    mask = np.zeros(live.shape, bool)
    mask[live.take] = True
    return mask


@pytest.mark.parametrize("view", ["R, C", "1 # 6, C", "R # 8, C % 4 # 8", "2 # 3, C # 16"])
@pytest.mark.parametrize("in_place", [False, True])
def test_one_block_writes_the_live_cells_at_its_window(view, in_place):
    factors = m[view].factors
    element, window = 400, 37
    before = np.arange(element, dtype=np.int32)
    base = cpu.Buf(before.copy())
    src = cpu.Buf(-np.arange(1, m[view].size + 1, dtype=np.int32))
    live = live_cells(factors)
    mask = _live_mask(live).reshape(-1)
    expected = before.copy()
    positions = window + np.flatnonzero(mask)
    expected[positions] = src.base[mask]
    got = cpu.window_write(base, 1, element, window, factors, src, in_place)
    assert np.array_equal(got.values(), expected)
    assert np.array_equal(base.values(), expected if in_place else before)
    assert got.base.flags.owndata and got.base.flags.writeable  # a later write may go into it in place


def test_a_write_into_a_constant_copies_it_into_memory_of_its_own():
    factors = m["R, C"].factors
    base = cpu.constant(5, np.dtype(ml_dtypes.bfloat16), 100)
    src = cpu.Buf(np.arange(R.size * C.size, dtype=np.float32).astype(ml_dtypes.bfloat16))
    got = cpu.window_write(base, 1, 100, 10, factors, src)
    expected = np.full(100, 5, np.float32).astype(ml_dtypes.bfloat16)
    expected[10:58] = src.base
    assert got.values().tobytes() == expected.tobytes()
    assert got.base.flags.owndata and got.base.flags.writeable and not any(base.base.strides)


FLOATS = [0.0, -0.0, 1.5, float("nan")]


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [(ml_dtypes.bfloat16, f) for f in FLOATS] + [(np.float32, f) for f in FLOATS] + [(np.int16, 0), (np.int16, -3)],
)
def test_a_grid_holds_its_padding_value_bit_for_bit(dtype, fill):
    factors = m["R # 8, C % 4 # 8"].factors
    live = live_cells(factors)
    grid = np.arange(live.count, dtype=np.float32).astype(dtype).reshape([t.stop for t in live.take])
    buf = cpu.Buf(grid, layout=factors, fill=np.asarray(fill).astype(dtype)[()])
    expected = np.full(live.shape, fill, dtype=np.float32).astype(dtype)
    expected[live.take] = grid
    assert buf.values().tobytes() == expected.reshape(-1).tobytes()


def test_blocks_read_and_write_their_live_cells_bit_for_bit():
    """Several blocks (outer > 1) of bfloat16 bit patterns, NaNs and subnormals among them, move unchanged."""
    factors = m["R # 8, C % 4 # 8"].factors
    live = live_cells(factors)
    outer, element, window, size = 3, 100, 5, m["R # 8, C % 4 # 8"].size
    rng = np.random.default_rng(5)
    values = rng.integers(0, 1 << 16, outer * element, dtype=np.uint16)
    src = rng.integers(0, 1 << 16, outer * size, dtype=np.uint16)
    positions = np.flatnonzero(_live_mask(live).reshape(-1))

    read = cpu.window_read(cpu.Buf(values.view(ml_dtypes.bfloat16)), outer, element, window, factors)
    expected = np.zeros((outer, size), np.uint16)
    expected[:, positions] = values.reshape(outer, element)[:, window + positions]
    assert np.array_equal(read.values().view(np.uint16), expected.reshape(-1))

    base = cpu.Buf(values.copy().view(ml_dtypes.bfloat16))
    written = cpu.window_write(base, outer, element, window, factors, cpu.Buf(src.view(ml_dtypes.bfloat16)))
    expected = values.copy().reshape(outer, element)
    expected[:, window + positions] = src.reshape(outer, size)[:, positions]
    assert np.array_equal(written.values().view(np.uint16), expected.reshape(-1))
    assert np.array_equal(base.values().view(np.uint16), values)  # not in place: the base is unchanged
