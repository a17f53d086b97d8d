"""The RNGD numbers: the one table every checker, cost model and simulator reads.

Each entry names where upstream states it (book chapter under `docs/src/`, or the crate constant).
Nothing else in the package may spell these numbers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rngd:
    # ---- hierarchy (mapping-tensors/spatial-temporal-dimensions.md, constraints.rs, pe_count.rs)
    clusters_per_chip: int = 2
    slices_per_cluster: int = 256
    cluster_sizes: tuple[int, ...] = (1, 2)  # `Cluster::SIZE` accepted by every DM/stream tensor
    slice_sizes: tuple[int, ...] = (64, 128, 256)  # `Slice::SIZE` accepted
    slices_per_pe: int = 64
    pe_counts: tuple[int, ...] = (1, 2, 4, 8)
    lane_sizes: tuple[int, ...] = (1, 2, 4, 8)  # TRF lanes / MAC rows (verify/mod.rs)
    # the DMA examples' clock (dma-engine.md, Example 5: 256 bytes at 48 GB/s are "~5.3 cycles at 1 GHz"); a
    # cycle count in this table is at this clock unless its comment names another
    clock_ghz: float = 1.0

    # ---- memories (memory-performance.md, register-files.md, verify/mod.rs)
    hbm_bytes_per_chip: int = 48 << 30
    dm_bytes_per_slice: int = 512 << 10
    trf_capacity_bytes: int = 65536  # TRF_CAPACITY_BYTES: logical, 8 KiB per lane
    vrf_bytes_per_slice: int = 8192

    # ---- streams (lower/src/verify/mod.rs, constraints.rs, commit-engine.md)
    flit_bytes: int = 32
    packet_align_bytes: int = 8  # Fetch/Switch packets
    commit_packet_bytes: tuple[int, ...] = (8, 16, 24, 32)  # COMMIT_VALID_PACKET_SIZES
    commit_base_bytes: int = 8  # COMMIT_BASE_SIZE
    contract_packet_flits: tuple[int, ...] = (1, 2)  # contract_outer output: 32 or 64 B
    temporal_accumulator_cols: int = 32  # packet bound after the packet reducer
    accumulator_cells: int = 1024  # contract_lane accumulator buffer
    ve_lanes: int = 8  # Vector Engine flit in i32/f32 elements (Way8)
    ve_reduce_slots: int = 8  # intra-slice reduce accumulator slots: InnerTime::SIZE ≤ 8 (intra-slice-reduce.md)

    # ---- Transpose Engine (computing-tensors/transpose-engine.md, "Parameters" and "Buffering Modes")
    # element bits → (valid elements read per 32-byte flit, most input rows, legal input column counts)
    transpose_limits: tuple[tuple[int, tuple[int, int, tuple[int, ...]]], ...] = (
        (4, (16, 16, (16, 32))),
        (8, (8, 8, (8, 16, 32))),
        (16, (8, 4, (8, 16, 32))),
        (32, (8, 2, (8, 16, 32))),
    )
    transpose_buffer_cols: int = 16  # columns per buffer: double buffering when in_cols fits one

    # ---- sequencers (moving-tensors/sequencer.md, lower-types)
    max_sequencer_entries: int = 8
    max_entry_iterations: int = 65536
    fetch_read_bytes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    sub_access_bytes: int = 8  # sub context fetch read and commit write size

    # ---- DMA (moving-tensors/dma-engine.md, tensor/memory.rs)
    dma_sram_write_align: int = 8  # DMA_SRAM_WRITE_WIDTH
    dma_max_packet_bytes: int = 4096
    dma_max_loops: int = 6  # nested loops per side of one external DMA descriptor
    dma_burst_bytes: int = 256  # a packet's requests; also HBM's transfer unit and alignment (memory-performance.md)
    dma_startup_cycles: int = 500
    dma_engines_per_chip: int = 8
    pcie_bytes_per_cycle: int = 30  # dma-engine.md: PCIe DMA, reads and writes
    spm_bytes_per_pe: int = 4096  # an unscaled gather's index list (OperatorVerifier::verify_indirect_tensor_dma)

    # ---- DM geometry and banks (memory-performance.md, "Data Memory (DM)" and its subsections)
    dmns_per_cluster: int = 8
    slices_per_dmn: int = 32  # a DMN's router ring runs slice 0 → 31, the next 32 → 63: consecutive numbers
    dm_banks_per_slice: int = 16  # a per-slice offset's bits 3–6 ("Bank Structure in a Slice")
    dm_bank_width_bytes: int = 8  # bits 0–2
    dm_rows_per_bank: int = 4096  # bits 7–18
    dm_bytes_per_dmn_cycle: int = 128  # a DMN's 32 slices share one path ("DMN and Slice Interleaving")
    dm_slice_stride: int = 4 << 20  # the virtual span of one slice's partition (dma-engine.md, `slice_stride`)
    dm_dma_queue_entries: int = 2  # a slice's command queue of pending DMA requests
    # who wins a DM bank, first to last ("Bank Starvation"); DMA waits for everyone
    dm_bank_priority: tuple[str, ...] = ("main fetch", "main commit", "sub fetch", "sub commit", "dma")
    noc_ack_cycles: int = 4096  # a NoC port unanswered this long is declared dead: a cluster reset
    # < 64 consecutive same-bank accesses, or DMA must wait: (256 / 128) · 64 · 32 slices reaches noc_ack_cycles
    bank_starvation_accesses: int = 64
    # the waiting DMA's own request counts toward that total (schedule.md: "main 30, sub 35, DMA 1" = 66)
    bank_starvation_dma_accesses: int = 1

    # ---- HBM geometry (memory-performance.md, "High-Bandwidth Memory (HBM)", "Peak Bandwidth")
    hbm_stacks_per_chip: int = 2
    hbm_channels_per_stack: int = 16
    hbm_slices_per_channel: int = 3
    hbm_bank_groups_per_slice: int = 4
    hbm_banks_per_bank_group: int = 4
    hbm_rows_per_bank: int = 16 << 10
    hbm_bytes_per_row: int = 2 << 10
    hbm_channel_bytes_per_cycle: int = 64  # one channel controller's transfer per cycle of its clock
    hbm_channel_ghz: float = 0.75  # 64 B × 0.75 GHz = 48 GB/s a channel, × 32 channels ≈ 1.5 TB/s
    hbm_command_queue_entries: int = 64  # per channel controller, scheduled FR-FCFS
    # a row switch in one bank (close, open): the book gives 40–50 ns ("Bank Conflict") and "about 40
    # cycles" at clock_ghz (dma-engine.md, "Channel and DMN Interleaving", Example 4); this is the lower end
    hbm_row_switch_cycles: int = 40
    # a partial write (part of a 256-byte unit) is a read-modify-write: "roughly 50×" an aligned write's time
    # on its channel ("Misaligned Access")
    hbm_partial_write_factor: int = 50
    # tCCD, the least gap between two column commands on one channel, in cycles of hbm_command_ghz
    # ("Column-to-Column Delay"): another bank group of the same slice, another slice, the same bank group
    hbm_command_ghz: float = 1.5
    hbm_tccd_other_bank_group_cycles: int = 2
    hbm_tccd_other_slice_cycles: int = 3
    hbm_tccd_same_bank_group_cycles: int = 4
    # one chip's HBM byte address as fields, each field's address bits least significant first ("Address Space
    # in a Chip"). Bits 20 and 34 spell a slice of 0–3, but a channel has 3: the book keeps bits 34 and 35
    # from both being set and leaves the rest implicit, so memsys/hbm.py reads "slice 3" as slice 2 with the
    # row's top bit set, the one reading that gives each of the 48 GiB its own place
    hbm_address_bits: tuple[tuple[str, tuple[int, ...]], ...] = (
        ("byte", (0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 16)),
        ("stack", (8,)),
        ("channel", (9, 10, 11, 12)),
        ("bank_group", (13, 19)),
        ("bank", (17, 18)),
        ("slice", (20, 34)),
        ("row", (*range(21, 34), 35)),
    )
    # the channel field is XORed with bits 13–28, four at a time (13–16, 17–20, 21–24, 25–28). The book's
    # worked example for the channel's first bit lists bits 9, 13, 21 and 25, leaving out 17, which its rule
    # and its table both include; this follows the rule
    hbm_channel_xor_bits: tuple[int, int] = (13, 28)


RNGD = Rngd()
