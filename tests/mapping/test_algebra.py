"""split_at, carve, division, pad and tile views: the cases of spec/algebra.md §2 and §5."""

import pytest

from furiosa_opt.mapping import MappingError, PadKind, axes, m
from furiosa_opt.mapping.algebra import (
    carve,
    check_pad,
    divide_exact,
    divide_relaxed,
    is_padding,
    is_resize_of,
    pair,
    remove_padding,
    split_at,
    tile_view,
)
from furiosa_opt.mapping.parse import parse


def test_split_at_collect_cases():
    B = axes(B=16)
    assert split_at(m["B # 32"], 32) == (m["1"], m["B # 32"])
    B = axes(B=32)
    assert split_at(m["B"], 16) == (m["B / 16"], m["B % 16"])
    B = axes(B=56)
    outer, inner = split_at(m["B # 64"], 32)
    assert (outer, inner) == (m["B # 64 / 32"], m["B # 64 % 32"])
    assert pair(outer, inner) == m["B # 64"]
    R, A = axes(R=19, A=2)
    outer, inner = split_at(m["R # 24 % 4, A"], 4)
    assert outer == m["[R # 20] / 2 % 2"]
    assert inner == m["[R # 20] % 2, A"]
    A = axes(A=4)
    assert split_at(m["A # 8"], 4) == (m["1 # 2"], m["A"])
    A = axes(A=3)
    assert split_at(m["A # 8"], 4) == (m["1 # 2"], m["A # 4"])
    with pytest.raises(MappingError, match="does not divide"):
        split_at(m["A # 8"], 3)


def test_carve_cases():
    A, B, C = axes(A=4, B=2, C=8)
    assert carve(m["A, B, C"], m["A, C"]) == m["1 # 4, B, 1 # 8"]
    assert carve(m["A, B, C"], m["A, C"]).axis_names == {"B"}
    assert carve(m["A, B"], m["A"]).axis_names == {"B"}
    assert carve(m["A, B, C"], m["B"]) == m["A, 1 # 2, C"]
    assert is_padding(carve(m["A, B, C"], m["A, B, C"]))
    assert carve(m["A, B, C"], m["C % 4"]) == m["A, B, C / 4, 1 # 4"]
    with pytest.raises(MappingError, match="must be contained"):
        carve(m["A"], m["A, B"])
    for whole, piece in [("A, B, C", "A, C"), ("A, B, C", "B")]:
        assert carve(m[whole], m[piece]).size == m[whole].size


def test_divide_exact_runs_and_order():
    I, J, K = axes(I=32, J=32, K=64)
    terms = divide_exact(m["I, J / 8 % 4, K / 32"], m["I, J / 8 % 4"])
    assert [(t.dividend_stride, t.divisor_stride, t.resize, t.idents) for t in terms] == [
        (8, 4, 32, ("I",)),
        (2, 1, 4, ("J",)),
    ]
    terms = divide_exact(m["K / 32, I"], m["I"])
    assert [(t.dividend_stride, t.divisor_stride) for t in terms] == [(1, 1)]
    swapped = divide_exact(m["I, J / 8 % 4"], m["J / 8 % 4, I"])
    assert [t.divisor_stride for t in swapped] == [1, 32]  # not decreasing: order not preserved
    with pytest.raises(MappingError, match="missing"):
        divide_exact(m["I"], m["I, J"])
    A = axes(A=15)
    with pytest.raises(MappingError, match="incompatible"):
        divide_exact(m["A % 5, A / 5"], m["A % 3, A / 3"])


def test_divide_relaxed_residues():
    A, B, C = axes(A=4, B=2, C=8)
    division = divide_relaxed(m["A, B, C"], m["B, C"])
    assert division.dividend_residue == m["A, 1 # 16"]
    assert is_padding(division.divisor_residue)
    assert [(t.idents, t.dividend_stride, t.divisor_stride) for t in division.matched] == [
        (("B",), 8, 8),
        (("C",), 1, 1),
    ]


def test_resize_and_padding_helpers():
    N = axes(N=8)
    assert is_resize_of(m["N"], m["N # 32"])
    assert is_resize_of(m["N = 4"], m["N"])
    assert not is_resize_of(m["N / 2"], m["N"])
    assert remove_padding(m["1 # 4, N # 16"]) == m["N"]
    L1, B = axes(L1=100, B=128)
    assert remove_padding(m["L1 # 256, B % 64"]) == m["L1, B % 64"]


