"""The CPU backend's read of a view at a window (`cpu.window_read`): one block reads its live cells alone,
as the view's grid, whatever strides the buffer has (a constant's stride-0 array included); the oracle is
numpy slicing of the buffer's values over the view's positions."""

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
