"""What one DMA command costs, from its own address streams: the engines that issue its requests, the DMNs
and HBM channels that serve them (dma-engine.md, "Optimizations"; memory-performance.md).

A command is an aggregate: its packets are split, as the book's compiler splits a move, over the chip's
DMA engines, one to a pair of DMNs, by the DM side's DMN (the source's when both sides are DM; one engine
per chip when neither is). The engines run side by side, so the command takes its startup plus the
longest of:
* an engine's issue: one request (at most 256 bytes of a packet) a cycle, reads and writes in series when
  both sides are the same memory (dma-engine.md, Examples 1 and 3);
* the cycles that engine's requests wait for a DMN: a DMN moves 128 bytes a cycle, half a 256-byte
  request, so requests must take turns between the pair's two DMNs to keep one a cycle ("DMN and Slice
  Interleaving"); a run to one DMN is absorbed only as far as its slices' 2-entry queues reach
  (`dmn_stalls`);
* the busiest DM slice: its DMN moves its requests 128 bytes a cycle, while they hold all 16 of its banks;
* the busiest HBM channel: the longer of its data and its row switches. Data: a 256-byte unit takes 4
  channel cycles at 0.75 GHz (16/3 at 1 GHz), a partial write `hbm_partial_write_factor` units
  (read-modify-write), a read crossing a unit boundary two units; a channel whose transfers never leave
  one bank group of one slice runs at tCCD 4 instead of 2 (half), one that changes slices but never bank
  groups within one at tCCD 3. Row switches: `hbm_row_switch_cycles` for each unit whose bank last had
  another row open. The controller moves other banks' data while a bank switches rows, so the two
  overlap; switches, one at a time, decide only when there are many.

How this reaches the book's figures, where the controller would do better than its arithmetic: the
engines' requests reach the channels in turn (request k of every engine before request k + 1 of any), and
row switches are counted per bank in that order, one at a time on their channel, as the book's Example 4
counts them ("16,384 per channel × ~40 cycles"); FR-FCFS reordering within a channel's 64-entry queue is
not credited beyond that overlap. The first row a bank opens is not charged, which is what Example 5's 5.3
cycles per request assume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.memsys.dm import DMNS, SLICES, DmPlace, dm_place
from furiosa_opt.memsys.hbm import BANKS, CHANNELS, hbm_place
from furiosa_opt.memsys.stats import (
    UNIT,
    DmStats,
    HbmStats,
    dm_stats,
    hbm_stats,
    hbm_units,
    partial,
    row_switches,
    split_requests,
)

UNIT_CYCLES = UNIT / (RNGD.hbm_channel_bytes_per_cycle * RNGD.hbm_channel_ghz) * RNGD.clock_ghz  # 16/3
DMNS_PER_ENGINE = DMNS // RNGD.dma_engines_per_chip  # 2: an engine serves a pair of DMNs
TCCD_FACTOR = {  # a channel's transfer time against the best case, by what its transfers leave to alternate
    "bank groups": 1.0,
    "slices": RNGD.hbm_tccd_other_slice_cycles / RNGD.hbm_tccd_other_bank_group_cycles,
    "one bank group": RNGD.hbm_tccd_same_bank_group_cycles / RNGD.hbm_tccd_other_bank_group_cycles,
}


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a DMA, a packet at a time: `memory` is "hbm" or "dm"; `address` is chip-local (HBM) or
    from the chip's DM base (DM), `chip` the chip of each packet."""

    memory: str
    chip: np.ndarray
    address: np.ndarray


@dataclass(frozen=True, slots=True)
class DmaCost:
    """A DMA command's cycles and what decides them (`dma_cost`)."""

    cycles: int
    issue: int  # the busiest engine's requests, reads and writes in series when one memory holds both sides
    dm_stalls: int  # that engine's cycles waiting for a DMN
    hbm: int  # the busiest HBM channel's cycles (0 without HBM)
    engines: int  # DMA engines the command spreads over
    bottleneck: str  # "engine", "DMN" or "HBM"
    # What each shared unit spends on the command alone (`cycles` is the startup plus the largest): the
    # simulator shares these between commands that run at once (`sim.timing`).
    engine_cycles: np.ndarray  # per DMA engine (chip-major, 8 a chip): issue and DMN stalls
    channel_cycles: np.ndarray  # per HBM channel (chip-major, 32 a chip)
    slice_cycles: int  # the busiest DM slice's cycles of DMN transfers, all 16 banks held for each
    read: Side
    write: Side
    packet: int

    def stats(self) -> tuple[HbmStats | DmStats, HbmStats | DmStats]:
        """What the read and the write stream do to their memories, for a report (computed on demand)."""
        return side_stats(self.read, self.packet), side_stats(self.write, self.packet)