def test_pad_views():
    L1, L4, B = axes(L1=100, L4=300, B=128)
    check_pad(m["L1"], m["L1 # 256"])
    check_pad(m["L4, B % 64"], m["L4 # 512, B % 64"])
    with pytest.raises(MappingError, match="narrower"):
        check_pad(m["L1 # 256"], m["L1"])
    A, B = axes(A=4, B=3)
    with pytest.raises(MappingError, match="requested view"):
        check_pad(m["A, B"], m["A, B # 8"])


@pytest.mark.parametrize(
    ("axes_", "current", "index", "length", "hole", "expected"),
    [
        ({"A": 8, "B": 512}, "A, B", "B", 2, PadKind.TOP, "A, B = 2 # 512"),
        ({"A": 8, "B": 512}, "A, B", "B / 32", 2, PadKind.TOP, "A, B / 32 = 2 # 16, B % 32"),
        ({"A": 8, "B": 512}, "A, B", "B / 32", 1, PadKind.TOP, "A, 1 # 16, B % 32"),
        ({"A": 512, "B": 32}, "A, B", "B", 1, PadKind.TOP, "A, 1 # 32"),
        ({"A": 512, "B": 32}, "B, A", "B", 1, PadKind.BOTTOM, "1 #{!} 32, A"),
        ({"B": 8}, "B", "B", 4, PadKind.TOP, "B = 4 # 8"),
        ({"B": 8}, "B", "B", 4, PadKind.BOTTOM, "B = 4 #{!} 8"),
        ({"L": 768}, "L", "L % 96", 2, PadKind.TOP, "L / 96, L % 96 = 2 # 96"),
        ({"L": 768, "A": 4}, "L, A", "L / 256", 2, PadKind.TOP, "L / 256 = 2 # 3, L % 256, A"),
        ({"B": 528}, "B = 264 # 528", "B = 264 # 528", 132, PadKind.TOP, "B = 132 # 528"),
        ({"A": 8, "H": 4}, "A, H", "A", 1, PadKind.TOP, "1 # 8, H"),
        ({"A": 8, "H": 4}, "1 # 8, H", "H", 2, PadKind.TOP, "1 # 8, H = 2 # 4"),
        ({"A": 8, "H": 4}, "1 # 8, H", "H", 2, PadKind.BOTTOM, "1 # 8, H = 2 #{!} 4"),
        ({"D": 64}, "D", "D", 32, PadKind.TOP, "D = 32 # 64"),
        ({"D": 64}, "D", "D", 32, PadKind.BOTTOM, "D = 32 #{!} 64"),
    ],
)
def test_tile_views(axes_, current, index, length, hole, expected):
    declared = axes(**axes_)
    scope = {axis.name: axis for axis in (declared if isinstance(declared, tuple) else (declared,))}
    view = tile_view(parse(current, scope), parse(index, scope), length, hole)
    assert view == parse(expected, scope)
    assert view.size == parse(current, scope).size


def test_tile_view_keeps_kinds_apart_and_rejects_foreign_indices():
    A, B = axes(A=8, B=512)
    assert tile_view(m["A, B"], m["B"], 2, PadKind.TOP) != m["A, B = 2"]  # a narrower view is an unpad
    assert tile_view(m["A, B"], m["B"], 2, PadKind.BOTTOM) != tile_view(m["A, B"], m["B"], 2, PadKind.TOP)
    C = axes(C=4)
    with pytest.raises(MappingError, match="failed to split"):
        tile_view(m["A, B"], m["C"], 1, PadKind.TOP)


def test_a_padded_expression_split_across_mappings_pairs_back():
    """Upstream sums a composite's coordinates across a tensor's parameters: a stream whose time holds
    `C # 64 / 32` and whose packet holds `C # 64 % 32` is `C # 64` again, position 63 its padding."""
    C = axes(C=63)
    time, packet = m["C # 64 / 32"], m["C # 64 % 32"]
    assert pair(time, packet) == m["C # 64"]
    assert pair(time, packet).cell(63).padding == "top"
    assert (time, packet) == split_at(m["C # 64"], 32)
