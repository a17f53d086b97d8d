"""The simulated memories of one chip: HBM (DRAM) as the kernel's buffers bound to device memory, and
per slice DM, TRF and VRF.

Addresses are the LIR's virtual byte addresses (docs/lir.md, "Addresses"): DRAM from 0, DM at
`DM_BASE` with slice `(cluster·256 + slice)` every `SLICE_STRIDE`, TRF and VRF per slice from 0. Each
DRAM buffer is bound to a byte array — the device memory the runtime allocated for it, or an argument's
bytes in place — so a DRAM access is relative to its buffer and may not leave it. A DM access names one
slice's offsets and happens in every slice at once, as the Tensor Unit's does.

Every access is nested loops of byte strides (a DMA descriptor, a sequencer), so it is a numpy strided
view of the memory it touches: one copy moves the data, and nothing is allocated per element. A view is
made only after the loops' reachable lowest and highest byte are checked against the memory; when that
check fails, the addresses are walked (a chunk at a time) to report the first one outside, as an
element-by-element walk would meet it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import DM_BASE, SLICE_STRIDE

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


def _view(origin: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], writeable: bool) -> np.ndarray:
    """The strided view whose first element is `origin`'s; the caller has checked that it stays inside
    `origin`'s memory. A view of nothing is a fresh empty array (its origin may lie anywhere)."""
    if 0 in shape:
        return np.empty(shape, dtype=np.uint8)
    return as_strided(origin, shape, strides, writeable=writeable)


