"""Sequencer synthesis: the nested loops that move a stream through memory (spec/algebra.md §4).

A sequencer walks a stream (`Time`, `Packet`, …) position by position and addresses memory with
`Σ digit_j · stride_j`, one `size : stride` entry per loop, outermost first. `sequence` finds those
loops: it refines every memory and stream jointly (`refine.py`), then lets each stream sub-digit claim
the memory sub-digit holding the same part of the same axis (same key, same lower cut). What is left
over decides the errors: a stream part no memory holds is a broadcast (stride 0) for reads and an error
for writes, and so is a stream part named more often than the memories hold it (its outermost occurrences
re-read what the innermost one reads: `refine.rereads`); a memory part no stream claims is data never
moved (`Unconsumed`).

Padding. A stream digit padded to `e` keeps walking its stride past its live values (an over-read:
harmless for reads, for writes it must land on the memory factor's own Top padding). When it cannot,
the padding becomes a separate dummy loop: stride 0 for reads, for writes parked on memory padding at
`P·m`, where any number of steps up to the padding's budget stays off live cells. Every write config is
then checked cell by cell, so a placement the structural rules got wrong is refused, never emitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from furiosa_opt.mapping.algebra import derived, replace_subdigits
from furiosa_opt.mapping.evaluate import LIVE, evaluate
from furiosa_opt.mapping.expr import Mapping, MappingError
from furiosa_opt.mapping.factors import BC, Comp, Factor, Factors, PadKind, concat, render_factors, size
from furiosa_opt.mapping.refine import SubDigit, describe_subdigit, refine, rereads

KINDS = ("StreamUnmatchedSegment", "InputBottomPadding", "Unconsumed")
_VALIDATE_LIMIT = 1 << 22  # write configs up to this many stream/memory cells are checked cell by cell


class SequencerError(MappingError):
    """A stream that no sequencer config can move; `kind` is one of `KINDS` (upstream's variants).

    For `Unconsumed`, `memories` holds each memory with the parts that were moved turned into `1 # n`,
    so the caller can name what was left behind."""

    def __init__(self, kind: str, message: str, memories: list[Mapping] | None = None):
        assert kind in KINDS, kind
        self.kind = kind
        self.memories = memories or []
        super().__init__(f"{kind}: {message}")


class Mode(Enum):
    READ = "read"  # memory cells may be read many times; unmatched stream parts broadcast
    WRITE = "write"  # every live memory cell gets exactly one live stream cell; no broadcast
    CARVE = "carve"  # READ that tolerates Bottom padding in the stream (relayout, carve)


@dataclass(frozen=True, slots=True)
class Entry:
    """One loop level: `size` iterations, `stride` memory elements apart (0 = broadcast)."""

    size: int
    stride: int
    memory: int = 0  # index into the `memories` passed to `sequence`

    def __str__(self) -> str:
        return f"{self.size}:{self.stride}" + (f" m{self.memory}" if self.memory else "")


def coalesce(entries: list[Entry]) -> list[Entry]:
    """Join entries that are back to back in one memory, walking innermost → outermost.

    The run keeps its inner stride; `run.stride · run.size == entry.stride` is the whole condition, so
    two broadcasts always join. Apply per descriptor: joining across time and packet is not allowed."""
    out: list[Entry] = []
    for entry in reversed(entries):
        run = out[-1] if out else None
        if run and run.memory == entry.memory and run.stride * run.size == entry.stride:
            out[-1] = Entry(run.size * entry.size, run.stride, run.memory)
        else:
            out.append(entry)
    return out[::-1]


def contiguous_run(entries: list[Entry]) -> int:
    """Elements of the innermost physically contiguous run: the innermost size, grown outward while
    `outer.stride == inner.size · inner.stride` (the book's `Config::contiguous_run`)."""
    if not entries:
        return 1
    run = entries[-1].size
    for outer, inner in zip(reversed(entries[:-1]), reversed(entries[1:]), strict=True):
        if outer.stride != inner.size * inner.stride:
            break
        run *= outer.size
    return run


def max_access(time: list[Entry], packet: list[Entry], packet_size: int) -> int:
    """Elements per hardware access: `gcd(|Packet|, contiguous_run(time ++ packet))`."""
    return math.gcd(packet_size, contiguous_run([*time, *packet]))


def sequence(memories: list[Mapping], streams: list[Mapping], mode: Mode) -> list[list[Entry]]:
    """One coalesced config per stream (entries outermost first) moving `streams` through `memories`.

    >>> A, B = axes(A=8, B=512)
    >>> sequence([m["A, B"]], [m["A, B / 32"], m["B % 32"]], Mode.READ)
    [[Entry(size=128, stride=32, memory=0)], [Entry(size=32, stride=1, memory=0)]]

    Raises MappingError on an incompatible decomposition and SequencerError otherwise."""
    return _Matcher(list(memories), list(streams), mode).run()


# ---- the matcher ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Held:
    """A memory sub-digit a stream sub-digit may claim."""

    memory: int
    sub: SubDigit
    top: bool  # outermost sub-digit of its factor: the one the factor's padding extends
    end: int  # position just past the factor's span (P·e): how far an over-read may go
    kind: PadKind | None  # the factor's padding kind, None when unpadded
    claimed: int = 0


@dataclass(slots=True)
class _Slot:
    """Padding of a memory factor `(a, s, m, e)` at position stride P, where write dummies are parked."""

    memory: int
    factor: int
    stride: int  # P·m: one step lands past every live value of the factor
    budget: int  # Σ(n_i − 1) the dummies parked here may take without leaving the padding
    kind: PadKind


@dataclass(frozen=True, slots=True)
class _Dummy:
    """A loop over stream padding only, placed once every stream has claimed its data (terms first)."""

    n: int
    kind: PadKind


def _position_strides(fs: Factors) -> list[int]:
    strides, stride = [], size(fs)
    for f in fs:
        stride //= f.e
        strides.append(stride)
    return strides


def _has_bottom(fs: Factors) -> bool:
    return any((f.padded and f.k is PadKind.BOTTOM) or (isinstance(f.atom, Comp) and _has_bottom(f.atom.k)) for f in fs)


def _accepts(memory_kind: PadKind | None, stream_kind: PadKind) -> bool:
    """Whether stream padding may be written onto memory padding: Top takes anything, Zero only zeros."""
    return memory_kind is PadKind.TOP or (memory_kind is PadKind.ZERO and stream_kind is PadKind.ZERO)


class _Matcher:
    """One `sequence` call: the pooled refinement, the claimable memory parts and their padding.

    Streams are walked in order and their terms claim memory parts first; dummy loops are placed only
    afterwards, so stream padding never takes memory padding that a term's over-read needs."""

    def __init__(self, memories: list[Mapping], streams: list[Mapping], mode: Mode):
        self.memories, self.streams, self.mode = memories, streams, mode
        names = ", ".join(f"`{x}`" for x in streams), ", ".join(f"`{x}`" for x in memories)
        self.where = f"{mode.value} of stream [{names[0]}] through memory [{names[1]}]"
        try:
            subs = refine(*(x.factors for x in memories), *(x.factors for x in streams))
        except MappingError as error:
            raise MappingError(f"{self.where}: {error}") from None
        self.memory_subs, self.stream_subs = subs[: len(memories)], subs[len(memories) :]
        self.held: dict[tuple, list[_Held]] = {}
        self.rereads = rereads(
            [(d.key, d.cut) for subs in self.memory_subs for d in subs],
            [(d.key, d.cut) for subs in self.stream_subs for d in subs],
        )
        self.slots: list[_Slot] = []
        self.broadcasts: dict[tuple[int, int], bool] = {}  # memory Bc digits → claimed (writes only)
        for i, memory in enumerate(memories):
            self._index_memory(i, memory.factors, self.memory_subs[i])

    def _index_memory(self, i: int, fs: Factors, subs: list[SubDigit]) -> None:
        strides, seen = _position_strides(fs), set()
        for sub in subs:
            f = fs[sub.factor]
            held = _Held(i, sub, sub.factor not in seen, strides[sub.factor] * f.e, f.k if f.padded else None)
            self.held.setdefault((sub.key, sub.cut), []).append(held)
            seen.add(sub.factor)
        for j in reversed(range(len(fs))):  # innermost first: dummies park in the smallest padding
            f = fs[j]
            if f.padded:
                self.slots.append(_Slot(i, j, strides[j] * f.m, (f.e - f.m) // f.m, f.k))
            if f.atom == BC and f.m > 1:
                self.broadcasts[(i, j)] = False

    def error(self, kind: str, what: str, memories: list[Mapping] | None = None) -> SequencerError:
        return SequencerError(kind, f"{self.where}: {what}", memories)

    def run(self) -> list[list[Entry]]:
        items = [self._stream_items(s) for s in range(len(self.streams))]
        configs = [coalesce([self._place(x) if isinstance(x, _Dummy) else x for x in xs]) for xs in items]
        self._check_coverage()
        if self.mode is Mode.WRITE:
            _validate_write(self, configs)
        return configs

    def _stream_items(self, s: int) -> list[Entry | _Dummy]:
        fs = self.streams[s].factors
        if self.mode is not Mode.CARVE and _has_bottom(fs):
            raise self.error(
                "StreamUnmatchedSegment",
                f"stream `{self.streams[s]}` has Bottom padding (only Carve allows it)",
            )
        by_factor: dict[int, list[SubDigit]] = {}
        for sub in self.stream_subs[s]:
            by_factor.setdefault(sub.factor, []).append(sub)
        return [item for j, f in enumerate(fs) for item in self._factor_items(f, by_factor.get(j, []))]

    def _factor_items(self, f: Factor, subs: list[SubDigit]) -> list[Entry | _Dummy]:
        """Entries of one stream factor; its padded extent goes to the top run (over-read) when it can,
        else to a dummy loop outside the live ones (R6 undone: `A # 8` = `1 # 2, A` for A = 4)."""
        if not subs:
            return [self._broadcast(f)] if f.atom == BC and f.m > 1 else [_Dummy(f.e, f.k)]
        matched = [self._match(sub) for sub in subs]
        runs = coalesce([entry for entry, _ in matched])
        inner = math.prod(r.size for r in runs[1:])
        top = runs[0]
        if f.e % inner == 0 and self._may_extend(f, top, f.e // inner, matched[0][1]):
            return [Entry(f.e // inner, top.stride, top.memory), *runs[1:]]
        live = math.prod(r.size for r in runs)
        if live == f.m and f.e % live == 0:
            return [_Dummy(f.e // live, f.k), *runs]
        why = (
            "its padding has no memory padding to land on"
            if self.mode is Mode.WRITE and f.padded
            else f"its {f.m} live values do not tile by the memory's split"
        )
        raise self.error(
            "StreamUnmatchedSegment",
            f"the stream digit `{render_factors((f,))}` cannot be walked by loops over the memory ({why})",
        )

    def _may_extend(self, f: Factor, top: Entry, extent: int, held: _Held | None) -> bool:
        """Writes may continue a padded digit only into the padding of the memory factor it matches."""
        if self.mode is not Mode.WRITE or not f.padded:
            return True
        if held is None or not held.top or not _accepts(held.kind, f.k) or extent * top.stride > held.end:
            return False
        for slot in self.slots:  # that padding is now taken by the stream's own padding
            if (slot.memory, slot.factor) == (held.memory, held.sub.factor):
                slot.budget = 0
        return True

    def _match(self, sub: SubDigit) -> tuple[Entry, _Held | None]:
        part = describe_subdigit(sub.key, sub.cut, sub.count)
        candidates = self.held.get((sub.key, sub.cut), [])
        if self.rereads[(sub.key, sub.cut)]:
            return self._reread(sub, part)
        held = next((h for h in candidates if not h.claimed), None)
        if held is None:
            if self.mode is Mode.WRITE:
                raise self.error("StreamUnmatchedSegment", f"`{part}` is not in memory (a broadcasting write)")
            self._check_bottom_overread(sub, part)
            return Entry(sub.count, 0), None
        held.claimed = sub.count
        if sub.count > held.sub.count:
            self._check_overread(sub, held, part)
        return Entry(sub.count, held.sub.pos, held.memory), held

    def _reread(self, sub: SubDigit, part: str) -> tuple[Entry, None]:
        """A stream part named more often than the memories hold it: a read repeats the part (stride 0) at
        its outermost occurrences; a write would give one cell two sources."""
        if self.mode is Mode.WRITE:
            raise self.error("StreamUnmatchedSegment", f"`{part}` is claimed twice by the streams")
        self.rereads[(sub.key, sub.cut)] -= 1
        return Entry(sub.count, 0), None

    def _check_overread(self, sub: SubDigit, held: _Held, part: str) -> None:
        """A stream part reading more values than the memory part holds runs into its factor's padding."""
        beyond = f"`{part}` reaches past the {held.sub.count} values memory `{self.memories[held.memory]}` holds"
        if self.mode is Mode.WRITE:
            raise self.error("StreamUnmatchedSegment", f"{beyond}: live values would land on padding")
        if held.top and held.kind is PadKind.BOTTOM:
            raise self.error("InputBottomPadding", f"{beyond}, into Bottom padding")
        if not held.top or held.kind is None or sub.count * held.sub.pos > held.end:
            raise self.error("StreamUnmatchedSegment", f"{beyond} and its padding")

    def _check_bottom_overread(self, sub: SubDigit, part: str) -> None:
        """An unmatched part above a memory digit's live range would read that digit's padding, not
        wrap around (as a broadcast does) when the padding is a Bottom hole."""
        for held in (h for hs in self.held.values() for h in hs if h.sub.key == sub.key):
            if held.top and held.kind is PadKind.BOTTOM and held.sub.cut * held.sub.count <= sub.cut:
                memory = self.memories[held.memory]
                raise self.error("InputBottomPadding", f"`{part}` reads the Bottom padding of `{memory}`")

    def _broadcast(self, f: Factor) -> Entry:
        if self.mode is not Mode.WRITE:
            return Entry(f.e, 0)
        for (i, j), claimed in self.broadcasts.items():  # a write may fill a broadcast memory digit
            g = self.memories[i].factors[j]
            if not claimed and not f.padded and g.m == f.m:
                self.broadcasts[(i, j)] = True
                return Entry(f.m, _position_strides(self.memories[i].factors)[j], i)
        raise self.error("StreamUnmatchedSegment", f"the broadcast `{f.m}` cannot be written (a broadcasting write)")

    def _place(self, dummy: _Dummy) -> Entry:
        """Reads re-read (stride 0); writes park the dummy on memory padding that has budget left."""
        if self.mode is not Mode.WRITE:
            return Entry(dummy.n, 0)
        for slot in self.slots:
            if slot.budget >= dummy.n - 1 and _accepts(slot.kind, dummy.kind):
                slot.budget -= dummy.n - 1
                return Entry(dummy.n, slot.stride, slot.memory)
        raise self.error(
            "StreamUnmatchedSegment",
            f"no memory padding is left to absorb {dummy.n} positions of stream padding",
        )

    def _check_coverage(self) -> None:
        missing = [h for hs in self.held.values() for h in hs if h.claimed < h.sub.count]
        if missing:
            h = missing[0]
            what = f"`{describe_subdigit(h.sub.key, h.sub.cut, h.sub.count)}` of memory `{self.memories[h.memory]}`"
            raise self.error("Unconsumed", f"{what} is not fully {self._verb()}", self._carved())
        if self.mode is Mode.WRITE:
            for (i, j), claimed in self.broadcasts.items():
                if not claimed:
                    what = f"the broadcast `{self.memories[i].factors[j].m}` of memory `{self.memories[i]}`"
                    raise self.error("Unconsumed", f"{what} is not written", self._carved())

    def _verb(self) -> str:
        return "written" if self.mode is Mode.WRITE else "read"

    def _carved(self) -> list[Mapping]:
        """The memories with every fully claimed part turned into `1 # n` (what is left to move)."""
        out = []
        for i, memory in enumerate(self.memories):
            taken = {(h.sub.key, h.sub.cut) for hs in self.held.values() for h in hs if h.memory == i}
            taken -= {(h.sub.key, h.sub.cut) for hs in self.held.values() for h in hs if h.claimed < h.sub.count}
            try:
                out.append(derived(replace_subdigits(memory, self.memory_subs[i], taken)))
            except MappingError:
                out.append(memory)
        return out


# ---- numeric check of write configs -----------------------------------------------------------------


def odometer(entries: list[Entry], memories: int = 1) -> list[np.ndarray]:
    """Per memory, the offset the config addresses at each stream position (outer loops first)."""
    offsets = [np.zeros(1, dtype=np.int64) for _ in range(memories)]
    for entry in entries:
        step = np.arange(entry.size, dtype=np.int64) * entry.stride
        offsets = [(off[:, None] + (step if entry.memory == i else 0 * step)).ravel() for i, off in enumerate(offsets)]
    return offsets


def _validate_write(matcher: _Matcher, configs: list[list[Entry]]) -> None:
    """Every live stream cell lands on a distinct live memory cell with the same index, every stream
    pad on memory padding that accepts it, and no live or Zero memory cell is left unwritten."""
    stream = concat(*(x.factors for x in matcher.streams))
    memory = concat(*(x.factors for x in matcher.memories))
    total, held = size(stream), size(memory)
    if total > _VALIDATE_LIMIT or held > _VALIDATE_LIMIT:
        return
    offsets = odometer([e for config in configs for e in config], len(matcher.memories))
    weights = [size(x.factors) for x in matcher.memories[1:]] + [1]
    position = sum(off * math.prod(weights[i:]) for i, off in enumerate(offsets))
    if np.any(position >= held):
        raise matcher.error("StreamUnmatchedSegment", "the config writes outside the memory")
    src, dst = evaluate(stream, np.arange(total, dtype=np.int64)), evaluate(memory, position)
    live = src.live
    same = dst.live[live].all() and all(
        np.array_equal(src.coords.get(name, 0 * position)[live], dst.coords.get(name, 0 * position)[live])
        for name in src.coords.keys() | dst.coords.keys()
    )
    if not same or np.unique(position[live]).size != int(live.sum()):
        raise matcher.error("StreamUnmatchedSegment", "live stream cells do not land on distinct matching cells")
    pad_ok = (dst.kind == PadKind.TOP) | ((dst.kind == PadKind.ZERO) & (src.kind == PadKind.ZERO))
    if not np.all(pad_ok[~live]):
        raise matcher.error("StreamUnmatchedSegment", "stream padding would overwrite live cells or padding")
    cells = evaluate(memory, np.arange(held, dtype=np.int64)).kind
    written = np.zeros(held, dtype=bool)
    written[position[live | (src.kind == PadKind.ZERO)]] = True
    if np.any(((cells == LIVE) | (cells == PadKind.ZERO)) & ~written):
        raise matcher.error("Unconsumed", "some live or Zero memory cells are never written", matcher.memories)
