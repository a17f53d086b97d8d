"""Relayout index maps: the oracle values of spec/algebra.md §3.3, error cases, and properties against a
brute-force search over cells."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis_profiles import examples
from mapping_strategies import layout_pairs

from furiosa_opt.mapping import MappingError, axes, m
from furiosa_opt.mapping.relayout import relayout_index


def move(values, src, dst, allow_broadcast=True):
    index = relayout_index(src.factors, dst.factors, allow_broadcast)
    return np.where(index >= 0, np.asarray(values)[np.maximum(index, 0)], -1)


def test_broadcast_repeats_each_value():
    A, B = axes(A=512, B=4)
    out = move(np.arange(512), m["A"], m["A, B"])
    assert out.tolist() == [a for a in range(512) for _ in range(4)]


def test_transposes():
    K, N = axes(K=2, N=3)
    assert move([0, 1, 2, 10, 11, 12], m["K, N"], m["N, K"]).tolist() == [0, 10, 1, 11, 2, 12]
    A, B = axes(A=3, B=4)
    assert move(np.arange(12), m["[B, A] # 12"], m["A, B"]).tolist() == [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    A, B = axes(A=2, B=3)
    assert move([10, 11, 12, 20, 21, 22], m["A, B"], m["B, A"]).tolist() == [10, 20, 11, 21, 12, 22]
    A = axes(A=4)
    assert move([0, 1, 2, 3], m["A"], m["A % 2, A / 2"]).tolist() == [0, 2, 1, 3]


def test_chain_of_moves_and_relabel():  # spec/algebra.md §3.3 chain test, mapping.md §9.9
    A, B = axes(A=256, B=4096)
    a, b = np.meshgrid(np.arange(256), np.arange(4096), indexing="ij")
    host = (4096 * a + b).ravel()
    steps = [
        m["A, B"],
        m["A / 4 % 4, A / 16, A % 4, B"],
        m["A / 4 % 4, A % 4, B, A / 16"],
        m["A / 4 % 4, A / 2 % 2, B % 16, B / 16 % 16, B / 256, A % 2, A / 16"],
    ]
    values = host
    for src, dst in itertools.pairwise(steps):
        values = move(values, src, dst)
    digits = np.indices((4, 2, 16, 16, 16, 2, 16)).reshape(7, -1)
    c, d, e, f, g, h, i = digits
    assert np.array_equal(values, 4096 * (16 * i + 4 * c + 2 * d + h) + (256 * g + 16 * f + e))


def test_padding_of_the_destination_is_not_written():
    C = axes(C=5)
    out = move(np.arange(5) + 1, m["C"], m["C # 8"])
    assert out.tolist() == [1, 2, 3, 4, 5, -1, -1, -1]
    back = move(out, m["C # 8"], m["C"])
    assert back.tolist() == [1, 2, 3, 4, 5]


def test_resize_reads_a_prefix_and_modulo_wraps_as_a_broadcast():
    N = axes(N=2048)
    reread = relayout_index(m["N % 512"].factors, m["N / 512, N % 512"].factors)
    assert reread.tolist() == list(range(512)) * 4
    with pytest.raises(MappingError, match="broadcast"):
        relayout_index(m["N % 512"].factors, m["N"].factors, False)


@pytest.mark.parametrize(
    ("src", "dst", "broadcast", "message"),
    [
        ("A % 5, A / 5", "A % 3, A / 3", True, "incompatible decomposition of `A`"),
        ("A, B", "A", True, "source axis `B % 2` is not fully read"),
        ("A", "T, A", False, "`T % 4` would be broadcast"),
        ("A", "A, 3", False, "`3` would be broadcast"),
        ("A = 3", "A", False, "`A / 3 % 5` would be broadcast"),
        ("C = 3", "C", True, "reads beyond what the source holds"),
    ],
)
def test_refused_moves(src, dst, broadcast, message):
    A, B, C, T = axes(A=15, B=2, C=8, T=4)
    with pytest.raises(MappingError, match=message):
        relayout_index(m[src].factors, m[dst].factors, broadcast)


# ---- properties ------------------------------------------------------------------------------------


def _brute_force(src, dst):
    """For each destination position, the source position holding the same cell, by search."""
    where = {}
    for p in range(src.size):
        cell = src.cell(p)
        if cell.kind == "index":
            where[tuple(sorted(cell.index.items()))] = p
    out = []
    for p in range(dst.size):
        cell = dst.cell(p)
        out.append(where[tuple(sorted(cell.index.items()))] if cell.kind == "index" else -1)
    return out


@settings(max_examples=examples(60), deadline=None)
@given(layout_pairs())
def test_index_map_matches_a_search_and_its_inverse_restores_live_cells(pair):
    src, dst = pair
    forward = relayout_index(src.factors, dst.factors, False)
    assert forward.tolist() == _brute_force(src, dst)
    values = np.arange(src.size) + 100
    there = move(values, src, dst, False)
    back = move(there, dst, src, False)
    live = np.array([src.cell(p).kind == "index" for p in range(src.size)])
    assert np.array_equal(back[live], values[live])
    assert (back[~live] == -1).all()
