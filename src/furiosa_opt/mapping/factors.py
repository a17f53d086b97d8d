"""The canonical factor form of a mapping: construction, normalisation and display.

A mapping in normal form is a tuple of factors, outermost first. Factor `(atom, s, m, e, k)` is one
mixed-radix digit of the buffer position: `e` physical values, of which the first `m` are live and add
`digit·s` to the atom's coordinate; the rest are padding of kind `k`. Atoms are axes, the broadcast
`BC` (adds nothing), or a composite `Comp(K)`: a canonical factor tuple kept whole, whose coordinate is
the sum of its digits and is decoded only after summing (so `[A # 4 / 2, A # 4 % 2]` sees `A # 4`'s
padding instead of overshooting `A`). `normalize` and `canon` apply rules R1–R7, each named where it is used.

This module knows nothing of the expression tree: `expr.py` builds factors from a tree with the
operations here (`cut`, `resize`, `pad`, `concat`), and decoding positions is `evaluate.py`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import IntEnum
from functools import lru_cache


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


TOP = PadKind.TOP


@dataclass(frozen=True, slots=True)
class SymAtom:
    name: str
    n: int


@dataclass(frozen=True, slots=True)
class BcAtom:
    pass


@dataclass(frozen=True, slots=True)
class Comp:
    """A compound expression read as one coordinate.

    `tag == 0`: made by `/` or `%` of a compound expression; every reading of that expression shares
    it, so their coordinates sum before decoding (`[A # 4 / 2, A # 4 % 2]`). `tag > 0`: made to hold a
    padding or resize of a compound expression; private to its occurrence (`concat` renumbers)."""

    k: tuple[Factor, ...]
    tag: int = 0


Atom = SymAtom | BcAtom | Comp
BC = BcAtom()


@dataclass(frozen=True, slots=True)
class Factor:
    atom: Atom
    s: int  # stride in the atom's coordinate
    m: int  # live digit count
    e: int  # physical digit count (e >= m)
    k: PadKind = TOP  # kind of the padding digits m..e-1

    @property
    def padded(self) -> bool:
        return self.e > self.m

    @property
    def pure_pad(self) -> bool:
        return self.atom == BC and self.m == 1


Factors = tuple[Factor, ...]


def size(fs: Factors | list[Factor]) -> int:
    return math.prod(f.e for f in fs)


# ---- construction -----------------------------------------------------------------------------------


def _cut_factor(f: Factor, r: int) -> tuple[list[Factor], list[Factor]]:
    """Split one digit (r | e) into outer·r + inner."""
    if f.m % r == 0:
        return [Factor(f.atom, f.s * r, f.m // r, f.e // r, f.k)], [Factor(f.atom, f.s, r, r)]
    if f.m < r:  # the outer digit is pure padding
        return [Factor(BC, 1, 1, f.e // r, f.k)], [Factor(f.atom, f.s, f.m, r, f.k)]
    # Ragged: the live cells do not tile by r, so keep the padded digit whole as a composite.
    period = -(-f.m // r) * r
    k = Comp(normalize([Factor(f.atom, f.s, f.m, period, f.k)]))
    return [Factor(k, r, period // r, f.e // r, f.k)], [Factor(k, 1, r, r)]


def cut(fs: Factors, q: int) -> tuple[Factors, Factors]:
    """(outer, inner) with `inner` the first q positions; requires q | size."""
    assert size(fs) % q == 0, (fs, q)
    acc, i = 1, len(fs)
    while acc < q:
        i -= 1
        f, r = fs[i], q // acc
        if f.e % r == 0 and not _separates_composite(fs, i, r):
            outer, inner = _cut_factor(f, r)
            return normalize([*fs[:i], *outer]), normalize([*inner, *fs[i + 1 :]])
        if r % f.e:
            j = i  # ragged across factors: the shortest suffix that q divides becomes a composite
            while size(fs[j:]) % q or _shares_composite(fs[:j], fs[j:]):
                j -= 1
            k = Comp(normalize(fs[j:]))
            whole = size(fs[j:])
            return normalize([*fs[:j], Factor(k, q, whole // q, whole // q)]), normalize([Factor(k, 1, q, q)])
        acc *= f.e
    return normalize(fs[:i]), normalize(fs[i:])


def _separates_composite(fs: Factors, i: int, r: int) -> bool:
    """Whether cutting digit i alone by r would wrap it in a new composite (a ragged cut) while its atom, a
    composite, has other digits in fs. Their coordinates must sum before the composite decodes, but a
    composite nested in another decodes on its own: the cut must take the whole suffix holding them."""
    f = fs[i]
    ragged = f.m % r != 0 and f.m > r
    return ragged and isinstance(f.atom, Comp) and sum(g.atom == f.atom for g in fs) > 1


def _shares_composite(outer: Factors, inner: Factors) -> bool:
    """Whether a composite has digits on both sides (they must not be separated)."""
    comps = {f.atom for f in inner if isinstance(f.atom, Comp)}
    return any(f.atom in comps for f in outer)


def resize(fs: Factors, n: int) -> Factors:
    """The first n positions (n <= size)."""
    total = size(fs)
    if n == total:
        return fs
    f0, rest = fs[0], fs[1:]
    inner = size(rest)
    if n <= inner:
        return resize(rest, n)  # the outer digit is pinned to 0, which is always live
    if n % inner == 0:
        return normalize([Factor(f0.atom, f0.s, min(f0.m, n // inner), n // inner, f0.k), *rest])
    if total % n == 0:
        return cut(fs, n)[1]
    return normalize([Factor(Comp(fs, tag=1), 1, n, n)])


def pad(fs: Factors, n: int, kind: PadKind) -> Factors:
    """Extend to n positions (n >= size); the new positions are padding of `kind`."""
    total = size(fs)
    if n == total:
        return fs
    if not fs:
        return normalize([Factor(BC, 1, 1, n, kind)])
    f0, inner = fs[0], size(fs[1:])
    if n % inner == 0 and (not f0.padded or f0.k == kind):
        return normalize([Factor(f0.atom, f0.s, f0.m, n // inner, kind), *fs[1:]])
    if n % inner == 0 and (n // inner) % f0.e == 0:
        return normalize([Factor(BC, 1, 1, n // inner // f0.e, kind), *fs])
    return normalize([Factor(Comp(fs, tag=1), 1, total, n, kind)])


def concat(*lists: Factors) -> Factors:
    """Pair factor lists outer to inner. A private composite met again in a later list is the same
    one when the digits complement each other (the halves of a split), else a fresh occurrence."""
    out: list[Factor] = []
    for fs in lists:
        used = max((f.atom.tag for f in out if isinstance(f.atom, Comp)), default=0)
        fresh: dict[int, int] = {}
        for f in fs:
            comp = f.atom
            if isinstance(comp, Comp) and comp.tag and comp.tag not in fresh and _overlaps(comp, out, fs):
                used += 1
                fresh[comp.tag] = used
        out.extend(replace(f, atom=Comp(f.atom.k, fresh[f.atom.tag])) if _renamed(f, fresh) else f for f in fs)
    return tuple(out)


def _renamed(f: Factor, fresh: dict[int, int]) -> bool:
    return isinstance(f.atom, Comp) and f.atom.tag in fresh


def _overlaps(comp: Comp, before: list[Factor], after: Factors) -> bool:
    """Whether the coordinate ranges [s, s·m) read by the two lists intersect."""
    ranges = [(f.s, f.s * f.m) for f in before if f.atom == comp]
    return any(lo < f.s * f.m and f.s < hi for lo, hi in ranges for f in after if f.atom == comp)


# ---- normalisation ----------------------------------------------------------------------------------


@lru_cache(maxsize=16384)
def _normalize(fs: Factors, composites: bool) -> Factors:
    current = list(fs)
    while True:
        step = _merge_adjacent(_tidy(current))
        if composites:
            step = _simplify_composites(step)
        if step == current:
            return tuple(current)
        current = step


def normalize(fs: Factors | list[Factor]) -> Factors:
    """R1–R6: the local rules, safe on part of a mapping."""
    return _normalize(tuple(fs), False)


def canon(fs: Factors | list[Factor]) -> Factors:
    """The canonical form of a whole mapping: R1–R7 to a fixpoint."""
    return _normalize(tuple(fs), True)


def _tidy(fs: list[Factor]) -> list[Factor]:
    """R1 drop unit digits, R2 a digit pinned to 0 is pure padding, R3 unpadded kinds are Top."""
    out = []
    for f in fs:
        if f.e == 1:
            continue
        if f.m == 1:
            f = Factor(BC, 1, 1, f.e, f.k)
        elif f.atom == BC and f.s != 1:
            f = replace(f, s=1)
        if not f.padded and f.k != TOP:
            f = replace(f, k=TOP)
        out.append(f)
    return out


def _merge_pair(outer: Factor, inner: Factor) -> Factor | None:
    if outer.pure_pad and (not inner.padded or inner.k == outer.k):  # R6 absorb a pure pad
        return Factor(inner.atom, inner.s, inner.m, outer.e * inner.e, outer.k if not inner.padded else inner.k)
    if inner.padded or outer.atom != inner.atom:
        return None
    if outer.atom == BC or outer.s == inner.s * inner.m:  # R5 broadcasts, R4 adjacent digits of one atom
        return Factor(inner.atom, inner.s, outer.m * inner.m, outer.e * inner.m, outer.k)
    return None


def _merge_adjacent(fs: list[Factor]) -> list[Factor]:
    out: list[Factor] = []
    for f in reversed(fs):  # innermost first, so runs merge outward
        merged = _merge_pair(f, out[-1]) if out else None
        if merged is None:
            out.append(f)
        else:
            out[-1] = merged
    return out[::-1]


def _simplify_composites(fs: list[Factor]) -> list[Factor]:
    """R7: shrink each composite to what its digits reach, and dissolve it when that is exact."""
    for comp in dict.fromkeys(f.atom for f in fs if isinstance(f.atom, Comp)):
        digits = [i for i, f in enumerate(fs) if f.atom == comp]
        replacements = _simplify_composite(comp, [fs[i] for i in digits], fs)
        if replacements is not None:
            by_index = dict(zip(digits, replacements, strict=True))
            return [g for i, f in enumerate(fs) for g in by_index.get(i, [f])]
    return fs


def _simplify_composite(comp: Comp, digits: list[Factor], context: list[Factor]) -> list[list[Factor]] | None:
    """The factors replacing each digit of `comp`, or None when nothing simplifies."""
    k = list(comp.k)
    strides = [d.s for d in digits]
    while k and all(s % k[-1].e == 0 for s in strides):  # (a) the inner factor is always at digit 0
        strides = [s // k[-1].e for s in strides]
        k.pop()
    reach = sum(s * (d.m - 1) for s, d in zip(strides, digits, strict=True))
    if reach < size(k):  # (b) no digit sum reaches the top of K: drop and clip what lies above
        while k and size(k[1:]) > reach:
            k.pop(0)
        if k:
            top = reach // size(k[1:]) + 1
            k[0] = Factor(k[0].atom, k[0].s, min(k[0].m, top), top, k[0].k)
    k = list(canon(k))
    nested = {f.atom for f in k if isinstance(f.atom, Comp)}
    if not any(f.atom in nested for f in context):
        if len(digits) == 1:
            single = _dissolve_single(k, strides[0], digits[0])
            if single is not None:
                return [single]
        if len(k) == 1 and not k[0].padded and reach < k[0].m:  # (e) a linear composite
            a = k[0]
            return [[Factor(a.atom, a.s * s, d.m, d.e, d.k)] for s, d in zip(strides, digits, strict=True)]
    new_comp = Comp(tuple(k), comp.tag)
    if new_comp == comp and strides == [d.s for d in digits]:
        return None
    return [[Factor(new_comp, s, d.m, d.e, d.k)] for s, d in zip(strides, digits, strict=True)]


def _dissolve_single(k: list[Factor], s: int, d: Factor) -> list[Factor] | None:
    """A composite read by one digit only, as plain factors when no new composite is needed."""
    if len(k) <= 1:  # (d) one factor read at stride s: live, K-padding, overshoot and own-padding regions
        a = k[0] if k else Factor(BC, 1, 1, 1)
        live = min(d.m, -(-a.m // s))
        regions = [(a.k, live, min(d.m, -(-a.e // s))), (TOP, -(-a.e // s), d.m), (d.k, d.m, d.e)]
        kinds = {kind for kind, lo, hi in regions if hi > lo}
        if len(kinds) > 1:
            return None
        return [Factor(a.atom, a.s * s, live, d.e, kinds.pop() if kinds else TOP)]
    whole = size(k)
    if whole % s or d.m > whole // s:
        return None
    plain = pad(resize(cut(tuple(k), s)[0], d.m), d.e, d.k)
    known = {f.atom for f in k}
    if any(isinstance(f.atom, Comp) and f.atom not in known for f in plain):
        return None
    return list(plain)


# ---- queries and display ----------------------------------------------------------------------------


def has_composite(fs: Factors) -> bool:
    return any(isinstance(f.atom, Comp) for f in fs)


def symbols(fs: Factors) -> frozenset[str]:
    """Names of the axes with live digits, composites included."""
    names: set[str] = set()
    for f in fs:
        if isinstance(f.atom, SymAtom) and f.m > 1:
            names.add(f.atom.name)
        elif isinstance(f.atom, Comp):
            names |= symbols(f.atom.k)
    return frozenset(names)


def render_factors(fs: Factors) -> str:
    """Canonical factors as an expression (non-normative, for messages)."""
    if not fs:
        return "1"
    return ", ".join(_render_factor(f) for f in fs)


def _render_factor(f: Factor) -> str:
    if isinstance(f.atom, SymAtom):
        text = _render_digit(f.atom.name, f.atom.n, f.s, f.m)
    elif isinstance(f.atom, Comp):
        inner = render_factors(f.atom.k)
        text = _render_digit(f"[{inner}]", size(f.atom.k), f.s, f.m)
    else:
        text = str(f.m)
    return f"{text} {f.k.suffix} {f.e}" if f.padded else text


def _render_digit(base: str, n: int, s: int, m: int) -> str:
    if n % s:  # a ragged stride reads a padded axis: `A # 4 / 2` holds A = 0, 2 for A = 3
        n = -(-n // s) * s
        base = f"{base} # {n}"
    text = base if s == 1 else f"{base} / {s}"
    remaining = n // s
    if m == remaining:
        return text
    return f"{text} % {m}" if remaining % m == 0 else f"{text} = {m}"
