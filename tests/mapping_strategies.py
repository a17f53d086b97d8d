"""Hypothesis strategies for random mapping expressions over a small pool of axes."""

from __future__ import annotations

from hypothesis import strategies as st

from furiosa_opt.mapping import axes
from furiosa_opt.mapping.expr import Axis, Mapping, Node, Num, Op, Pair, Sym
from furiosa_opt.mapping.factors import PadKind
from furiosa_opt.mapping.parse import parse

POOL = (Axis("A", 3), Axis("B", 4), Axis("C", 6), Axis("D", 8), Axis("E", 5))
SIZES = {axis.name: axis.size for axis in POOL}
MAX_SIZE = 300


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def nodes(draw, depth: int = 4, axes: tuple[Axis, ...] = POOL, kind: PadKind | None = None) -> Node:
    """A random expression. All its paddings share one kind: which kind a cell reports when a split
    and reordered expression meets two kinds at once is not pinned down (spec/algebra.md §6)."""
    if kind is None:
        kind = draw(st.sampled_from(list(PadKind)))
    if not axes:
        return Num(draw(st.integers(1, 3)))
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 4)) == 0:
            return Num(draw(st.integers(1, 3)))
        return Sym(draw(st.sampled_from(axes)))
    choice = draw(st.sampled_from(["pair", "split", "/", "%", "=", "#"]))
    inner = draw(nodes(depth - 1, axes, kind))
    if choice == "pair":  # reading one axis twice sums its coordinates: meaningless, so pairs are disjoint
        rest = tuple(a for a in axes if a.name not in _names(inner))
        other = draw(nodes(depth - 1, rest, kind)) if rest else Num(draw(st.integers(1, 3)))
        return Pair(inner, other) if inner.size * other.size <= MAX_SIZE else inner
    if choice == "split":  # the complementary digits `X / q` and `X % q`, in either order
        q = draw(st.sampled_from(_divisors(inner.size)))
        outer, minor = Op(inner, "/", q), Op(inner, "%", q)
        return Pair(outer, minor) if draw(st.booleans()) else Pair(minor, outer)
    size = inner.size
    if choice in "/%":
        return Op(inner, choice, draw(st.sampled_from(_divisors(size))))
    if choice == "=" and _over_axis(inner):
        return Op(inner, "=", draw(st.integers(1, size)))
    if choice == "=":  # resizing a compound expression has no spelled-out meaning to check against
        return inner
    n = draw(st.integers(size, min(MAX_SIZE, 2 * size + 3)))
    return Op(inner, "#", n, kind)


def _names(node: Node) -> set[str]:
    if isinstance(node, Sym):
        return {node.axis.name}
    if isinstance(node, Pair):
        return _names(node.outer) | _names(node.inner)
    return _names(node.inner) if isinstance(node, Op) else set()


def _over_axis(node: Node) -> bool:
    """`/ % =` chains over one axis or number: where `=` has a meaning the book spells out."""
    while isinstance(node, Op) and node.op in "/%=":
        node = node.inner
    return isinstance(node, Sym | Num)


def mappings(depth: int = 4) -> st.SearchStrategy[Mapping]:
    return nodes(depth).map(Mapping.from_node)


# ---- pairs of layouts of the same axes (relayout properties) -------------------------------------

PAIR_POOL = axes(D=8, B=4, C=6)
SCOPE = {axis.name: axis for axis in PAIR_POOL}
CHAINS = {"D": [[8], [2, 4], [4, 2], [2, 2, 2]], "B": [[4], [2, 2]], "C": [[6], [2, 3], [3, 2]]}


def _digit(name: str, n: int, stride: int, count: int) -> str:
    text = name if stride == 1 else f"{name} / {stride}"
    return text if stride * count == n else f"{text} % {count}"


@st.composite
def layout_pairs(draw):
    """Two layouts of the same axes cut at the same boundaries: different order and padding."""
    pieces = []
    for axis in PAIR_POOL:
        chain, stride = draw(st.sampled_from(CHAINS[axis.name])), 1
        for count in chain:
            pieces.append(_digit(axis.name, axis.size, stride, count) + f"@{count}")
            stride *= count

    def render(order):
        parts = []
        for piece in order:
            text, count = piece.split("@")
            pad = draw(st.integers(0, 2))
            parts.append(f"{text} # {int(count) + pad}" if pad else text)
        return ", ".join(parts)

    src = render(draw(st.permutations(pieces)))
    dst = render(draw(st.permutations(pieces)))
    return parse(src, SCOPE), parse(dst, SCOPE)
