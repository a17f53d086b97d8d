"""The simulated memories of the kernel's chips: HBM (DRAM) as the kernel's buffers bound to device
memory, and per slice DM, TRF and VRF.

Addresses are the LIR's virtual byte addresses (docs/lir.md, "Addresses"): DRAM from 0, DM at
`DM_BASE` with slice `(cluster·256 + slice)` every `SLICE_STRIDE`, chip `c` of either at `c·CHIP_STRIDE`,
TRF and VRF per slice from 0. Each DRAM buffer is bound to a byte array, chip by chip — the device memory
the runtime allocated for it, or an argument's bytes in place — so a DRAM access is relative to its
buffer and may not leave it. The DM, TRF and VRF files have one row per slice of every chip; a DM access
names one slice's offsets and happens in every slice at once, as the Tensor Unit's does.

Every access is nested loops of byte strides (a DMA descriptor, a sequencer), so it is a numpy strided
view of the memory it touches: one copy moves the data, and nothing is allocated per element. A view is
made only after the loops' reachable lowest and highest byte are checked against the memory; when that
check fails, the addresses are walked (a chunk at a time) to report the first one outside, as an
element-by-element walk would meet it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import pairwise

import numpy as np
from numpy.lib.stride_tricks import as_strided

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import CHIP_STRIDE, DM_BASE, SLICE_STRIDE, Buffer, DmaWalk, FillWalk, IndirectWalk

SLICES = RNGD.clusters_per_chip * RNGD.slices_per_cluster
CHUNK = 1 << 20  # positions whose addresses are enumerated at once, on the paths that must see each one

Loops = tuple[tuple[int, ...], tuple[int, ...]]  # (sizes, byte strides), outermost first


class Fault(Exception):
    """An access outside what the kernel's buffers placed; the machine adds which command made it."""


