"""Axes and the expression tree of a mapping, exactly as the user wrote it.

A `Mapping` keeps the tree for display and hands everything semantic to its canonical factor list
(`factors.py`): equality, size and cells all go through that one normal form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING

from furiosa_opt.diagnostics import FuriosaOptError

if TYPE_CHECKING:
    from furiosa_opt.mapping.factors import Factor


class MappingError(FuriosaOptError, ValueError):
    """A mapping that cannot be built or an algebra operation that does not apply.

    Examples:
        >>> issubclass(MappingSyntaxError, MappingError), issubclass(MappingError, FuriosaOptError)
        (True, True)
    """


class PadKind(IntEnum):
    """Padding kinds ordered by strictness, as upstream's derived `Ord` orders them.

    Examples:
        >>> sorted([PadKind.TOP, PadKind.BOTTOM, PadKind.ZERO])
        [<PadKind.BOTTOM: 0>, <PadKind.ZERO: 1>, <PadKind.TOP: 2>]
    """

    BOTTOM = 0  # inaccessible: reads and writes are undefined (write holes of `view_mut` tiles)
    ZERO = 1  # accessible, known to hold zero
    TOP = 2  # accessible, arbitrary values

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def suffix(self) -> str:
        """The operator that writes this kind: `#`, `#{0}` or `#{!}`."""
        return {PadKind.TOP: "#", PadKind.ZERO: "#{0}", PadKind.BOTTOM: "#{!}"}[self]


_AXIS_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*\Z")


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
    for name, size in sizes.items():
        if not _AXIS_NAME.match(name):
            raise MappingError(
                f"axis name `{name}` must start with an uppercase ASCII letter followed by letters, digits or `_`"
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise MappingError(f"axis `{name}` needs a positive integer size, got {size!r}")
        declared.append(Axis(name, size))
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
        from furiosa_opt.mapping.factors import size

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
    size = inner.size
    if n < 1:
        return f"`{op}` needs a positive number, got {n}"
    if op in "/%" and size % n:
        word = "stride" if op == "/" else "modulo"
        return f"{word} {n} does not divide the size {size} of `{render(inner)}`"
    if op == "=" and n > size:
        return f"resize to {n} exceeds the size {size} of `{render(inner)}`"
    if op == "#" and n < size:
        return f"padding to {n} is smaller than the size {size} of `{render(inner)}`"
    return None


def render(node: Node) -> str:
    """The expression as the user would write it, fully bracketed only where needed."""
    if isinstance(node, Sym):
        return node.axis.name
    if isinstance(node, Num):
        return str(node.n)
    if isinstance(node, Fixed):
        from furiosa_opt.mapping.factors import render_factors

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
        from furiosa_opt.mapping.factors import from_node

        return cls(from_node(node), node)

    @cached_property
    def size(self) -> int:
        from furiosa_opt.mapping.factors import size

        return size(self.factors)

    def cell(self, position: int) -> Cell:
        """What the buffer holds at `position`: a live index, a padding kind, or out of bounds."""
        from furiosa_opt.mapping.evaluate import cell_at

        return cell_at(self.factors, position)

    @cached_property
    def axis_names(self) -> frozenset[str]:
        """The names of the axes that have live digits in this mapping."""
        from furiosa_opt.mapping.evaluate import live_axes

        return live_axes(self.factors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        from furiosa_opt.mapping.evaluate import same_layout

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
        from furiosa_opt.mapping.factors import render_factors

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
    from furiosa_opt.mapping.factors import Comp, SymAtom

    sizes: dict[str, int] = {}
    for f in fs:
        if isinstance(f.atom, SymAtom):
            sizes[f.atom.name] = f.atom.n
        elif isinstance(f.atom, Comp):
            sizes |= _axis_sizes(f.atom.k)
    return sizes


@dataclass(frozen=True, slots=True)
class Cell:
    """One buffer position: `kind` is "index" (live, with `index`), "padding" (with `padding`) or "oob".

    Examples:
        >>> A = axes(A=6)
        >>> padded = m["A # 8"]
        >>> padded.cell(5), padded.cell(7), padded.cell(9)
        (Cell(index={'A': 5}), Cell(padding='top'), Cell(oob))
    """

    kind: str
    index: dict[str, int] | None = None
    padding: str | None = None

    def __repr__(self) -> str:
        if self.kind == "index":
            return f"Cell(index={self.index})"
        return f"Cell(padding={self.padding!r})" if self.kind == "padding" else "Cell(oob)"
