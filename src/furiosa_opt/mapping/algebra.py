"""The mapping algebra the engines' static checks are written in: split, carve, divide, pad, tile."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from furiosa_opt.mapping.expr import Mapping, MappingError, Pair, from_node
from furiosa_opt.mapping.factors import (
    BC,
    Comp,
    Factor,
    Factors,
    PadKind,
    SymAtom,
    canon,
    cut,
    pad,
    resize,
    size,
)
from furiosa_opt.mapping.refine import SubDigit, key_name, refine


def derived(fs: Factors | list[Factor]) -> Mapping:
    return Mapping(canon(fs))


def pair(*mappings: Mapping) -> Mapping:
    """`[M1, M2, …]`: the first is outermost.

    Built from the mappings' expressions, so digits of one padded expression written in different
    mappings meet again: `C # 64 / 32` as a stream's time and `C # 64 % 32` as its packet pair to
    `C # 64` (C = 63), as upstream sums a composite's coordinates across a tensor's parameters."""
    return Mapping(from_node(functools.reduce(Pair, (mapping.node for mapping in mappings))))


def split_at(mapping: Mapping, n: int) -> tuple[Mapping, Mapping]:
    """(outer, inner) with `inner` the first n positions; `[outer, inner] == mapping`."""
    if n < 1 or mapping.size % n:
        raise MappingError(f"cannot split `{mapping}` (size {mapping.size}) at {n}: {n} does not divide it")
    # The halves are not canonicalised on their own: a ragged split leaves one composite read by both
    # halves, which must stay whole so that pairing them again gives back `mapping`.
    outer, inner = cut(mapping.factors, n)
    return Mapping(outer), Mapping(inner)


def padded(mapping: Mapping, n: int, kind: PadKind = PadKind.TOP) -> Mapping:
    """`mapping # n`."""
    if n < mapping.size:
        raise MappingError(f"cannot pad `{mapping}` (size {mapping.size}) to the smaller size {n}")
    return derived(pad(mapping.factors, n, kind))


def resized(mapping: Mapping, n: int) -> Mapping:
    """`mapping = n`: the first n positions."""
    if not 1 <= n <= mapping.size:
        raise MappingError(f"cannot resize `{mapping}` (size {mapping.size}) to {n}")
    return derived(resize(mapping.factors, n))


def is_resize_of(small: Mapping, big: Mapping) -> bool:
    return small.size <= big.size and small == resized(big, small.size)


def remove_padding(mapping: Mapping) -> Mapping:
    """Drop outer pure padding, then the outermost factor's own padding."""
    fs = list(mapping.factors)
    while fs and fs[0].atom == BC and fs[0].m == 1:
        fs.pop(0)
    if fs and fs[0].padded:
        fs[0] = Factor(fs[0].atom, fs[0].s, fs[0].m, fs[0].m)
    return derived(fs)


def is_padding(mapping: Mapping) -> bool:
    """Every position is padding except position 0 (`1 # n`)."""
    return all(f.atom == BC and f.m == 1 for f in mapping.factors)


def padding_per_stride(mapping: Mapping) -> dict[int, int]:
    """Position stride of each factor → its padded extent (what contract_time's padding check reads)."""
    out, stride = {}, mapping.size
    for f in mapping.factors:
        stride //= f.e
        out[stride] = f.e
    return out


# ---- carve ------------------------------------------------------------------------------------------


def carve(whole: Mapping, piece: Mapping) -> Mapping:
    """What remains of `whole` once the digits of `piece` are taken out: they become `1 # n` (same size)."""
    whole_subs, piece_subs = refine(whole.factors, piece.factors)
    held = {(d.key, d.cut): d.count for d in whole_subs}
    for d in piece_subs:
        if held.get((d.key, d.cut), 0) < d.count:
            raise MappingError(f"carve: piece `{piece}` must be contained in `{whole}` (`{key_name(d.key)}` is not)")
    taken = {(d.key, d.cut) for d in piece_subs}
    return derived(replace_subdigits(whole, whole_subs, taken))


