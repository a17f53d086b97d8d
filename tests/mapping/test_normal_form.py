"""The canonical factor form: the normalisation table of spec/algebra.md §1.6, the book's equivalences,
and property tests against the independent per-position oracle (tests/mapping_oracle.py)."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from mapping_oracle import cell as oracle_cell
from mapping_oracle import padding_kinds
from mapping_strategies import POOL, SIZES, nodes

from furiosa_opt.mapping import Cell, axes, m
from furiosa_opt.mapping.algebra import split_at
from furiosa_opt.mapping.expr import Mapping, render
from furiosa_opt.mapping.factors import BC, Comp, Factor, SymAtom, canon, has_composite
from furiosa_opt.mapping.parse import parse

SCOPE = {axis.name: axis for axis in POOL}
# Found by test_every_cell_matches_the_oracle_and_normalisation_is_idempotent: a split of a split of a padded
# pair, whose second cut is ragged in a digit of the first split's composite.
SPLIT_OF_A_SPLIT = parse(
    "[[[A, C] #{!} 32 % 4, [A, C] #{!} 32 / 4] % 2, [[A, C] #{!} 32 % 4, [A, C] #{!} 32 / 4] / 2]", SCOPE
).node


def as_tuple(cell):
    if cell.kind == "index":
        return ("index", cell.index)
    return ("padding", cell.padding) if cell.kind == "padding" else ("oob",)


def test_normalisation_table():
    B = axes(B=512)
    assert m["B / 64, B % 64"].factors == m["B"].factors
    assert m["B / 64, B % 32, B / 32 % 2"].factors == (
        Factor(SymAtom("B", 512), 64, 8, 8),
        Factor(SymAtom("B", 512), 1, 32, 32),
        Factor(SymAtom("B", 512), 32, 2, 2),
    )
    A = axes(A=1024)
    assert m["A / 8 # 256"].factors == (Factor(SymAtom("A", 1024), 8, 128, 256),)
    assert m["A / 8 # 256, A % 8"] == m["A # 2048"]
    B = axes(B=4096)
    assert m["B / 2048 = 1 # 2, B % 2048"].factors == (Factor(SymAtom("B", 4096), 1, 2048, 4096),)
    A = axes(A=3)
    assert m["1 # 2, A"] == m["A # 6"]
    assert m["A = 1"].factors == m["A % 1"].factors == m["1"].factors == ()
    X = axes(X=1)
    assert m["X"].factors == ()
    B, A = axes(B=4, A=3)
    assert m["[B, A] # 12"] == m["B, A"]
    A = axes(A=3)
    assert m["A # 4 / 2, A # 4 % 2"].factors == m["A # 4"].factors
    B = axes(B=56)
    assert has_composite(m["B # 64 / 32"].factors) or m["B # 64 / 32"].factors[0].s == 32
    assert m["B # 64 / 32, B # 64 % 32"].factors == m["B # 64"].factors
    R = axes(R=19)
    assert m["R # 24 / 4, R # 24 % 4 / 2"] == m["R # 24 / 4, R # 24 / 2 % 2"]
    A = axes(A=15)
    assert m["A % 5, A / 5"] != m["A % 3, A / 3"]
    A, B = axes(A=2, B=3)
    padded = m["[A, B] # 7"].factors
    assert len(padded) == 1 and isinstance(padded[0].atom, Comp) and (padded[0].m, padded[0].e) == (6, 7)
    resized = m["[A, B] = 5"].factors
    assert len(resized) == 1 and (resized[0].m, resized[0].e) == (5, 5)
    A, B = axes(A=8, B=512)
    assert m["A, B / 32 = 2 # 16, B % 32"].factors == (
        Factor(SymAtom("A", 8), 1, 8, 8),
        Factor(SymAtom("B", 512), 1, 64, 512),
    )
    L, A = axes(L=768, A=4)
    assert m["L / 256 = 2 # 3, L % 256, A"].factors == (
        Factor(SymAtom("L", 768), 1, 512, 768),
        Factor(SymAtom("A", 4), 1, 4, 4),
    )


@pytest.mark.parametrize("text", ["A", "A, B", "A # 8, B", "B / 2, A", "[A, B] # 27", "A = 3 #{!} 6"])
def test_book_equivalences(text):
    A, B = axes(A=4, B=6)
    e = m[text]
    assert e == m[f"{text}, 1"] == m[f"1, {text}"]
    assert e == m[f"[{text}] / 1"] == m[f"[{text}] # {{e.size}}"] == m[f"[{text}] = {{e.size}}"]
    assert m[f"[{text}] % 1"] == m["1"]
    for n in range(1, e.size + 1):
        if e.size % n == 0:
            assert m[f"[{text}] / {n}, [{text}] % {n}"] == e
            outer, inner = split_at(e, n)
            assert inner.size == n and outer.size * n == e.size
            assert m["outer, inner"] == e
    assert m["[A, B] / 6"] == m["A"] and m["[A, B] % 6"] == m["B"]
    assert m["[A, B], A"] == m["A, [B, A]"]


def test_broadcast_composite_is_not_merged_across_different_pad_kinds():
    A = axes(A=8)
    assert m["1 # 2, A #{!} 16"] != m["A #{!} 32"]
    assert m["1 #{!} 2, A #{!} 16"] == m["A #{!} 32"]


def test_a_ragged_cut_keeps_the_digits_of_a_composite_together():
    """X = [Y % 4, Y / 4] with Y = [A, C] #{!} 32 reads Y's composite at two digits; cutting X by 2 is ragged
    in the second. Wrapping that digit alone in a new composite decoded Y's coordinate in two parts, each on
    its own: Top where the oracle has Y's Bottom padding, or a C past its size (Top) where it has a live cell."""
    mapping = Mapping.from_node(SPLIT_OF_A_SPLIT)
    # position 10: X's coordinate 0 + 2·10 = 20, Y's 20 // 8 + 4·(20 % 8) = 18, the first of Y's padding
    assert mapping.cell(10) == Cell("padding", padding="bottom")
    # position 24: X's coordinate 1 + 2·8 = 17, Y's 2 + 4·1 = 6, which is A = 1, C = 0
    assert mapping.cell(24) == Cell("index", index={"A": 1})
    check_against_the_oracle(SPLIT_OF_A_SPLIT)


