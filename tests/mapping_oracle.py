"""An independent, per-position oracle for mapping semantics, written straight from the book.

It walks the expression tree (never the factor form) in pre-order: pairs decode major/minor, `#` pads,
and a chain of `/`, `%`, `=` above anything but an axis or a plain broadcast reads a composite (known
by the cells it holds) whose coordinate is summed over all its occurrences and decoded at the end (so
`[A # 4 / 2, A # 4 % 2]` lands in `A # 4`'s padding instead of overshooting A). When several paddings
are hit, the one met first in pre-order wins (the major one), a composite's own padding counting where
it first occurs.
"""

from __future__ import annotations

from functools import cache

from furiosa_opt.mapping.expr import Node, Num, Op, Pair, Sym
from furiosa_opt.mapping.factors import PadKind


class _Walk:
    def __init__(self):
        self.order = 0
        self.events: list[tuple[float, PadKind]] = []
        self.coords: dict[str, int] = {}
        # semantic table of the base -> [base, summed coordinate, rank of first occurrence]
        self.composites: dict[tuple, list] = {}

    def rank(self) -> int:
        self.order += 1
        return self.order

    def visit(self, node: Node, i: int) -> None:
        if isinstance(node, Op) and (node.n == node.inner.size if node.op != "/" else node.n == 1):
            self.visit(node.inner, i)  # value-level constructors are no-ops at identity sizes
        elif isinstance(node, Sym):
            self.coords[node.axis.name] = self.coords.get(node.axis.name, 0) + i
        elif isinstance(node, Pair):
            n = node.inner.size
            self.visit(node.outer, i // n)
            self.visit(node.inner, i % n)
        elif isinstance(node, Op) and node.op == "#":
            rank = self.rank()
            if i >= node.inner.size:
                self.events.append((rank, node.kind))
            else:
                self.visit(node.inner, i)
        elif isinstance(node, Op):
            base, position = node, i
            while isinstance(base, Op) and base.op in "/%=":
                position = position * base.n if base.op == "/" else position
                base = base.inner
            if isinstance(base, Sym) or _plain_broadcast(base):  # nothing that could overshoot
                self.visit(base, position)
            else:
                entry = self.composites.setdefault(_table(base), [base, 0, self.rank()])
                entry[1] += position
        else:
            assert isinstance(node, Num)

    def decode(self) -> None:
        for base, coordinate, rank in list(self.composites.values()):
            if coordinate >= base.size:
                self.events.append((rank + 0.5, PadKind.TOP))
                continue
            inner = _Walk()
            inner.visit(base, coordinate)
            inner.decode()
            if inner.events:
                self.events.append((rank + 0.5, min(inner.events)[1]))
            for name, value in inner.coords.items():
                self.coords[name] = self.coords.get(name, 0) + value


@cache
def _table(base: Node) -> tuple:
    """A composite is identified by what it holds, not by how it is spelled."""
    sizes = _axis_sizes(base)
    cells = (cell(base, sizes, i) for i in range(base.size))
    return tuple((c[0], tuple(c[1].items())) if c[0] == "index" else c for c in cells)


def _axis_sizes(node: Node) -> dict[str, int]:
    if isinstance(node, Sym):
        return {node.axis.name: node.axis.size}
    if isinstance(node, Pair):
        return _axis_sizes(node.outer) | _axis_sizes(node.inner)
    return _axis_sizes(node.inner) if isinstance(node, Op) else {}


def _plain_broadcast(node: Node) -> bool:
    if isinstance(node, Num):
        return True
    if isinstance(node, Pair):
        return _plain_broadcast(node.outer) and _plain_broadcast(node.inner)
    return isinstance(node, Op) and node.op != "#" and _plain_broadcast(node.inner)


def padding_kinds(node: Node, i: int) -> set[str]:
    """Every padding kind met at position i. Which one a cell reports when several differ is not
    pinned down by upstream (spec/algebra.md §6), so tests only insist when there is one."""
    walk = _Walk()
    walk.visit(node, i)
    walk.decode()
    return {kind.label for _, kind in walk.events}


def cell(node: Node, sizes: dict[str, int], i: int) -> tuple:
    """("oob",) | ("padding", kind) | ("index", {axis: coordinate}) with zero coordinates dropped."""
    if not 0 <= i < node.size:
        return ("oob",)
    walk = _Walk()
    walk.visit(node, i)
    walk.decode()
    if walk.events:
        return ("padding", min(walk.events, key=lambda event: event[0])[1].label)
    if any(value >= sizes[name] for name, value in walk.coords.items()):
        return ("padding", "top")
    return ("index", {name: value for name, value in sorted(walk.coords.items()) if value})
