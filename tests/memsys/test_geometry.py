"""The memory numbers of `arch.RNGD` against the totals the book gives for them."""

from furiosa_opt.arch import RNGD


def test_hbm_geometry_makes_48_gib_and_1_5_tb_per_second():
    hbm = RNGD
    banks = hbm.hbm_slices_per_channel * hbm.hbm_bank_groups_per_slice * hbm.hbm_banks_per_bank_group
    channels = hbm.hbm_stacks_per_chip * hbm.hbm_channels_per_stack
    assert channels == 32
    assert channels * banks * hbm.hbm_rows_per_bank * hbm.hbm_bytes_per_row == hbm.hbm_bytes_per_chip == 48 << 30
    per_channel = hbm.hbm_channel_bytes_per_cycle * hbm.hbm_channel_ghz  # GB/s
    assert per_channel == 48
    assert channels * per_channel == 1536  # the book's "1.5 TB/s"
    assert hbm.dma_burst_bytes // hbm.hbm_channel_bytes_per_cycle == 4  # "requiring 4 clock cycles per channel"


def test_dm_geometry_makes_256_mb_and_2_tb_per_second():
    slices = RNGD.clusters_per_chip * RNGD.dmns_per_cluster * RNGD.slices_per_dmn
    assert RNGD.dmns_per_cluster * RNGD.slices_per_dmn == RNGD.slices_per_cluster
    row = RNGD.dm_banks_per_slice * RNGD.dm_bank_width_bytes
    assert row == 128 and RNGD.dm_rows_per_bank * row == RNGD.dm_bytes_per_slice
    assert slices * RNGD.dm_bytes_per_slice == 256 << 20
    dmns = RNGD.clusters_per_chip * RNGD.dmns_per_cluster
    assert dmns * RNGD.dm_bytes_per_dmn_cycle * RNGD.clock_ghz == 2048  # the book's "2 TB/s per chip"


def test_the_64_access_rule_follows_from_the_noc_window():
    """(TDMA_IO_BYTE / DMN_IO_BYTE) · accesses · DMN_SIZE < 4096 gives accesses < 64."""
    per_access = RNGD.dma_burst_bytes // RNGD.dm_bytes_per_dmn_cycle * RNGD.slices_per_dmn
    assert per_access * (RNGD.bank_starvation_accesses - 1) < RNGD.noc_ack_cycles
    assert per_access * RNGD.bank_starvation_accesses == RNGD.noc_ack_cycles
    assert RNGD.dm_bank_priority[-1] == "dma" and len(RNGD.dm_bank_priority) == 5


def test_hbm_address_bits_name_each_bit_below_36_once():
    bits = [b for _, field in RNGD.hbm_address_bits for b in field]
    assert sorted(bits) == list(range(36))
    fields = dict(RNGD.hbm_address_bits)
    assert len(fields["byte"]) == 11 and RNGD.hbm_bytes_per_row == 1 << 11
    assert len(fields["row"]) == 14 and RNGD.hbm_rows_per_bank == 1 << 14
    assert 1 << len(fields["channel"]) == RNGD.hbm_channels_per_stack


def test_row_switch_cost_is_the_books_40_to_50_ns_at_the_examples_clock():
    assert 40 <= RNGD.hbm_row_switch_cycles / RNGD.clock_ghz <= 50
    assert RNGD.hbm_tccd_other_bank_group_cycles / RNGD.hbm_command_ghz == 1 / RNGD.hbm_channel_ghz  # full speed
