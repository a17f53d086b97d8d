"""Relayout as numpy views against the index maps they replace: the same source position lands at every
destination position (padding stays the fill), for transposes, splits, padding, broadcasts and trims,
and for random layout pairs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis_profiles import examples
from mapping_strategies import layout_pairs

from furiosa_opt.mapping import axes, m
from furiosa_opt.mapping.relayout import _decoded_index, check_relayout
from furiosa_opt.mapping.views import plan, regrid


def same_as_index(src, dst, broadcast=True, drop=False):
    check_relayout(src.factors, dst.factors, broadcast, drop)
    view = plan(src.factors, dst.factors)
    assert view is not None, f"{src} → {dst} is expressible as views"
    got = view.apply(np.arange(src.size, dtype=np.int64), fill=-1)
    assert np.array_equal(got, _decoded_index(src.factors, dst.factors))
    return got


A, B, C = axes(A=256, B=8, C=6)


@pytest.mark.parametrize(
    ("src", "dst", "broadcast", "drop"),
    [
        ("A, B", "B, A", False, False),  # a transpose
        ("A, B", "A / 4 % 4, A / 16, A % 4, B", False, False),  # a split of A
        ("A % 4, A / 4, B", "A, B # 16", False, False),  # merge, then padding
        ("A / 8 # 64, A % 8, B", "B, A", False, False),  # source padding skipped
        ("A", "A, B", True, False),  # B broadcast
        ("B", "A / 32, B, A % 32", True, False),  # broadcast around the source
        ("A, B", "A", False, True),  # a trim: B read at 0
        ("A, B", "A, B % 4", False, True),  # a prefix of B
        ("C, B", "B # 9, C # 7", False, False),  # odd sizes, both sides padded
        ("1 # 4, A", "A, 1 # 2", False, False),  # pure padding factors
    ],
)
def test_views_move_like_the_index_map(src, dst, broadcast, drop):
    same_as_index(m[src], m[dst], broadcast, drop)


def test_a_batch_of_rows_moves_row_by_row():
    rows = np.arange(3 * 2048, dtype=np.int32).reshape(3, 2048)
    got = plan(m["A, B"].factors, m["B, A"].factors).apply(rows)
    assert np.array_equal(got, rows.reshape(3, 256, 8).transpose(0, 2, 1).reshape(3, 2048))


def test_composites_are_left_to_index_maps():
    assert plan(m["[B, A] # 2100"].factors, m["A, B"].factors) is None


@settings(max_examples=examples(80), deadline=None)
@given(layout_pairs())
def test_random_layout_pairs_move_like_the_index_map(pair):
    src, dst = pair
    same_as_index(src, dst, False)


P, T, H, U, W = axes(P=64, T=4, H=32, U=6, W=4)


@pytest.mark.parametrize(
    ("have", "want", "expressible"),
    [
        ("P # 128, T, H", "T # 512, H", True),  # a reshape of a broadcast state: copy 0 of 64
        ("P, T, H", "P / 8, P % 8, T, H", True),  # a split: every cell
        ("U, W", "W, U", False),  # digits of 4 and 6 do not nest
        ("T, H # 64", "T / 2, T % 2 # 128", False),  # a live count of 2 is not a whole digit of 64
    ],
)
def test_a_layout_relabelling_the_same_positions_reads_its_live_cells_as_a_box(have, want, expressible):
    """`regrid`: the live cells of `want` read from the live grid of `have` (same positions, other axes),
    against the positions themselves: have's buffer holds its positions, so want's live cells must read
    the positions at want's live cells."""
    have_map, want_map = m[have], m[want]
    box = regrid(have_map.factors, want_map.factors)
    if not expressible:
        assert box is None
        return
    positions = np.arange(have_map.size, dtype=np.int64)
    grid = positions.reshape(tuple(f.e for f in have_map.factors))[tuple(slice(0, f.m) for f in have_map.factors)]
    cells = box.apply(grid)
    assert cells is not None and np.shares_memory(cells, positions)
    expected = positions.reshape(tuple(f.e for f in want_map.factors))[tuple(slice(0, f.m) for f in want_map.factors)]
    assert np.array_equal(cells, expected)
