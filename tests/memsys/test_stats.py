"""Access-stream statistics on streams whose answer is known by hand, and on the book's DMA examples."""

import numpy as np
import pytest

from furiosa_opt.memsys.dm import dm_bank_place
from furiosa_opt.memsys.hbm import hbm_place
from furiosa_opt.memsys.stats import dm_stats, hbm_stats, longest_run

SLICE = 4 << 20

# the 8 units of 256 bytes in one HBM row: byte bits 14–16 vary, and bits 10–12 follow them, so the channel
# XOR cancels and the walk stays in one bank and one row (a plain 256-byte stride walks the stacks and
# channels instead: bits 8–12)
ONE_ROW = np.arange(8) * ((1 << 14) + (1 << 10))


def stream(base: int, loops: list[tuple[int, int]]) -> np.ndarray:
    """A DMA descriptor's addresses: (size, stride) loops, outermost first."""
    index = np.zeros(1, np.int64)
    for size, stride in loops:
        index = (index[:, None] + np.arange(size) * stride).ravel()
    return base + index


def test_a_walk_over_one_row_touches_one_bank_with_no_row_switch():
    assert len(set(hbm_place(ONE_ROW).bank_id.tolist())) == 1
    assert set(hbm_place(ONE_ROW).row.tolist()) == {0}
    stats = hbm_stats(ONE_ROW, 256)
    assert (stats.channels_touched, stats.banks_touched, stats.row_switches, stats.row_switch_share) == (1, 1, 0, 0.0)
    assert not stats.stack_toggles


def test_a_stride_that_keeps_the_bank_and_changes_the_row_switches_every_access():
    addresses = np.arange(32) << 29  # row bits 29–33: outside the channel XOR
    assert len(set(hbm_place(addresses).bank_id.tolist())) == 1
    stats = hbm_stats(addresses, 256)
    assert (stats.banks_touched, stats.row_switches, stats.row_switch_share) == (1, 31, 1.0)


def test_row_switches_are_counted_per_bank_not_between_neighbours():
    """Two banks taking turns, each keeping its row: the stream alternates, no bank ever switches."""
    other_bank = 1 << 17 | 1 << 9  # bank bit 0, with channel bit 0 set back by bit 9
    addresses = np.tile([0, other_bank], 50)
    assert len(set(hbm_place([0, other_bank]).channel_id.tolist())) == 1
    stats = hbm_stats(addresses, 256)
    assert (stats.banks_touched, stats.row_switches, stats.channels_touched) == (2, 0, 1)
    switching = np.tile([0, other_bank, 1 << 29], 10)  # the third is bank 0's row 256
    assert hbm_stats(switching, 256).row_switches == 19  # bank 0 alternates rows; bank 1 keeps its own


def test_an_offset_of_4_bytes_makes_every_access_unaligned():
    aligned = hbm_stats(np.arange(64) * 256, 256)
    assert (aligned.unaligned, aligned.crossing, aligned.partial, aligned.transfers) == (0, 0, 0, 64)
    assert aligned.channels_touched == 32
    shifted = hbm_stats(np.arange(64) * 256 + 4, 256)
    assert (shifted.requests, shifted.unaligned, shifted.crossing, shifted.partial) == (64, 64, 64, 64)
    assert shifted.transfers == 128
    small = hbm_stats(np.arange(64) * 256 + 4, 8)  # unaligned, but inside one unit
    assert (small.unaligned, small.crossing, small.partial, small.transfers) == (64, 0, 64, 64)


def test_a_packet_splits_into_256_byte_requests_from_its_first_byte():
    """The book's 2,800-byte packet: ten requests of 256 bytes and one of 240."""
    stats = hbm_stats([0], 2800)
    assert (stats.requests, stats.unaligned, stats.crossing, stats.transfers) == (11, 0, 0, 11)
    assert stats.partial == 1  # the 240-byte leftover: a write of it is the book's read-modify-write
    assert hbm_stats([8], 2800).crossing == 10  # the last request, 240 bytes from 2,568, stays in its unit


def test_the_books_example_5_never_toggles_the_stack_bit():
    """Every (cluster i, DMN j) descriptor of dma-engine.md's Example 5: 16 of the 32 channels."""
    reads = [stream(i * 2**20 + j * 2**18, [(8, 512), (32, 4096), (2, 131072)]) for i in range(2) for j in range(4)]
    stats = hbm_stats(np.concatenate(reads), 256)
    assert (stats.requests, stats.channels_touched, stats.stack_toggles) == (4096, 16, False)


def test_the_books_example_4_switches_rows_on_every_request_over_all_channels():
    """dma-engine.md's Example 4: 524,288 requests, 16,384 a channel, each bank's next row another."""
    reads = [
        stream(i * 2**20 + j * 2**18, [(256, 1024), (4, 256), (32, 2**21), (2, 2**26)])
        for i in range(2)
        for j in range(4)
    ]
    one = hbm_stats(reads[0], 256)
    assert (one.channels_touched, one.stack_toggles, one.row_switch_share) == (32, True, 1.0)
    place = hbm_place(np.concatenate(reads))
    assert np.bincount(place.channel_id).tolist() == [16384] * 32


def test_the_books_example_1_spreads_over_all_channels():
    for addresses in (stream(0, [(8, 2048), (8, 256)]), stream(16384, [(8, 256), (8, 2048)])):
        stats = hbm_stats(addresses, 256)
        assert (stats.requests, stats.channels_touched, stats.row_switches) == (64, 32, 0)


