"""Axes and the expression tree of a mapping, exactly as the user wrote it.

A `Mapping` keeps the tree for display and hands everything semantic to its canonical factor list
(`factors.py`, built from the tree by `from_node` here): equality, size and cells all go through that one
normal form, decoded by `evaluate.py`. Both sit below this module, which is why the tree's own
translation into factors lives here and not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import axis_problem
from furiosa_opt.mapping.evaluate import Cell, cell_at, live_axes, same_layout
from furiosa_opt.mapping.factors import (
    BC,
    Comp,
    Factor,
    Factors,
    PadKind,
    SymAtom,
    canon,
    concat,
    cut,
    normalize,
    pad,
    render_factors,
    resize,
    size,
)


class MappingError(FuriosaOptError, ValueError):
    """A mapping that cannot be built or an algebra operation that does not apply.

    Examples:
        >>> issubclass(MappingSyntaxError, MappingError), issubclass(MappingError, FuriosaOptError)
        (True, True)
    """


@dataclass(frozen=True, slots=True)
class Axis:
    """A named tensor dimension with a fixed size, declared by `axes(...)`.

    Examples:
        >>> K = axes(K=64)
        >>> K.name, K.size, m["K / 16"].size
        ('K', 64, 4)
    """

    name: str
    size: int

    def __repr__(self) -> str:
        return f"Axis({self.name}={self.size})"


def axes(**sizes: int) -> Axis | tuple[Axis, ...]:
    """Declare axes: `I, J = axes(I=512, J=512)`; a single keyword returns a single axis.

    Examples:
        >>> I, J = axes(I=512, J=64)
        >>> I, J.size
        (Axis(I=512), 64)
        >>> axes(K=16)
        Axis(K=16)
    """
    if not sizes:
        raise MappingError("axes() needs at least one `Name=size`")
    declared = []
    for name, n in sizes.items():
        problem = axis_problem(name, n)
        if problem is not None:
            raise MappingError(problem)
        declared.append(Axis(name, n))
    return declared[0] if len(declared) == 1 else tuple(declared)


# ---- expression tree --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sym:
    axis: Axis

    @property
    def size(self) -> int:
        return self.axis.size


@dataclass(frozen=True, slots=True)
class Num:
    """A literal number: a broadcast of that many identical cells (`1` is the identity)."""

    n: int

    @property
    def size(self) -> int:
        return self.n


@dataclass(frozen=True, slots=True)
class Fixed:
    """A mapping computed by the algebra (no source text), used inside an expression."""

    factors: tuple[Factor, ...]

    @property
    def size(self) -> int:
        return size(self.factors)


@dataclass(frozen=True, slots=True)
class Pair:
    outer: Node
    inner: Node

    @property
    def size(self) -> int:
        return self.outer.size * self.inner.size


@dataclass(frozen=True, slots=True)
class Op:
    """A postfix operator: `/` stride, `%` modulo, `=` resize, `#` padding (with its kind)."""

    inner: Node
    op: str  # one of "/", "%", "=", "#"
    n: int
    kind: PadKind = PadKind.TOP

    @property
    def size(self) -> int:
        return self.inner.size // self.n if self.op == "/" else self.n


Node = Sym | Num | Fixed | Pair | Op


def check_op(inner: Node, op: str, n: int) -> str | None:
    """Why `inner op n` is not a valid mapping, or None. The one place these rules live."""
    whole = inner.size
    if n < 1:
        return f"`{op}` needs a positive number, got {n}"
    if op in "/%" and whole % n:
        word = "stride" if op == "/" else "modulo"
        return f"{word} {n} does not divide the size {whole} of `{render(inner)}`"
    if op == "=" and n > whole:
        return f"resize to {n} exceeds the size {whole} of `{render(inner)}`"
    if op == "#" and n < whole:
        return f"padding to {n} is smaller than the size {whole} of `{render(inner)}`"
    return None


def render(node: Node) -> str:
    """The expression as the user would write it, fully bracketed only where needed."""
    if isinstance(node, Sym):
        return node.axis.name
    if isinstance(node, Num):
        return str(node.n)
    if isinstance(node, Fixed):
        return f"[{render_factors(node.factors)}]"
    if isinstance(node, Pair):
        return f"[{', '.join(render(part) for part in _flatten_pair(node))}]"
    inner = render(node.inner)
    op = node.kind.suffix if node.op == "#" else node.op
    return f"{inner} {op} {node.n}"


def _flatten_pair(node: Node) -> list[Node]:
    if isinstance(node, Pair):
        return [*_flatten_pair(node.outer), *_flatten_pair(node.inner)]
    return [node]


# ---- from the tree to factors ----------------------------------------------------------------------


@lru_cache(maxsize=8192)
def from_node(node: Node) -> Factors:
    """Canonical factors of a whole expression tree."""
    return canon(_build(node))


@lru_cache(maxsize=8192)
def _build(node: Node) -> Factors:
    """Factors of a subtree. Composites stay untouched (R7 is deferred) so that every digit of a
    composite is present when the whole mapping is canonicalised: `A # 4 / 2` and `A # 4 % 2` must
    still share `A # 4` when they meet in one pair."""
    if isinstance(node, Sym):
        return normalize([Factor(SymAtom(node.axis.name, node.axis.size), 1, node.size, node.size)])
    if isinstance(node, Num):
        return normalize([Factor(BC, 1, node.n, node.n)])
    if isinstance(node, Fixed):
        return node.factors
    if isinstance(node, Pair):
        return normalize(concat(_build(node.outer), _build(node.inner)))
    inner = _build(node.inner)
    assert isinstance(node, Op)
    if node.op == "/":
        return cut(inner, node.n)[0]
    if node.op == "%":
        return cut(inner, node.n)[1]
    if node.op == "=":
        return resize(inner, node.n)
    return pad(inner, node.n, node.kind)


# ---- the user-facing mapping ------------------------------------------------------------------------


class Mapping:
    """A mapping expression: physical positions of a linear buffer → cells of a logical tensor.

    `m["I / 32, J % 8"]` builds one. Equality and hashing follow the canonical factor form, so two
    spellings of the same layout compare equal (`m["B / 64, B % 64"] == m["B"]`). Mappings produced by
    the algebra (split, carve, …) have no source text and print their canonical form.

    Examples:
        >>> I = axes(I=512)
        >>> tile = m["I / 32, I % 32"]
        >>> tile == m["I"], tile.size, sorted(tile.axis_names)
        (True, 512, ['I'])
        >>> tile.cell(33)                              # position 33 holds element I = 33
        Cell(index={'I': 33})
    """

    __slots__ = ("__dict__", "factors", "node")

    def __init__(self, factors: tuple[Factor, ...], node: Node | None = None):
        self.factors = factors
        self.node = Fixed(factors) if node is None else node

    @classmethod
    def from_node(cls, node: Node) -> Mapping:
        return cls(from_node(node), node)

    @cached_property
    def size(self) -> int:
        return size(self.factors)

    def cell(self, position: int) -> Cell:
        """What the buffer holds at `position`: a live index, a padding kind, or out of bounds."""
        return cell_at(self.factors, position)

    @cached_property
    def axis_names(self) -> frozenset[str]:
        """The names of the axes that have live digits in this mapping."""
        return live_axes(self.factors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return same_layout(self.factors, other.factors)

    def __hash__(self) -> int:
        # Only what every spelling shares: canonical tuples of equal composite layouts may differ.
        return hash(self.size)

    def __str__(self) -> str:
        text = render(self.node)
        return text[1:-1] if isinstance(self.node, Pair | Fixed) else text

    def __repr__(self) -> str:
        return f'm["{self}"]'

    def canonical(self) -> str:
        """The canonical form, written as an expression."""
        return render_factors(self.factors)


def shown_pair(expected: Mapping, got: Mapping) -> tuple[str, str]:
    """Two mappings as a mismatch message shows them, in backticks. Text alone hides axes that share a
    name but not a size (two `axes(N=…)` declarations print `N, D` alike), so each such axis's sizes
    follow: `` `N, D` (N=8)`` against `` `N, D` (N=4)``."""
    want, have = _axis_sizes(expected.factors), _axis_sizes(got.factors)
    differ = sorted(name for name in want.keys() & have.keys() if want[name] != have[name])
    return _sized(expected, want, differ), _sized(got, have, differ)


def _sized(mapping: Mapping, sizes: dict[str, int], names: list[str]) -> str:
    text = f"`{mapping}`"
    return f"{text} ({', '.join(f'{name}={sizes[name]}' for name in names)})" if names else text


def _axis_sizes(fs: tuple[Factor, ...]) -> dict[str, int]:
    """The declared size of each axis the factors read, by name (a composite's axes included)."""
    sizes: dict[str, int] = {}
    for f in fs:
        if isinstance(f.atom, SymAtom):
            sizes[f.atom.name] = f.atom.n
        elif isinstance(f.atom, Comp):
            sizes |= _axis_sizes(f.atom.k)
    return sizes