@settings(max_examples=examples(600), deadline=None)
@given(nodes(4))
@example(SPLIT_OF_A_SPLIT)
def test_every_cell_matches_the_oracle_and_normalisation_is_idempotent(node):
    check_against_the_oracle(node)


def check_against_the_oracle(node):
    """The size and every cell (one past the end too) as the oracle decodes them, any of the padding kinds
    met where several meet; canonicalising again changes no cell."""
    mapping = Mapping.from_node(node)
    assert mapping.size == node.size
    assert canon(mapping.factors) == mapping.factors
    again = Mapping(canon(mapping.factors))
    for position in range(node.size + 1):
        expected, found = oracle_cell(node, SIZES, position), as_tuple(mapping.cell(position))
        if expected[0] == found[0] == "padding" and len(kinds := padding_kinds(node, position)) > 1:
            assert found[1] in kinds
        else:
            assert found == expected, (render(node), mapping.canonical(), position)
        assert again.cell(position) == mapping.cell(position)


@settings(max_examples=examples(300), deadline=None)
@given(nodes(3), st.data())
def test_split_then_pair_is_the_identity(node, data):
    mapping = Mapping.from_node(node)
    divisors = [n for n in range(1, mapping.size + 1) if mapping.size % n == 0]
    n = data.draw(st.sampled_from(divisors))
    outer, inner = split_at(mapping, n)
    rebuilt = Mapping(canon(outer.factors + inner.factors))
    assert rebuilt == mapping
    assert m["outer, inner"] == mapping


@settings(max_examples=examples(300), deadline=None)
@given(nodes(3))
def test_composite_free_equal_semantics_means_equal_canon(node):
    """Two spellings with the same cells (the node, and its canonical form re-parsed) normalise alike."""
    mapping = Mapping.from_node(node)
    if has_composite(mapping.factors) or any(f.atom == BC and f.m > 1 and f.padded for f in mapping.factors):
        return
    reparsed = parse(mapping.canonical(), SCOPE)
    assert reparsed.factors == mapping.factors