def test_64_consecutive_accesses_to_one_dm_bank_make_a_run_of_64():
    same_bank = np.arange(64) * 128  # offsets 128 apart: bank 0 of rows 0–63
    assert set(dm_bank_place(same_bank).bank.tolist()) == {0}
    stats = dm_stats(same_bank, 8)
    assert (stats.accesses, stats.banks_touched, stats.longest_bank_run, stats.starves_dma) == (64, 1, 64, True)
    assert dm_stats(same_bank[:63], 8).starves_dma is False
    broken = np.insert(same_bank, 32, 8)  # one access to bank 1 in the middle
    assert dm_stats(broken, 8).longest_bank_run == 32


def test_a_sequential_dm_scan_holds_no_bank_twice_in_a_row():
    stats = dm_stats(np.arange(256) * 8, 8)
    assert (stats.banks_touched, stats.longest_bank_run, stats.slices_used, stats.dmns_used) == (16, 1, 1, 1)


def test_a_wide_access_holds_every_bank_it_covers():
    assert dm_stats(np.zeros(10, np.int64), 16).banks_touched == 2
    assert dm_stats(np.zeros(10, np.int64), 16).longest_bank_run == 10
    assert dm_stats([4], 8).banks_touched == 2  # bytes 4–11: banks 0 and 1
    whole = dm_stats(np.arange(8) * 256, 256)  # a DMA request covers all 16 banks twice
    assert (whole.banks_touched, whole.longest_bank_run) == (16, 8)


def test_a_run_ends_where_the_stream_moves_to_another_slice():
    addresses = np.concatenate([np.zeros(40, np.int64), np.full(40, SLICE)])  # bank 0 of slices 0 and 1
    stats = dm_stats(addresses, 8)
    assert (stats.longest_bank_run, stats.banks_touched, stats.slices_used) == (40, 2, 2)


def test_dmn_balance_of_interleaved_and_lopsided_streams():
    dmn = 32 * SLICE
    interleaved = dm_stats(np.arange(64) % 2 * dmn + np.arange(64) // 2 * 256, 256)  # the book's two DMNs in turn
    assert (interleaved.dmns_used, interleaved.dmn_balance) == (2, 1.0)
    lopsided = dm_stats(np.array([0, 0, 0, dmn]), 8)
    assert (lopsided.dmns_used, lopsided.dmn_balance) == (2, pytest.approx(2 / 3))
    spread = dm_stats(np.arange(512) * SLICE, 8)  # every slice of the chip once
    assert (spread.dmns_used, spread.dmn_balance, spread.slices_used) == (16, 1.0, 512)


def test_longest_run_by_hand():
    touched = np.array([[1, 0], [1, 1], [1, 1], [0, 1], [0, 1]], bool)
    assert longest_run(touched, np.zeros(5, np.int64)) == 4
    assert longest_run(touched, np.array([0, 0, 1, 1, 1])) == 3
    assert longest_run(np.zeros((0, 16), bool), np.zeros(0, np.int64)) == 0


def test_empty_streams():
    assert hbm_stats([], 256).requests == 0 and hbm_stats([], 256).channels_touched == 0
    empty = dm_stats([], 8)
    assert (empty.accesses, empty.dmns_used, empty.dmn_balance, empty.longest_bank_run) == (0, 0, 1.0, 0)


@pytest.mark.parametrize(
    ("call", "addresses", "size", "message"),
    [
        (hbm_stats, [(48 << 30) - 128], 256, "HBM address 51539607424 with 256 byte"),
        (hbm_stats, [0], 0, "access size 0"),
        (
            dm_stats,
            [(512 << 10) - 4],
            8,
            "a DM access of 8 bytes at offset 524284 of a slice runs past its 524288 bytes",
        ),
        (dm_stats, [SLICE + (600 << 10)], 8, "is 614400 bytes into slice 1"),
    ],
)
def test_a_stream_past_its_memory_is_refused(call, addresses, size, message):
    with pytest.raises(ValueError, match=message):
        call(addresses, size)


def test_requests_that_stay_on_one_dmn_halve_the_dm_bandwidth():
    """A DMN moves 128 bytes a cycle: 256-byte requests taking turns between the pair's DMNs go one a cycle;
    the same requests to slices of one DMN go one every two cycles, less what the slices' queues absorb."""
    from furiosa_opt.memsys.dma import Side, dma_cost

    hbm = Side("hbm", np.zeros(2048, np.int64), np.arange(2048) * 256)
    turns = np.arange(2048) % 64  # slices 0–63: DMN 0 and 1 in turn, 32 apart
    alternating = (turns % 2 * 32 + turns // 2) * SLICE + np.arange(2048) // 64 * 256
    one = (np.arange(2048) % 32) * SLICE + np.arange(2048) // 32 * 256  # slices 0–31
    zero = np.zeros(2048, np.int64)
    both, single = dma_cost(hbm, Side("dm", zero, alternating), 256), dma_cost(hbm, Side("dm", zero, one), 256)
    assert (both.cycles, both.dm_stalls, both.bottleneck) == (2048 + 500, 0, "engine")
    assert single.bottleneck == "DMN" and single.dm_stalls == 2048 - 2 * 32  # 32 slices' queues, 2 entries each