def dma_cost(read: Side, write: Side, packet: int) -> DmaCost:
    """The cycles of a DMA moving a `packet`-byte packet from each `read` address to the `write` address
    beside it, in order.

    >>> hbm = Side("hbm", np.zeros(64, np.int64), np.arange(64) * 256)
    >>> other = Side("hbm", np.zeros(64, np.int64), (1 << 20) + np.arange(64) * 256)
    >>> dma_cost(hbm, other, 256).cycles  # the book's Example 1: 64 reads, 64 writes, startup
    628
    """
    pieces = -(-packet // UNIT)  # requests a packet splits into, the same on both sides
    sides = {"read": read, "write": write}
    starts = {name: split_requests(side.address, packet)[0] for name, side in sides.items()}
    length = split_requests(read.address, packet)[1]
    chips = {name: np.repeat(side.chip, pieces) for name, side in sides.items()}
    places = {name: dm_place(starts[name]) for name, side in sides.items() if side.memory == "dm"}
    local = next(iter(places), None)  # the source's when both sides are DM
    if local is None:
        engine = chips["read"]
    else:
        engine = chips[local] * RNGD.dma_engines_per_chip + places[local].dmn_id // DMNS_PER_ENGINE
    order = np.lexsort((engine, rank_within(engine)))  # the engines' requests reach memory in turn
    issue = np.bincount(engine) * (2 if read.memory == write.memory else 1)
    stalls = np.zeros_like(issue)
    channels = (max(int(side.chip.max(initial=0)) for side in sides.values()) + 1) * CHANNELS
    channel_cycles = np.zeros(channels)  # one memory on both sides: its reads, then its writes
    for name in sides:
        if name in places:
            stalls += dmn_stalls(engine, places[name], length, len(issue))
        else:
            channel_cycles += hbm_channel_cycles(
                chips[name][order], starts[name][order], length[order], name == "write", channels
            )
    dm_slices = [chips[name] * SLICES + place.slice_id for name, place in places.items()]
    transfers = -(-length // RNGD.dm_bytes_per_dmn_cycle)  # a DMN's cycles for each request
    slice_busy = np.bincount(np.concatenate([np.zeros(0, np.int64), *dm_slices]),
                             weights=np.tile(transfers, len(dm_slices)))  # fmt: skip
    engine_time = issue + stalls
    busiest = int(np.argmax(engine_time))
    hbm = int(np.ceil(channel_cycles.max()))
    slice_cycles = int(slice_busy.max(initial=0))
    engine_busy = int(engine_time[busiest])
    work = max(engine_busy, hbm, slice_cycles)
    bottleneck = (
        "HBM"
        if hbm > max(engine_busy, slice_cycles)
        else "DMN"
        if stalls[busiest] or slice_cycles > engine_busy
        else "engine"
    )
    return DmaCost(
        cycles=RNGD.dma_startup_cycles + work,
        issue=int(issue[busiest]),
        dm_stalls=int(stalls[busiest]),
        hbm=hbm,
        engines=int((np.bincount(engine) > 0).sum()),
        bottleneck=bottleneck,
        read=read,
        write=write,
        packet=packet,
        engine_cycles=engine_time,
        channel_cycles=channel_cycles,
        slice_cycles=slice_cycles,
    )


def side_stats(side: Side, packet: int) -> HbmStats | DmStats:
    """`memsys.stats` of one side's packets."""
    return hbm_stats(side.address, packet) if side.memory == "hbm" else dm_stats(side.address, packet)


def rank_within(group: np.ndarray) -> np.ndarray:
    """Each element's position among the elements of its group, in order.

    >>> rank_within(np.array([3, 1, 3, 3, 1])).tolist()
    [0, 0, 1, 2, 1]
    """
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    first = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    counts = np.diff(np.r_[first, len(group)])
    rank = np.empty(len(group), np.int64)
    rank[order] = np.arange(len(group)) - np.repeat(first, counts)
    return rank


def dmn_stalls(engine: np.ndarray, place: DmPlace, length: np.ndarray, engines: int) -> np.ndarray:
    """Per engine, the cycles its requests wait for a DMN.

    An engine issues a request a cycle and a DMN serves `⌈length / 128⌉` cycles of one (two for 256
    bytes), so a run of requests to one DMN falls behind by the difference. What it falls behind waits in
    the queues of the slices it writes (2 entries each), and drains while the engine feeds the pair's other
    DMN; only what does not fit stalls the engine. A 4 KiB packet is 16 requests to one slice: alone, it
    stalls 14 cycles; requests that take turns between the two DMNs never stall.

    >>> place = dm_place(np.array([0, 32, 1, 33]) * (4 << 20))  # slices of DMN 0 and 1 in turn
    >>> dmn_stalls(np.zeros(4, np.int64), place, np.full(4, 256), 1).tolist()
    [0]
    >>> dmn_stalls(np.zeros(16, np.int64), dm_place(np.arange(16) * 256), np.full(16, 256), 1).tolist()
    [14]
    """
    order = np.argsort(engine, kind="stable")
    e, dmn, slice_id = engine[order], place.dmn_id[order], place.slice_id[order]
    busy = -(-length[order] // RNGD.dm_bytes_per_dmn_cycle)
    starts = np.flatnonzero(np.r_[True, (e[1:] != e[:-1]) | (dmn[1:] != dmn[:-1])])
    run = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(e)]))
    behind = np.bincount(run, weights=busy - 1)
    slices = distinct_per(run, slice_id, len(starts))
    stall = np.maximum(0, behind - RNGD.dm_dma_queue_entries * slices)
    return np.bincount(e[starts], weights=stall, minlength=engines).astype(np.int64)