def replace_subdigits(mapping: Mapping, subs: list[SubDigit], taken: set) -> list[Factor]:
    """Rebuild `mapping` with each sub-digit in `taken` turned into pure padding of its extent."""
    out: list[Factor] = []
    for i, f in enumerate(mapping.factors):
        parts = [d for d in subs if d.factor == i]
        hit = [(d.key, d.cut) in taken for d in parts]
        if not any(hit):
            out.append(f)
        elif all(hit):
            out.append(Factor(BC, 1, 1, f.e))
        elif isinstance(f.atom, SymAtom):
            out.extend(_split_symbol_factor(f, parts, hit, mapping))
        else:
            raise MappingError(f"cannot take part of the composite digit of `{mapping}` apart")
    return out


def _split_symbol_factor(f: Factor, parts: list[SubDigit], hit: list[bool], mapping: Mapping) -> list[Factor]:
    """Sub-digits of one axis digit as factors (outermost keeps the padding), taken ones as padding."""
    inner_extent = math.prod(p.count for p in parts[1:])
    if f.e % inner_extent:
        raise MappingError(f"cannot take part of the padded digit `{f.atom.name}` of `{mapping}` apart")
    top = parts[0]
    out = [
        Factor(BC, 1, 1, f.e // inner_extent)
        if hit[0]
        else Factor(f.atom, top.cut, top.count, f.e // inner_extent, f.k)
    ]
    for part, taken in zip(parts[1:], hit[1:], strict=True):
        out.append(Factor(BC, 1, 1, part.count) if taken else Factor(f.atom, part.cut, part.count, part.count))
    return out


# ---- division ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DivideTerm:
    """One run of digits shared by a dividend and a divisor (position strides on each side)."""

    dividend_stride: int
    divisor_stride: int
    resize: int  # live cells in the run
    idents: tuple[str, ...]


def divide_exact(dividend: Mapping, divisor: Mapping) -> list[DivideTerm]:
    """Every live digit of `divisor` must appear in `dividend`; the shared runs, dividend order."""
    try:
        dividend_subs, divisor_subs = refine(dividend.factors, divisor.factors)
    except MappingError as error:
        raise MappingError(str(error)) from None
    held = {(d.key, d.cut): d for d in dividend_subs}
    for d in divisor_subs:
        match = held.get((d.key, d.cut))
        if match is None or match.count != d.count:
            raise MappingError(f"`{key_name(d.key)}` of `{divisor}` is missing from `{dividend}`")
    return _runs(dividend_subs, divisor_subs)


def _runs(dividend_subs: list[SubDigit], divisor_subs: list[SubDigit]) -> list[DivideTerm]:
    by_key = {(d.key, d.cut): d for d in divisor_subs}
    terms: list[list[tuple[SubDigit, SubDigit]]] = []
    for d in reversed(dividend_subs):  # innermost first, so runs grow outward
        v = by_key.get((d.key, d.cut))
        if v is None:
            continue
        if terms:
            last_d, last_v = terms[-1][-1]
            if last_d.key == d.key and d.pos == last_d.pos * last_d.count and v.pos == last_v.pos * last_v.count:
                terms[-1].append((d, v))
                continue
        terms.append([(d, v)])
    out = []
    for run in reversed(terms):
        inner_d, inner_v = run[0]
        idents = tuple(sorted({key_name(d.key) for d, _ in run}))
        out.append(DivideTerm(inner_d.pos, inner_v.pos, math.prod(d.count for d, _ in run), idents))
    return out


@dataclass(frozen=True, slots=True)
class RelaxedDivision:
    matched: list[DivideTerm]
    dividend_residue: Mapping  # dividend with the shared digits replaced by padding (the quotient)
    divisor_residue: Mapping  # divisor with the shared digits replaced by padding


def divide_relaxed(dividend: Mapping, divisor: Mapping) -> RelaxedDivision:
    """Division that never fails: what the two share, and what each keeps of its own."""
    dividend_subs, divisor_subs = refine(dividend.factors, divisor.factors)
    dividend_keys = {(d.key, d.cut): d.count for d in dividend_subs}
    divisor_keys = {(d.key, d.cut): d.count for d in divisor_subs}
    shared = {k for k, n in dividend_keys.items() if divisor_keys.get(k) == n}
    matched = _runs(
        [d for d in dividend_subs if (d.key, d.cut) in shared],
        [d for d in divisor_subs if (d.key, d.cut) in shared],
    )
    return RelaxedDivision(
        matched,
        derived(replace_subdigits(dividend, dividend_subs, shared)),
        derived(replace_subdigits(divisor, divisor_subs, shared)),
    )


# ---- pad / unpad / tile views -----------------------------------------------------------------------


def check_pad(element: Mapping, wider: Mapping) -> None:
    """`pad` re-declares the same cells inside a wider buffer: `wider == element # |wider|`."""
    if wider.size < element.size:
        raise MappingError(
            f"pad: the padded view cannot be narrower than the element: `{wider}` has {wider.size} "
            f"positions, `{element}` has {element.size}"
        )
    grown = padded(element, wider.size)
    if grown != wider:
        raise MappingError(
            f"pad: padding `{element}` to {wider.size} produces `{grown.canonical()}`, but the requested "
            f"view is `{wider}`"
        )


def tile_view(current: Mapping, index: Mapping, length: int, hole: PadKind) -> Mapping:
    """The view left after keeping `length` positions of the digit `index` of `current`.

    The digit is replaced by `index = length # |index|` with `hole` padding (Top for reads, Bottom for
    the write holes of `view_mut`); the physical extent is unchanged."""
    cf, ifs = current.factors, index.factors
    if ifs == cf or index.size == 1:
        kept = derived(pad(resize(cf, length), size(cf), hole)) if ifs == cf else current
        return kept
    if not 1 <= length <= index.size:
        raise MappingError(f"tile: length {length} must lie in 1..{index.size} (the size of `{index}`)")
    tiled = _tiled(cf, ifs, length, hole) if len(ifs) == 1 else None
    if tiled is None:
        raise MappingError(f"tile: failed to split `{current}` by the index expression `{index}`")
    return Mapping(tiled)


@functools.lru_cache(maxsize=1024)
def _tiled(cf: Factors, ifs: Factors, length: int, hole: PadKind) -> Factors | None:
    """The canonical factors of `tile_view`'s result, or None where `ifs` is no digit of `cf` (a host
    program tiles the same view at every call: this is worked out once)."""
    target = ifs[0]
    for i, f in enumerate(cf):
        if f.atom != target.atom or not isinstance(f.atom, SymAtom | Comp) or target.s % f.s:
            continue
        below = target.s // f.s
        if f.e % below:
            continue
        upper, lower = cut((f,), below)
        if size(upper) % target.e:
            continue
        rest, digit = cut(upper, target.e)
        if canon(digit) != ifs:
            continue
        window = pad(resize(digit, length), target.e, hole)
        return canon([*cf[:i], *rest, *window, *lower, *cf[i + 1 :]])
    return None


# ---- DMA bursts -------------------------------------------------------------------------------------


def dma_tails(src: Mapping, dst: Mapping) -> tuple[int, int, int]:
    """(src_packet, dst_packet, common): the innermost run both sides lay out alike, each side extended
    through its own trailing Top padding — the largest burst a DMA between them can issue."""
    src_subs, dst_subs = refine(src.factors, dst.factors)
    common = 1
    for a, b in zip(reversed(src_subs), reversed(dst_subs), strict=False):
        if (a.key, a.cut, a.count) != (b.key, b.cut, b.count) or a.pos != common or b.pos != common:
            break
        (ea, ka), (eb, kb) = _extent(src, src_subs, a), _extent(dst, dst_subs, b)
        if ea == eb and (ea == a.count or ka == kb == PadKind.TOP):
            common *= ea
            continue
        before, common = common, common * a.count  # live parts agree, extents differ: the burst ends here
        return (
            before * ea if ka == PadKind.TOP else common,
            before * eb if kb == PadKind.TOP else common,
            common,
        )
    return common, common, common


def _extent(mapping: Mapping, subs: list[SubDigit], sub: SubDigit) -> tuple[int, PadKind]:
    """Physical extent of a sub-digit: its count, or for the outermost sub-digit of a padded factor
    the factor's padded extent over the sub-digits below it."""
    siblings = [d for d in subs if d.factor == sub.factor]
    f = mapping.factors[sub.factor]
    if sub is not siblings[0] or not f.padded:
        return sub.count, PadKind.TOP
    return f.e // math.prod(d.count for d in siblings[1:]), f.k
