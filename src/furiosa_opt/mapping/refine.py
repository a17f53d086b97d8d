"""Joint refinement: cut the digits of several mappings at common coordinate boundaries.

Every live digit reads one axis (or an opaque composite) at stride `s` for `m` values, i.e. it covers
the coordinate range [s, s·m) of that axis's mixed-radix expansion. Two mappings can exchange data
with strided loops only if, per axis, all those boundaries form one divisibility chain; each digit
then splits into sub-digits between consecutive boundaries, and sub-digits match across mappings by
(axis, lower boundary). Relayout, carve, division and (later) sequencer synthesis are built on this.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

from furiosa_opt.mapping.expr import MappingError
from furiosa_opt.mapping.factors import Comp, Factors, SymAtom, render_factors, size

Key = str | Comp


@dataclass(frozen=True, slots=True)
class Digit:
    key: Key
    s: int  # coordinate stride
    m: int  # live values
    pos: int  # position stride in the mapping
    factor: int  # index of the factor it comes from


@dataclass(frozen=True, slots=True)
class SubDigit:
    key: Key
    cut: int  # lower coordinate boundary (a multiple of the digit's stride)
    count: int  # live values of this sub-digit
    pos: int  # position stride in the mapping
    factor: int


def key_name(key: Key) -> str:
    return key if isinstance(key, str) else f"[{render_factors(key.k)}]"


def digits(fs: Factors) -> list[Digit]:
    """Live digits, outermost first. A composite read whole and once is expanded into its own digits;
    a single-axis composite reads that axis; any other composite stays an opaque key."""
    out: list[Digit] = []
    pos = size(fs)
    comp_digits: dict[Comp, int] = {}
    for f in fs:
        if isinstance(f.atom, Comp):
            comp_digits[f.atom] = comp_digits.get(f.atom, 0) + 1
    for i, f in enumerate(fs):
        pos //= f.e
        if f.m <= 1:
            continue
        if isinstance(f.atom, SymAtom):
            out.append(Digit(f.atom.name, f.s, f.m, pos, i))
        elif isinstance(f.atom, Comp):
            k = f.atom.k
            if comp_digits[f.atom] == 1 and f.s == 1 and f.m == size(k):
                out.extend(Digit(d.key, d.s, d.m, d.pos * pos, i) for d in digits(k))
            elif len(k) == 1 and isinstance(k[0].atom, SymAtom):
                live = min(f.m, -(-k[0].m // f.s))
                if live > 1:
                    out.append(Digit(k[0].atom.name, k[0].s * f.s, live, pos, i))
            else:
                out.append(Digit(f.atom, f.s, f.m, pos, i))
    return out


def chains(*sides: list[Digit]) -> dict[Key, list[int]]:
    """Per key, the common boundaries; raises on an incompatible decomposition."""
    by_key: dict[Key, list[Digit]] = {}
    for side in sides:
        for d in side:
            by_key.setdefault(d.key, []).append(d)
    result = {}
    for key, ds in by_key.items():
        cuts = sorted({d.s for d in ds} | {max(d.s * d.m for d in ds)})
        for lower, upper in itertools.pairwise(cuts):
            if upper % lower:
                raise MappingError(
                    f"incompatible decomposition of `{key_name(key)}`: it is split at {lower} and at "
                    f"{upper}, and {lower} does not divide {upper}"
                )
        for d in ds:  # add the upper ends that keep the chain
            upper = d.s * d.m
            if upper not in cuts:
                below = max(c for c in cuts if c < upper)
                above = min((c for c in cuts if c > upper), default=None)
                if upper % below == 0 and (above is None or above % upper == 0):
                    cuts = sorted([*cuts, upper])
        result[key] = cuts
    return result


def split(side: list[Digit], cuts: dict[Key, list[int]]) -> list[SubDigit]:
    """Sub-digits of one side along the common boundaries, outermost first."""
    out: list[SubDigit] = []
    for d in side:
        inside = [c for c in cuts[d.key] if d.s <= c < d.s * d.m]
        parts = []
        for j, lower in enumerate(inside):
            # the top sub-digit counts the values of s·t (t < m) at its boundary
            count = inside[j + 1] // lower if j + 1 < len(inside) else (d.s * (d.m - 1)) // lower + 1
            parts.append(SubDigit(d.key, lower, count, d.pos * (lower // d.s), d.factor))
        out.extend(reversed(parts))
    return out


def refine(*mappings: Factors) -> list[list[SubDigit]]:
    sides = [digits(fs) for fs in mappings]
    cuts = chains(*sides)
    return [split(side, cuts) for side in sides]


def rereads(held: list[Hashable], reads: list[Hashable]) -> Counter:
    """Per sub-digit (`(key, cut)`), how many of its occurrences in `reads` re-read what `held` holds:
    those beyond the number of times `held` has it, when `held` has it at all. A read may take one memory
    digit at several stream positions; the outermost extra occurrences repeat (stride 0) what the inner
    ones read, so a packet that names the digit still gets its contiguous run (`[A, B / 8] | [B]` reads
    the whole row `B` at every step of `B / 8`)."""
    have, want = Counter(held), Counter(reads)
    return Counter({k: n - have[k] for k, n in want.items() if 0 < have[k] < n})


def pairing(held: list[Hashable], reads: list[Hashable]) -> list[int | None]:
    """For each entry of `reads`, the index of the `held` entry it reads, or None where it reads none (a
    sub-digit `held` lacks, or a re-read, see `rereads`). Repeated sub-digits pair in order."""
    extra, seen = rereads(held, reads), Counter()
    where: dict[Hashable, list[int]] = {}
    for i, k in enumerate(held):
        where.setdefault(k, []).append(i)
    out: list[int | None] = []
    for k in reads:
        i = seen[k] - extra[k]
        seen[k] += 1
        have = where.get(k, [])
        out.append(have[i] if 0 <= i < len(have) else None)
    return out


def describe_subdigit(key, cut: int, count: int) -> str:
    text = key_name(key)
    if cut > 1:
        text += f" / {cut}"
    return f"{text} % {count}"