def distinct_per(group: np.ndarray, value: np.ndarray, groups: int) -> np.ndarray:
    """How many distinct values each group holds (groups numbered from 0).

    >>> distinct_per(np.array([0, 0, 0, 1]), np.array([5, 6, 5, 5]), 2).tolist()
    [2, 1]
    """
    pairs = np.sort(group * (int(value.max(initial=0)) + 1) + value)
    first = np.r_[True, pairs[1:] != pairs[:-1]] if len(pairs) else np.zeros(0, bool)
    return np.bincount(pairs[first] // (int(value.max(initial=0)) + 1), minlength=groups)


def hbm_channel_cycles(
    chip: np.ndarray, request: np.ndarray, length: np.ndarray, write: bool, channels: int
) -> np.ndarray:
    """Cycles each of `channels` HBM channels (chip-major, 32 a chip) spends on the requests, in the order
    they arrive."""
    units, crossing = hbm_units(request, length)
    counts = 1 + crossing
    place = hbm_place(units * UNIT)
    chips = np.repeat(chip, counts)
    channel, bank = chips * CHANNELS + place.channel_id, chips * BANKS + place.bank_id
    switch, _ = row_switches(bank, place.row)
    factor = tccd_factors(channel, place.slice, place.bank_group)
    moving = UNIT_CYCLES * factor[channel]
    if write:
        moving = np.where(
            np.repeat(partial(request, length), counts), UNIT_CYCLES * RNGD.hbm_partial_write_factor, moving
        )
    data = np.bincount(channel, weights=moving, minlength=channels)
    switching = np.bincount(channel, weights=switch * float(RNGD.hbm_row_switch_cycles), minlength=channels)
    return np.maximum(data, switching)


def tccd_factors(channel: np.ndarray, slice_: np.ndarray, bank_group: np.ndarray) -> np.ndarray:
    """Per channel, its transfer time against the best case (`TCCD_FACTOR`): 1 when some slice sees two bank
    groups, else 1.5 when it sees two slices, else 2.

    >>> tccd_factors(np.array([0, 0, 1, 1, 2]), np.array([0, 0, 0, 1, 0]), np.array([0, 1, 2, 2, 3])).tolist()
    [1.0, 1.5, 2.0]
    """
    channels, slices, groups = (
        int(channel.max(initial=-1)) + 1,
        RNGD.hbm_slices_per_channel,
        RNGD.hbm_bank_groups_per_slice,
    )
    slot = (channel * slices + slice_) * groups + bank_group
    seen = (np.bincount(slot, minlength=channels * slices * groups) > 0).reshape(channels, slices, groups)
    many_groups = (seen.sum(axis=2) > 1).any(axis=1)
    many_slices = seen.any(axis=2).sum(axis=1) > 1
    return np.select(
        [many_groups, many_slices], [TCCD_FACTOR["bank groups"], TCCD_FACTOR["slices"]], TCCD_FACTOR["one bank group"]
    )
