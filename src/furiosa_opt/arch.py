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

    # ---- memories (memory-performance.md, register-files.md, verify/mod.rs)
    hbm_bytes_per_chip: int = 48 << 30
    dm_bytes_per_slice: int = 512 << 10
    trf_capacity_bytes: int = 65536  # TRF_CAPACITY_BYTES: logical, 8 KiB per lane
    vrf_bytes_per_slice: int = 8192
    spm_bytes_per_pe: int = 4096

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
    dma_burst_bytes: int = 256
    dma_startup_cycles: int = 500
    dma_engines_per_chip: int = 8
    pcie_bytes_per_cycle: int = 30  # dma-engine.md: PCIe DMA, reads and writes
    spm_bytes_per_pe: int = 4096  # an unscaled gather's index list (OperatorVerifier::verify_indirect_tensor_dma)

    # ---- DM banks (memory-performance.md)
    dm_banks_per_slice: int = 16
    dm_bank_width_bytes: int = 8
    bank_starvation_accesses: int = 64  # < 64 consecutive same-bank accesses, or DMA must wait


RNGD = Rngd()
