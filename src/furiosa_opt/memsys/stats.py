"""What an access stream does to HBM or DM: the counts a timing model needs, computed without timing it.

A stream is the byte addresses one command touches, in the order it touches them, each access `size`
bytes. For HBM these are one chip's addresses and each access splits, as the DMA splits a packet, into
requests of at most 256 bytes from its first byte. For DM they are addresses from the DM base of one chip
(`dm.dm_place`), each access inside one slice; a Tensor Unit sequencer's per-slice offsets are slice 0's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from furiosa_opt.arch import RNGD
from furiosa_opt.memsys.arrays import byte_addresses
from furiosa_opt.memsys.dm import DMNS, SLICES, dm_place
from furiosa_opt.memsys.hbm import hbm_place

UNIT = RNGD.dma_burst_bytes  # HBM's transfer unit, and the DMA's request


@dataclass(frozen=True, slots=True)
class HbmStats:
    """An HBM access stream in numbers (`hbm_stats`)."""

    requests: int  # what the accesses split into: at most 256 bytes each
    unaligned: int  # requests not starting on a 256-byte boundary
    crossing: int  # requests spanning two 256-byte units: a read of one takes two transfers
    partial: int  # requests not covering whole 256-byte units: a write of one is a read-modify-write
    transfers: int  # 256-byte units moved: a crossing request moves two
    channels_touched: int  # of the chip's 32
    stack_toggles: bool  # both stacks are used; without it half the channels sit idle
    banks_touched: int  # distinct banks: each opens its first row once
    row_switches: int  # transfers whose bank last had another row open
    row_switch_share: float  # row switches per transfer that found its bank already used (0 when none did)


def hbm_stats(addresses: ArrayLike, size: int) -> HbmStats:
    """Channels, stacks, row switches and alignment of `size`-byte accesses at `addresses`, in order.

    A bank keeps its last row open, so a row switch is a transfer whose bank's previous transfer (not the
    stream's previous transfer) was to another row; the first transfer to each bank is counted apart, in
    `banks_touched`, as it has no row to switch from.

    >>> stats = hbm_stats(np.arange(32) * 256, 256)
    >>> stats.channels_touched, stats.stack_toggles, stats.row_switches, stats.unaligned
    (32, True, 0, 0)
    >>> hbm_stats(np.arange(4) << 29, 256).row_switch_share
    1.0
    """
    starts = byte_addresses(addresses, RNGD.hbm_bytes_per_chip, "HBM address", size).ravel()
    request, length = split_requests(starts, size)
    units, crossing = hbm_units(request, length)
    place = hbm_place(units * UNIT)
    switch, repeat = row_switches(place.bank_id, place.row)
    repeats, switches = int(repeat.sum()), int(switch.sum())
    return HbmStats(
        requests=len(request),
        unaligned=int((request % UNIT != 0).sum()),
        crossing=int(crossing.sum()),
        partial=int(partial(request, length).sum()),
        transfers=len(units),
        channels_touched=len(np.unique(place.channel_id)),
        stack_toggles=len(np.unique(place.stack)) == RNGD.hbm_stacks_per_chip,
        banks_touched=len(units) - repeats,
        row_switches=switches,
        row_switch_share=switches / repeats if repeats else 0.0,
    )


def split_requests(starts: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of the requests `size`-byte accesses at `starts` split into: at most 256 bytes each,
    counted from each access's first byte, as the DMA splits a packet.

    >>> [r.tolist() for r in split_requests(np.array([0, 1000]), 300)]
    [[0, 256, 1000, 1256], [256, 44, 256, 44]]
    """
    pieces = np.arange(-(-size // UNIT)) * UNIT
    return (starts[:, None] + pieces).ravel(), np.tile(np.minimum(UNIT, size - pieces), len(starts))


def partial(request: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Which requests leave part of a 256-byte unit they touch: written, each such unit is read, modified and
    written back.

    >>> partial(np.array([0, 0, 8]), np.array([256, 128, 248])).tolist()
    [False, True, True]
    """
    return (request % UNIT != 0) | ((request + length) % UNIT != 0)


def hbm_units(request: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the 256-byte units the requests move, in order; which requests cross a unit boundary). A crossing
    request moves two units, the second right after the first.

    >>> [r.tolist() for r in hbm_units(np.array([0, 250]), np.array([256, 16]))]
    [[0, 0, 1], [False, True]]
    """
    first, last = request // UNIT, (request + length - 1) // UNIT
    crossing = last > first
    counts = 1 + crossing
    units = np.repeat(first, counts)
    units[np.cumsum(counts)[crossing] - 1] += 1
    return units, crossing


def row_switches(bank: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which transfers switch their bank's open row; which find their bank already used), in input order.

    A bank keeps its last row open, so what counts is the bank's own previous transfer, not the stream's.

    >>> [r.tolist() for r in row_switches(np.array([0, 1, 0, 0]), np.array([5, 5, 6, 6]))]
    [[False, False, True, False], [False, False, True, True]]
    """
    order = np.argsort(bank, kind="stable")  # each bank's transfers, still in stream order
    again = np.zeros(len(bank), bool)
    again[1:] = bank[order][1:] == bank[order][:-1]
    switch = again.copy()
    switch[1:] &= row[order][1:] != row[order][:-1]
    out_switch, out_again = np.empty_like(switch), np.empty_like(again)
    out_switch[order], out_again[order] = switch, again
    return out_switch, out_again


@dataclass(frozen=True, slots=True)
class DmStats:
    """A DM access stream in numbers (`dm_stats`)."""

    accesses: int
    dmns_used: int  # of the chip's 16; each gives 128 B/cycle
    dmn_balance: float  # mean accesses of a used DMN over the busiest one's: 1.0 when even (and when empty)
    slices_used: int  # of the chip's 512; each queues 2 DMA requests
    banks_touched: int  # distinct banks of distinct slices
    longest_bank_run: int  # the most consecutive accesses that all touch one bank of one slice

    @property
    def starves_dma(self) -> bool:
        """The 64-access rule on this stream alone (`starves_dma`)."""
        return starves_dma(self.longest_bank_run)


def starves_dma(accesses: int) -> bool:
    """The 64-access rule: a DM bank held this many accesses in a row (by one engine, or added over the
    engines that hold it while a DMA waits) can keep the DMA's request waiting past the NoC's window.

    >>> starves_dma(63), starves_dma(64)
    (False, True)
    """
    return accesses >= RNGD.bank_starvation_accesses


def dm_stats(addresses: ArrayLike, size: int) -> DmStats:
    """DMN balance, slices, banks and the longest same-bank run of `size`-byte DM accesses, in order.

    An access covers every bank its bytes fall in, so it holds each of them: 64 accesses of 16 bytes in a
    row at one offset hold two banks for 64 accesses each. A run ends where the stream moves to another
    slice, since a bank of another slice is another bank.

    >>> stats = dm_stats(np.arange(64) * 128, 8)
    >>> stats.banks_touched, stats.longest_bank_run, stats.starves_dma
    (1, 64, True)
    >>> dm_stats(np.arange(64) * 8, 8).longest_bank_run
    1
    """
    place = dm_place(byte_addresses(addresses, SLICES * RNGD.dm_slice_stride, "DM address", size).ravel())
    over = place.offset + size > RNGD.dm_bytes_per_slice
    if over.any():
        raise ValueError(
            f"a DM access of {size} bytes at offset {place.offset[over][0]} of a slice runs past its "
            f"{RNGD.dm_bytes_per_slice} bytes"
        )
    per_dmn = np.bincount(place.dmn_id, minlength=DMNS)
    used = per_dmn[per_dmn > 0]
    width, banks = RNGD.dm_bank_width_bytes, RNGD.dm_banks_per_slice
    word = place.offset // width
    words = (place.offset + size - 1) // width - word + 1
    touched = (np.arange(banks) - word[:, None]) % banks < words[:, None]  # (access, bank of its slice)
    bank_ids = place.slice_id[:, None] * banks + np.arange(banks)
    return DmStats(
        accesses=len(place.offset),
        dmns_used=len(used),
        dmn_balance=float(used.mean() / used.max()) if len(used) else 1.0,
        slices_used=len(np.unique(place.slice_id)),
        banks_touched=len(np.unique(bank_ids[touched])),
        longest_bank_run=longest_run(touched, place.slice_id),
    )


def longest_run(touched: np.ndarray, slice_id: np.ndarray) -> int:
    """The longest stretch of consecutive rows of `touched` (access × bank) that are all True in one column,
    a change of `slice_id` between two accesses ending every stretch.

    >>> longest_run(np.array([[True, False], [True, True], [True, True]]), np.array([0, 0, 1]))
    2
    """
    return int(bank_runs(touched, slice_id).max(initial=0))


def bank_runs(touched: np.ndarray, slice_id: np.ndarray) -> np.ndarray:
    """`longest_run` per column: for each bank, the most consecutive accesses that hold it.

    >>> bank_runs(np.array([[True, False], [True, True], [False, True]]), np.zeros(3, int))
    array([2, 2])
    """
    runs = np.zeros(touched.shape[1], np.int64)
    if touched.size == 0:
        return runs
    moves = np.flatnonzero(slice_id[1:] != slice_id[:-1]) + 1
    rows = np.insert(touched, moves, False, axis=0)  # a row of False where the slice changes
    ended = np.vstack([rows, np.zeros((1, rows.shape[1]), bool)])  # and after the last access
    gaps = np.flatnonzero(~ended.T.ravel())  # each bank's column after the previous one
    np.maximum.at(runs, gaps // len(ended), np.diff(gaps, prepend=-1) - 1)
    return runs