def _reach(start: int, loops: Loops) -> tuple[int, int] | None:
    """The lowest and highest address the loops visit from `start`, or None if they visit nothing."""
    sizes, strides = loops
    if 0 in sizes:
        return None
    low = start + sum(min(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    high = start + sum(max(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    return low, high


def _walk(start: int, loops: Loops) -> Iterator[tuple[int, np.ndarray]]:
    """(first position, addresses) of the positions the loops visit, in order, CHUNK positions at a time."""
    sizes, strides = loops
    total = math.prod(sizes)
    for first in range(0, total, CHUNK):
        digits = np.unravel_index(np.arange(first, min(total, first + CHUNK), dtype=np.int64), sizes)
        addresses = np.full(len(digits[0]), start, dtype=np.int64)
        for digit, stride in zip(digits, strides, strict=True):
            addresses += digit * stride
        yield first, addresses


def _first(start: int, loops: Loops, bad: Callable[[np.ndarray], np.ndarray]) -> int | None:
    """The first address the loops visit for which `bad` holds."""
    for _, addresses in _walk(start, loops):
        hits = np.flatnonzero(bad(addresses))
        if len(hits):
            return int(addresses[hits[0]])
    return None


def _inside(addresses: np.ndarray, shape: tuple[int, ...], steps: tuple[int, ...]) -> np.ndarray:
    """Which virtual addresses fall inside `shape` (one dimension per address digit over `steps`)."""
    ok = addresses >= 0
    for size, step in zip(shape, steps, strict=True):
        ok &= addresses // step < size
        addresses = addresses % step
    return ok


def flattens(view: np.ndarray) -> bool:
    """Whether a view's axes after the first read as one strided axis (each step the size of the next
    axis's span): reshaping them to one is then a view, not a copy."""
    kept = [(n, step) for n, step in zip(view.shape[1:], view.strides[1:], strict=True) if n != 1]
    return all(outer == n * inner for (_, outer), (n, inner) in pairwise(kept))


def _view(origin: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], writeable: bool) -> np.ndarray:
    """The strided view whose first element is `origin`'s; the caller has checked that it stays inside
    `origin`'s memory. A view of nothing is a fresh empty array (its origin may lie anywhere)."""
    if 0 in shape:
        return np.empty(shape, dtype=np.uint8)
    return as_strided(origin, shape, strides, writeable=writeable)


def _split(stride: int, steps: tuple[int, ...]) -> tuple[int, ...]:
    """A virtual byte stride as digit steps of a hierarchical address (`steps`: the bytes one step of
    each digit spans, outermost first, the last 1), each inner remainder within ±half the step above.

    Walking such steps keeps every digit equal to the address's mixed-radix digits as long as each inner
    digit stays within the bytes placed at its level, because those are at most half the step above (a
    chip's slices span far less than CHIP_STRIDE; `Memories` refuses DM buffers past half a
    SLICE_STRIDE): one step cannot carry an inner digit into the next outer position unseen. So the
    bounds check on the split walk is exact."""
    digits = []
    for step in steps[:-1]:
        digit = (stride + step // 2) // step
        digits.append(digit)
        stride -= digit * step
    return (*digits, stride)


def _digits(address: int, steps: tuple[int, ...]) -> tuple[int, ...]:
    """A virtual address's mixed-radix digits over `steps` (floor division, outermost first)."""
    out = []
    for step in steps:
        digit, address = divmod(address, step)
        out.append(digit)
    return tuple(out)


def _hierarchical(
    origin: np.ndarray, shape: tuple[int, ...], steps: tuple[int, ...], start: int, loops: Loops, writeable: bool
) -> np.ndarray | None:
    """The strided view of contiguous `origin` (row-major `shape`, one dimension per address digit) that
    the loops visit from virtual `start`; None when some digit leaves its dimension."""
    first = _digits(start, steps)
    split = [_split(stride, steps) for stride in loops[1]]
    flat = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    for k, size in enumerate(shape):
        reach = _reach(first[k], (loops[0], tuple(digits[k] for digits in split)))
        if reach is not None and (reach[0] < 0 or reach[1] >= size):
            return None
    if 0 in loops[0]:
        return np.empty(loops[0], dtype=np.uint8)
    offset = sum(d * f for d, f in zip(first, flat, strict=True))
    strides = tuple(sum(d * f for d, f in zip(digits, flat, strict=True)) * origin.itemsize for digits in split)
    return _view(origin.reshape(-1)[offset:], loops[0], strides, writeable)


class Memories:
    def __init__(
        self,
        buffers: tuple[Buffer, ...],
        dram: dict[str, np.ndarray],
        chips: dict[str, int] | None = None,
        device: int = 1,
    ):
        """`dram` binds every DRAM buffer's name to its bytes (a writable uint8 array of its size, chip
        by chip); `chips` gives how many chips each DRAM buffer spans (1 if absent); `device` is the
        kernel's chip count, whose DM, TRF and VRF exist."""

        def extent(memory: str) -> int:
            return max((b.address + b.span for b in buffers if b.memory == memory), default=0)

        if extent("sram") > RNGD.dm_bytes_per_slice:
            raise Fault(f"its DM buffers reach {extent('sram')} bytes per slice, a slice has {RNGD.dm_bytes_per_slice}")
        self.dram, self.chips = dram, dict(chips or {})
        self.chip_count = device
        rows = self.chip_count * SLICES
        self.files = {memory: np.zeros((rows, extent(memory)), dtype=np.uint8) for memory in ("sram", "trf", "vrf")}
        self.live = slice(0, rows)  # the slices the Tensor Unit computes (`computing`)

    def computing(self, spans: list[tuple[int, int]] | None) -> None:
        """Let the Tensor Unit compute only the clusters that DMA reaches: `spans` are the (lowest, highest)
        DM offsets of every DMA, fill and indirect move (None: some move's reach is known only at run time,
        so every cluster). A cluster no move reads or writes starts as zeros and ends unread; the engines
        move data within a cluster only (the switch's ring, the slice reducers), so its work reaches no
        cluster that is read. Its rows are still allocated, as zero pages that are never touched."""
        if spans is None:
            return
        per_cluster, rows = RNGD.slices_per_cluster, self.files["sram"].shape[0]
        ends = [self._row(offset) for span in spans for offset in span]
        if not ends:
            self.live = slice(0, 0)
            return
        first = max(0, min(ends)) // per_cluster * per_cluster
        self.live = slice(first, min(rows, (max(ends) // per_cluster + 1) * per_cluster))

    @staticmethod
    def _row(offset: int) -> int:
        """The file row (chip · slices + slice) of a DM offset from DM_BASE."""
        return offset // CHIP_STRIDE * SLICES + offset % CHIP_STRIDE // SLICE_STRIDE

    # ---- a DRAM buffer or the DM slices by virtual address (DMA) ----

    def dma(self, source: Buffer, target: Buffer, config: DmaWalk | IndirectWalk, unit: int) -> None:
        """One DMA descriptor as one strided copy: shape `(loop sizes…, packet)`, byte strides
        `(loop strides…, 1)` on each side. The source is checked (and faults) before the destination.

        Where the two views may share memory the source is copied first, so every byte is read before any
        is written, as the descriptor's walk did. A descriptor that writes one byte more than once keeps
        one of the values, unspecified which (index assignment, before this, did not promise one either)."""
        loops = config.loops
        sizes = tuple(max(0, n) for n in [*(loop.size for loop in loops), config.packet // unit * unit])
        source_view = self._window(source, config.src_base, (sizes, (*(loop.src for loop in loops), 1)), False)
        target_view = self._window(target, config.dst_base, (sizes, (*(loop.dst for loop in loops), 1)), True)
        if np.may_share_memory(source_view, target_view):
            source_view = source_view.copy()
        target_view[...] = source_view

    def indirect(self, moved: Buffer, index: Buffer, output: Buffer, config: IndirectWalk) -> None:
        """A gather or scatter: read each index cell (an i32 at `entries[e]` of the index buffer), take its
        row (the value over `divisor`; a negative or too large one faults), and move one row's payload
        between the indexed side (base + row · row_stride) and the direct side (base + offsets[e]), in
        index order (a later cell's row overwrites an earlier one's). `moved` is the gather's table or
        the scatter's source."""
        values = np.array([self._window(index, a, ((4,), (1,)), False).view("<i4")[0] for a in config.entries])
        bad = np.flatnonzero((values < 0) | (values // config.divisor >= config.rows))
        if len(bad):
            value = int(values[bad[0]])
            reason = "a negative offset" if value < 0 else f"row {value // config.divisor}, past the {config.rows}"
            raise Fault(f"index cell {int(bad[0])} holds {value}: {reason} rows")
        rows = values // config.divisor * config.row_stride
        gather = config.indexed == "src"
        for row, offset in zip(rows.tolist(), config.offsets, strict=True):
            src, dst = (row, offset) if gather else (offset, row)
            self.dma(moved, output, replace(config, src_base=config.src_base + src, dst_base=config.dst_base + dst), 1)

    def fill(self, target: Buffer, config: FillWalk) -> None:
        """A memset: the bytes the descriptor's loops visit from `base` (destination strides) become the
        pattern, repeated through each packet."""
        loops, pattern = config.loops, np.array(config.pattern, dtype=np.uint8)
        packet = config.packet // len(pattern) * len(pattern)
        sizes = tuple(max(0, n) for n in [*(loop.size for loop in loops), packet])
        view = self._window(target, config.base, (sizes, (*(loop.dst for loop in loops), 1)), True)
        view[...] = np.tile(pattern, packet // len(pattern))

    @staticmethod
    def dm_span(buffer: Buffer, address: int, loops: list, packet: int, side: str) -> tuple[int, int] | None:
        """The (lowest, highest) DM offset a move's walk reaches on one side (`src` or `dst` strides), or
        None when that side is not DM or the walk is empty."""
        if buffer.memory != "sram":
            return None
        sizes = (*(max(0, loop.size) for loop in loops), max(0, packet))
        return _reach(address - DM_BASE, (sizes, (*(getattr(loop, side) for loop in loops), 1)))

    def _window(self, buffer: Buffer, address: int, loops: Loops, writeable: bool) -> np.ndarray:
        """The bytes the loops visit from virtual `address`, in a DRAM buffer (chip by chip, each chip's
        part at CHIP_STRIDE) or across the DM slices of every chip."""
        if buffer.memory != "dram":
            return self._dm_window(address - DM_BASE, loops, writeable)
        data = self.dram[buffer.name]
        chips = self.chips.get(buffer.name, 1)
        shape = (chips, len(data) // chips)
        view = _hierarchical(data, shape, (CHIP_STRIDE, 1), address - buffer.address, loops, writeable)
        if view is None:
            bad = _first(address - buffer.address, loops, lambda a: ~_inside(a, shape, (CHIP_STRIDE, 1)))
            raise Fault(
                f"DRAM address {bad + buffer.address:#x} is outside {buffer.name} "
                f"({buffer.bytes} bytes at {buffer.address:#x}"
                + (f", {shape[1]} per chip on {chips} chips)" if chips > 1 else ")")
            )
        return view

    def _dm_window(self, start: int, loops: Loops, writeable: bool) -> np.ndarray:
        """DM bytes from `start` (relative to DM_BASE): each address is (chip, slice, offset) digits over
        the [chips · slices, bytes] file."""
        file = self.files["sram"]
        shape, steps = (self.chip_count, SLICES, file.shape[1]), (CHIP_STRIDE, SLICE_STRIDE, 1)
        view = _hierarchical(file, shape, steps, start, loops, writeable)
        if view is None:
            raise self._dm_fault(start, loops)
        return view

    def _dm_fault(self, start: int, loops: Loops) -> Fault:
        """What the walk meets first: an offset past the placed bytes anywhere, else a slice (or chip) the
        device lacks."""
        size = self.files["sram"].shape[1]
        bad = _first(start, loops, lambda a: a % SLICE_STRIDE >= size)
        if bad is not None:
            return Fault(f"SRAM offset {bad % SLICE_STRIDE} is outside the {size} bytes placed per slice")
        chip_bytes = SLICES * SLICE_STRIDE
        bad = _first(start, loops, lambda a: (a < 0) | (a % CHIP_STRIDE >= chip_bytes))
        if bad is not None:
            slice_ = bad // SLICE_STRIDE if bad < 0 else bad % CHIP_STRIDE // SLICE_STRIDE
            return Fault(f"DM slice {slice_} does not exist (a chip has {SLICES})")
        bad = _first(start, loops, lambda a: a // CHIP_STRIDE >= self.chip_count)
        return Fault(f"DM of chip {bad // CHIP_STRIDE} does not exist (the kernel runs on {self.chip_count})")

    # ---- one slice's offsets, in every slice (the Tensor Unit) ----

    def load(
        self, memory: str, start: int, loops: Loops, unit: int, live: np.ndarray | None = None, digits: bool = False
    ) -> np.ndarray:
        """[slices, positions, unit] bytes of the `unit`-byte elements the loops visit from offset `start`,
        read in every slice computed; zero at positions not `live` (None: all are), which are not read.
        With every position live it may be a read-only view of the file: the engines read it and make new
        arrays, and a write that overlaps it (a commit into the bytes a fetch read) copies first, as numpy
        does for overlapping operands. With `digits`, a walk whose positions do not flatten into one axis
        (a loop that rereads, stride 0, or one that transposes) is that view, [slices, loop sizes…, unit],
        not a copy."""
        file = self.files[memory][self.live]
        view = self._slices(memory, start, loops, unit, writeable=False)
        if view is not None:
            if live is None:  # the walk's view itself when its positions flatten as one, else one copy
                return view if digits and not flattens(view[..., 0]) else view.reshape(file.shape[0], -1, unit)
            out = np.array(view, order="C").reshape(file.shape[0], -1, unit)
            out[:, ~live] = 0
            return out
        out = np.zeros((file.shape[0], math.prod(loops[0]), unit), dtype=np.uint8)
        for positions, at in self._live_bytes(memory, start, loops, unit, live):
            out[:, positions] = file[:, at]
        return out

    def store(
        self, memory: str, start: int, loops: Loops, unit: int, data: np.ndarray, live: np.ndarray | None = None
    ) -> None:
        """Write `data` ([slices, positions, unit] bytes) at the positions the loops visit from offset
        `start` in every slice, only where `live` (None: everywhere). Every live byte is checked before
        any is written. Positions that land on one address leave one of their values, unspecified which."""
        file = self.files[memory][self.live]
        view = self._slices(memory, start, loops, unit, writeable=True)
        if view is not None:
            where = True if live is None else live.reshape(1, *loops[0], 1)
            np.copyto(view, data.reshape(view.shape), where=where)
            return
        for _ in self._live_bytes(memory, start, loops, unit, live):
            pass  # the check: the walk faults at the first live byte outside
        for positions, at in self._live_bytes(memory, start, loops, unit, live):
            file[:, at] = data[:, positions]

    def _slices(self, memory: str, start: int, loops: Loops, unit: int, writeable: bool) -> np.ndarray | None:
        """The [slices, sizes…, unit] view of the file, or None if some position (live or not) reaches outside."""
        file = self.files[memory][self.live]
        sizes, strides = (*loops[0], unit), (*loops[1], 1)
        reach = _reach(start, (sizes, strides))
        if reach is not None and (reach[0] < 0 or reach[1] >= file.shape[1]):
            return None
        steps = (file.strides[0], *(s * file.strides[1] for s in strides))
        return _view(file[:, start:] if reach is not None else file, (file.shape[0], *sizes), steps, writeable)

    def _live_bytes(
        self, memory: str, start: int, loops: Loops, unit: int, live: np.ndarray | None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(live positions, their [n, unit] byte offsets) a chunk at a time, faulting at the first live byte
        outside the file: for walks whose padding positions reach outside, where no view can be made."""
        size = self.files[memory].shape[1]
        for first, offsets in _walk(start, loops):
            keep = np.arange(first, first + len(offsets))
            if live is not None:
                keep = keep[live[keep]]
                offsets = offsets[keep - first]
            at = offsets[:, None] + np.arange(unit, dtype=np.int64)
            bad = np.flatnonzero((at < 0) | (at >= size))
            if len(bad):
                raise Fault(f"{memory.upper()} offset {at.flat[bad[0]]} is outside the {size} bytes placed per slice")
            yield keep, at
