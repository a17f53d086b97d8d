"""What a canonical factor list holds at each position, vectorised over numpy position arrays, and the
`Cell` a `Mapping` reports for one position."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from furiosa_opt.mapping.factors import Comp, Factors, PadKind, SymAtom, has_composite, size, symbols

LIVE = -1  # value of `Layout.kind` at live positions; padding positions hold their PadKind
_NO_EVENT = np.iinfo(np.int64).max


@dataclass(slots=True)
class Layout:
    """Per-position content: axis coordinates (zero where absent) and the padding kind or LIVE."""

    coords: dict[str, np.ndarray]
    kind: np.ndarray

    @property
    def live(self) -> np.ndarray:
        return self.kind == LIVE


def evaluate(fs: Factors, positions: np.ndarray) -> Layout:
    """Decode positions (each < size) into coordinates; the outermost padding event wins."""
    return _evaluate(fs, positions, outermost=True)


def _evaluate(fs: Factors, positions: np.ndarray, outermost: bool) -> Layout:
    positions = np.asarray(positions, dtype=np.int64)
    coords: dict[str, np.ndarray] = {}
    rank = np.full(positions.shape, _NO_EVENT, dtype=np.int64)
    kind = np.full(positions.shape, LIVE, dtype=np.int8)

    def event(where: np.ndarray, at: int, what: PadKind | np.ndarray) -> None:
        hit = where & (rank > at)
        rank[hit] = at
        kind[hit] = what if isinstance(what, PadKind) else what[hit]

    composites: dict[Comp, tuple[np.ndarray, int]] = {}
    sizes: dict[str, int] = {}
    stride = size(fs)
    for i, f in enumerate(fs):
        stride //= f.e
        digit = (positions // stride) % f.e
        padded = digit >= f.m
        event(padded, 2 * i, f.k)
        value = np.where(padded, 0, digit) * f.s
        if isinstance(f.atom, SymAtom):
            sizes[f.atom.name] = f.atom.n
            coords[f.atom.name] = coords.get(f.atom.name, 0) + value
        elif isinstance(f.atom, Comp):
            # A composite decodes once its digits are summed, after every digit's own padding has had
            # its say (upstream: `Cell::combine` first, `finalize` after).
            total, first = composites.get(f.atom, (0, 2 * len(fs) + i))
            composites[f.atom] = (total + value, first)
    for comp, (total, at) in composites.items():
        whole = size(comp.k)
        overshoot = total >= whole
        event(overshoot, at, PadKind.TOP)
        inner = _evaluate(comp.k, np.where(overshoot, 0, total), outermost=False)
        event(~inner.live, at, inner.kind)
        for name, value in inner.coords.items():
            coords[name] = coords.get(name, 0) + value
    for name, value in coords.items():
        coords[name] = np.broadcast_to(value, positions.shape).astype(np.int64, copy=False)
    if outermost:  # a symbol summed past its size reads as undefined (Top), after any padding
        for comp in composites:
            sizes.update(_symbol_sizes(comp.k))
        for name, value in coords.items():
            event(value >= sizes[name], _NO_EVENT - 1, PadKind.TOP)
    return Layout(coords, kind)


def _symbol_sizes(fs: Factors) -> dict[str, int]:
    found: dict[str, int] = {}
    for f in fs:
        if isinstance(f.atom, SymAtom):
            found[f.atom.name] = f.atom.n
        elif isinstance(f.atom, Comp):
            found.update(_symbol_sizes(f.atom.k))
    return found


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


def cell_at(fs: Factors, position: int) -> Cell:
    if not 0 <= position < size(fs):
        return Cell("oob")
    layout = evaluate(fs, np.array([position]))
    if layout.kind[0] != LIVE:
        return Cell("padding", padding=PadKind(int(layout.kind[0])).label)
    index = {name: int(value[0]) for name, value in sorted(layout.coords.items()) if value[0] != 0}
    return Cell("index", index=index)


_SEMANTIC_LIMIT = 1 << 22


def live_axes(fs: Factors) -> frozenset[str]:
    """Axes with a nonzero coordinate somewhere (composites are decoded to find out)."""
    if not has_composite(fs) or size(fs) > _SEMANTIC_LIMIT:
        return symbols(fs)
    layout = evaluate(fs, np.arange(size(fs), dtype=np.int64))
    return frozenset(name for name, value in layout.coords.items() if np.any(value[layout.live]))


def same_layout(a: Factors, b: Factors) -> bool:
    """Equal canonical forms, or (composites only, whose normal form is not unique) equal cells."""
    if a == b:
        return True
    if size(a) != size(b) or not (has_composite(a) or has_composite(b)) or size(a) > _SEMANTIC_LIMIT:
        return False
    positions = np.arange(size(a), dtype=np.int64)
    left, right = evaluate(a, positions), evaluate(b, positions)
    if not np.array_equal(left.kind, right.kind):
        return False
    live = left.live
    for name in left.coords.keys() | right.coords.keys():
        zeros = np.zeros(positions.shape, dtype=np.int64)
        if not np.array_equal(left.coords.get(name, zeros)[live], right.coords.get(name, zeros)[live]):
            return False
    return True