def _dm_split(stride: int) -> tuple[int, int]:
    """A virtual DM byte stride as (slices, offset) steps, the offset step within ±SLICE_STRIDE/2.

    Walking such steps keeps (slice, offset) equal to the address's `divmod` by SLICE_STRIDE as long as
    every offset stays inside a slice's placed bytes, because those are at most half a SLICE_STRIDE
    (`Memories` refuses more): one step cannot carry an offset out of one slice's placed bytes into the
    next slice's. So the bounds check on the split walk is exact."""
    offset = (stride + SLICE_STRIDE // 2) % SLICE_STRIDE - SLICE_STRIDE // 2
    return (stride - offset) // SLICE_STRIDE, offset


class Memories:
    def __init__(self, buffers: tuple[dict, ...], dram: dict[str, np.ndarray]):
        """`dram` binds every DRAM buffer's name to its bytes (a writable uint8 array of its size)."""

        def extent(memory: str) -> int:
            return max((b["address"] + b["bytes"] for b in buffers if b["memory"] == memory), default=0)

        if extent("sram") > RNGD.dm_bytes_per_slice:
            raise Fault(f"its DM buffers reach {extent('sram')} bytes per slice, a slice has {RNGD.dm_bytes_per_slice}")
        self.dram = dram
        self.files = {memory: np.zeros((SLICES, extent(memory)), dtype=np.uint8) for memory in ("sram", "trf", "vrf")}

    # ---- a DRAM buffer or the DM slices by virtual address (DMA) ----

    def dma(self, source: dict, target: dict, config: dict, unit: int) -> None:
        """One DMA descriptor as one strided copy: shape `(loop sizes…, packet)`, byte strides
        `(loop strides…, 1)` on each side. The source is checked (and faults) before the destination.

        Where the two views may share memory the source is copied first, so every byte is read before any
        is written, as the descriptor's walk did. A descriptor that writes one byte more than once keeps
        one of the values, unspecified which (index assignment, before this, did not promise one either)."""
        loops = config["loops"]
        sizes = tuple(max(0, n) for n in [*(loop["size"] for loop in loops), config["packet"] // unit * unit])
        source_view = self._window(source, config["src_base"], (sizes, (*(loop["src"] for loop in loops), 1)), False)
        target_view = self._window(target, config["dst_base"], (sizes, (*(loop["dst"] for loop in loops), 1)), True)
        if np.may_share_memory(source_view, target_view):
            source_view = source_view.copy()
        target_view[...] = source_view

    def fill(self, target: dict, config: dict) -> None:
        """A memset: the bytes the descriptor's loops visit from `base` (destination strides) become the
        pattern, repeated through each packet."""
        loops, pattern = config["loops"], np.array(config["pattern"], dtype=np.uint8)
        packet = config["packet"] // len(pattern) * len(pattern)
        sizes = tuple(max(0, n) for n in [*(loop["size"] for loop in loops), packet])
        view = self._window(target, config["base"], (sizes, (*(loop["dst"] for loop in loops), 1)), True)
        view[...] = np.tile(pattern, packet // len(pattern))

    def _window(self, buffer: dict, address: int, loops: Loops, writeable: bool) -> np.ndarray:
        """The bytes the loops visit from virtual `address`, in a DRAM buffer or across DM slices."""
        if buffer["memory"] != "dram":
            return self._dm_window(address - DM_BASE, loops, writeable)
        data = self.dram[buffer["name"]]
        start = address - buffer["address"]
        reach = _reach(start, loops)
        if reach is not None and (reach[0] < 0 or reach[1] >= len(data)):
            bad = _first(start, loops, lambda a: (a < 0) | (a >= len(data)))
            raise Fault(
                f"DRAM address {bad + buffer['address']:#x} is outside {buffer['name']} "
                f"({buffer['bytes']} bytes at {buffer['address']:#x})"
            )
        origin = data[start:] if reach is not None else data
        return _view(origin, loops[0], tuple(s * data.strides[0] for s in loops[1]), writeable)

    def _dm_window(self, start: int, loops: Loops, writeable: bool) -> np.ndarray:
        """DM bytes from `start` (relative to DM_BASE): each stride becomes slice and offset steps, the
        numpy stride `slices·row + offset` over the [slices, bytes] file."""
        file = self.files["sram"]
        first_slice, first_offset = divmod(start, SLICE_STRIDE)
        steps = [_dm_split(s) for s in loops[1]]
        offsets = _reach(first_offset, (loops[0], tuple(offset for _, offset in steps)))
        slices = _reach(first_slice, (loops[0], tuple(slice_ for slice_, _ in steps)))
        if offsets is None:
            return _view(file, loops[0], loops[1], writeable)
        if offsets[0] < 0 or offsets[1] >= file.shape[1] or slices[0] < 0 or slices[1] >= SLICES:
            raise self._dm_fault(start, loops)
        strides = tuple(slice_ * file.strides[0] + offset * file.strides[1] for slice_, offset in steps)
        return _view(file[first_slice, first_offset:], loops[0], strides, writeable)

    def _dm_fault(self, start: int, loops: Loops) -> Fault:
        """What the walk meets first: an offset past the placed bytes anywhere, else a slice the chip lacks."""
        size = self.files["sram"].shape[1]
        bad = _first(start, loops, lambda a: a % SLICE_STRIDE >= size)
        if bad is not None:
            return Fault(f"SRAM offset {bad % SLICE_STRIDE} is outside the {size} bytes placed per slice")
        bad = _first(start, loops, lambda a: (a < 0) | (a >= SLICES * SLICE_STRIDE))
        return Fault(f"DM slice {bad // SLICE_STRIDE} does not exist (a chip has {SLICES})")

    # ---- one slice's offsets, in every slice (the Tensor Unit) ----

    def load(self, memory: str, start: int, loops: Loops, unit: int, live: np.ndarray | None = None) -> np.ndarray:
        """[slices, positions, unit] bytes of the `unit`-byte elements the loops visit from offset `start`,
        read in every slice; zero at positions not `live` (None: all are), which are not read."""
        file = self.files[memory]
        view = self._slices(memory, start, loops, unit, writeable=False)
        if view is not None:
            out = np.array(view).reshape(SLICES, -1, unit)
            if live is not None:
                out[:, ~live] = 0
            return out
        out = np.zeros((SLICES, math.prod(loops[0]), unit), dtype=np.uint8)
        for positions, at in self._live_bytes(memory, start, loops, unit, live):
            out[:, positions] = file[:, at]
        return out

    def store(
        self, memory: str, start: int, loops: Loops, unit: int, data: np.ndarray, live: np.ndarray | None = None
    ) -> None:
        """Write `data` ([slices, positions, unit] bytes) at the positions the loops visit from offset
        `start` in every slice, only where `live` (None: everywhere). Every live byte is checked before
        any is written. Positions that land on one address leave one of their values, unspecified which."""
        file = self.files[memory]
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
        file = self.files[memory]
        sizes, strides = (*loops[0], unit), (*loops[1], 1)
        reach = _reach(start, (sizes, strides))
        if reach is not None and (reach[0] < 0 or reach[1] >= file.shape[1]):
            return None
        steps = (file.strides[0], *(s * file.strides[1] for s in strides))
        return _view(file[:, start:] if reach is not None else file, (SLICES, *sizes), steps, writeable)

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
