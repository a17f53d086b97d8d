"""Relayout: move a tensor between two layouts by logical index.

For every live destination position the index map gives the source position holding the same
logical index (or -1 where the destination is padding). Destination axes the source lacks are
broadcast, and so are the outer repeats of a digit the destination names more often than the source
(`refine.pairing`, the sequencer's read rule); every live source cell must be read; both sides must split
shared axes compatibly — the rules upstream's sequencer enforces, checked here structurally on the joint
refinement.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.expr import MappingError
from furiosa_opt.mapping.factors import BC, Comp, Factors, SymAtom, has_composite, render_factors, size
from furiosa_opt.mapping.refine import describe_subdigit, pairing, refine, rereads
from furiosa_opt.memo import bytes_cache

_CHUNK = 1 << 22
RELAYOUT_CACHE_BYTES = 512 << 20  # index maps kept for reuse, least recently used dropped first


class RelayoutError(MappingError):
    """A move the rules refuse; `reason` is "incompatible", "unread", "overread" or "broadcast"."""

    def __init__(self, reason: str, message: str):
        self.reason = reason
        super().__init__(message)


def check_relayout(src: Factors, dst: Factors, allow_broadcast: bool, allow_drop: bool = False) -> None:
    """Raise RelayoutError if `dst` cannot be filled from `src` by logical index. `allow_drop` lets the
    destination leave source cells unread (a trim such as `commit_trim`'s resize). Remembered per pair:
    a kernel launched again asks the same questions."""
    refusal = _refusal(src, dst, allow_broadcast, allow_drop)
    if refusal is not None:
        raise RelayoutError(*refusal)


@lru_cache(maxsize=8192)
def _refusal(src: Factors, dst: Factors, allow_broadcast: bool, allow_drop: bool) -> tuple[str, str] | None:
    try:
        _check(src, dst, allow_broadcast, allow_drop)
    except RelayoutError as error:
        return error.reason, str(error)
    return None


def _check(src: Factors, dst: Factors, allow_broadcast: bool, allow_drop: bool) -> None:
    where = f"relayout from `{render_factors(src)}` to `{render_factors(dst)}`"
    try:
        src_subs, dst_subs = refine(src, dst)
    except MappingError as error:
        raise RelayoutError("incompatible", f"{where}: {error}") from None
    partner = pairing([(d.key, d.cut) for d in src_subs], [(d.key, d.cut) for d in dst_subs])
    reads = {i: d.count for i, d in zip(partner, dst_subs, strict=True) if i is not None}
    for i, d in enumerate(src_subs):
        if reads.get(i, 0) < d.count and not allow_drop:
            part = describe_subdigit(d.key, d.cut, d.count)
            raise RelayoutError(
                "unread", f"{where}: source axis `{part}` is not fully read (every live source cell must be)"
            )
    for i, d in zip(partner, dst_subs, strict=True):
        if i is not None and src_subs[i].count < d.count:
            part = describe_subdigit(d.key, d.cut, d.count)
            count = src_subs[i].count
            raise RelayoutError("overread", f"{where}: `{part}` reads beyond what the source holds ({count} values)")
    if not allow_broadcast:
        extra = [d for i, d in zip(partner, dst_subs, strict=True) if i is None]
        extra_bc = [f for f in dst if f.atom == BC and f.m > 1]
        if extra or extra_bc:
            part = describe_subdigit(extra[0].key, extra[0].cut, extra[0].count) if extra else str(extra_bc[0].m)
            raise RelayoutError("broadcast", f"{where}: `{part}` would be broadcast, which this move does not allow")


def position_of(fs: Factors, coords: dict[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Positions of `fs` holding the given coordinates; axes `fs` lacks are ignored (broadcast) and
    coordinates beyond a digit's range wrap, as a strided read would."""
    out = np.zeros(shape, dtype=np.int64)
    stride = size(fs)
    for f in fs:
        stride //= f.e
        if isinstance(f.atom, SymAtom):
            if f.atom.name not in coords:
                continue
            coordinate = coords[f.atom.name]
        elif isinstance(f.atom, Comp):
            coordinate = position_of(f.atom.k, coords, shape)
        else:
            continue
        out += (coordinate // f.s) % f.m * stride
    return out


@bytes_cache(RELAYOUT_CACHE_BYTES)
def relayout_index(src: Factors, dst: Factors, allow_broadcast: bool = True, allow_drop: bool = False) -> np.ndarray:
    """Source position per destination position (-1 at destination padding). Cached per pair."""
    check_relayout(src, dst, allow_broadcast, allow_drop)
    out = _odometer_index(src, dst)
    if out is None:
        _check_decodable(src, dst)
        out = _decoded_index(src, dst)
    out.flags.writeable = False
    return out


def _check_decodable(src: Factors, dst: Factors) -> None:
    """Decoding sums the coordinates a position's digits name, so it cannot say that a digit `dst` names
    twice re-reads the source (`refine.rereads`); only the sequencer's walk can, and it has none here."""
    src_subs, dst_subs = refine(src, dst)
    extra = rereads([(d.key, d.cut) for d in src_subs], [(d.key, d.cut) for d in dst_subs])
    reread = next((d for d in dst_subs if (d.key, d.cut) in extra), None)
    if reread is not None:
        part = describe_subdigit(reread.key, reread.cut, reread.count)
        raise RelayoutError(
            "incompatible",
            f"relayout from `{render_factors(src)}` to `{render_factors(dst)}`: `{part}` is read twice, which "
            "only a walk over layouts without composite atoms can do",
        )


def relaid(values: np.ndarray, src: Factors, dst: Factors, broadcast: bool, drop: bool = False) -> np.ndarray:
    """`values` [batch, src positions] relaid into `dst` by logical index, zero at its padding: a view
    plan, or the index map where composite atoms make views unable to express the move."""
    from furiosa_opt.mapping.views import plan

    check_relayout(src, dst, broadcast, drop)
    view = plan(src, dst)
    if view is not None:
        return view.apply(values)
    index = relayout_index(src, dst, broadcast, drop)
    out = values[:, np.maximum(index, 0)]
    out[:, index < 0] = 0
    return out


def live_mask(fs: Factors) -> np.ndarray:
    """Which positions of a layout hold a value: each factor's first `m` digits, or the decoded cells
    where composite atoms make liveness more than a box."""
    if has_composite(fs):
        return evaluate(fs, np.arange(size(fs), dtype=np.int64)).live
    return _live_mask(fs)


def _odometer_index(src: Factors, dst: Factors) -> np.ndarray | None:
    """The sequencer's nested loops, as one broadcast sum per loop: fast, and exact for composite-free
    layouts (the property tests compare it with the decoded form)."""
    if has_composite(src) or has_composite(dst):
        return None
    from furiosa_opt.mapping.expr import Mapping
    from furiosa_opt.mapping.sequencer import Mode, odometer, sequence

    try:
        (entries,) = sequence([Mapping(src)], [Mapping(dst)], Mode.CARVE)
    except MappingError:
        return None
    (offsets,) = odometer(entries)
    if len(offsets) != size(dst):
        return None
    return np.where(_live_mask(dst), offsets, -1)


def _live_mask(fs: Factors) -> np.ndarray:
    """Live positions of a composite-free layout: every digit below its live count."""
    mask = np.ones(1, dtype=bool)
    for f in fs:
        mask = (mask[:, None] & (np.arange(f.e) < f.m)).ravel()
    return mask


def _decoded_index(src: Factors, dst: Factors) -> np.ndarray:
    total = size(dst)
    out = np.empty(total, dtype=np.int64)
    for start in range(0, total, _CHUNK):
        positions = np.arange(start, min(total, start + _CHUNK), dtype=np.int64)
        layout = evaluate(dst, positions)
        found = position_of(src, layout.coords, positions.shape)
        out[start : start + len(positions)] = np.where(layout.live, found, -1)
    return out
