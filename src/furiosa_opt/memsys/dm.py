"""Where a DM byte lives: cluster, DMN and slice of the chip, and bank, row and byte within the slice.

Within a slice, the book's bit table ("Bank Structure in a Slice") is what the geometry gives when the
banks take turns every `dm_bank_width_bytes`: bits 0–2 are the byte in an 8-byte bank word, bits 3–6 the
bank of 16, bits 7–18 the row of 4,096, so 128 consecutive bytes meet every bank once.

Across slices this follows the project's DM addresses (docs/lir.md, "Addresses"): slice `s` of cluster `c`
starts at `(c·256 + s)·dm_slice_stride` from the DM base (`compiler.lir.DM_BASE`, which this layer cannot
read, so callers pass addresses less it, within one chip). A DMN's router ring joins slices 0–31, the
next one 32–63 ("DMN and Slice Interleaving"), so a DMN holds 32 consecutive slice numbers: the DMN of
slice `s` is `s // 32`, eight to a cluster, and the book's `DMN_stride` is `32·slice_stride`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from furiosa_opt.arch import RNGD
from furiosa_opt.memsys.arrays import byte_addresses, read_only

SLICES = RNGD.clusters_per_chip * RNGD.slices_per_cluster
DMNS = RNGD.clusters_per_chip * RNGD.dmns_per_cluster
ROW_BYTES = RNGD.dm_banks_per_slice * RNGD.dm_bank_width_bytes  # one row across all banks: 128


@dataclass(frozen=True, slots=True, eq=False)
class DmBankPlace:
    """Where each per-slice offset lives in its slice; every field is a read-only int64 array."""

    byte: np.ndarray  # within the bank's 8-byte word
    bank: np.ndarray
    row: np.ndarray


def dm_bank_place(offsets: ArrayLike) -> DmBankPlace:
    """Byte, bank and row of each per-slice byte offset (bits 0–2, 3–6 and 7–18).

    The bank is what two accesses in one slice contend for: it serves one of them a cycle, the highest
    priority first.

    >>> place = dm_bank_place([0, 8, 127, 128])
    >>> place.bank.tolist(), place.row.tolist(), place.byte.tolist()
    ([0, 1, 15, 0], [0, 0, 0, 1], [0, 0, 7, 0])
    """
    o = byte_addresses(offsets, RNGD.dm_bytes_per_slice, "DM slice offset")
    return DmBankPlace(
        byte=read_only(o % RNGD.dm_bank_width_bytes),
        bank=read_only(o // RNGD.dm_bank_width_bytes % RNGD.dm_banks_per_slice),
        row=read_only(o // ROW_BYTES),
    )


@dataclass(frozen=True, slots=True, eq=False)
class DmPlace:
    """Where each DM address of one chip lives; every field is a read-only int64 array."""

    cluster: np.ndarray
    dmn: np.ndarray  # within the cluster
    slice: np.ndarray  # within the cluster
    offset: np.ndarray  # within the slice

    @property
    def dmn_id(self) -> np.ndarray:
        """The DMN among the chip's 16: the unit whose 128 B/cycle path its slices share."""
        return self.cluster * RNGD.dmns_per_cluster + self.dmn

    @property
    def slice_id(self) -> np.ndarray:
        """The slice among the chip's 512, as the project's addresses number it (`c·256 + s`)."""
        return self.cluster * RNGD.slices_per_cluster + self.slice


def dm_place(addresses: ArrayLike) -> DmPlace:
    """Cluster, DMN, slice and in-slice offset of DM addresses taken from the DM base of one chip.

    An address past a slice's 512 KiB, in the rest of its 4 MiB span, holds no byte and is refused.

    >>> place = dm_place([0, 32 * (4 << 20) + 8, 256 * (4 << 20)])
    >>> place.cluster.tolist(), place.dmn.tolist(), place.slice.tolist(), place.offset.tolist()
    ([0, 0, 1], [0, 1, 0], [0, 32, 0], [0, 8, 0])
    """
    a = byte_addresses(addresses, SLICES * RNGD.dm_slice_stride, "DM address")
    slice_id, offset = np.divmod(a, RNGD.dm_slice_stride)
    beyond = offset >= RNGD.dm_bytes_per_slice
    if beyond.any():
        first = a[beyond].flat[0]
        raise ValueError(
            f"DM address {first} is {offset[beyond].flat[0]} bytes into slice {slice_id[beyond].flat[0]}, "
            f"which holds {RNGD.dm_bytes_per_slice}"
        )
    cluster, slice_ = np.divmod(slice_id, RNGD.slices_per_cluster)
    return DmPlace(
        cluster=read_only(cluster),
        dmn=read_only(slice_ // RNGD.slices_per_dmn),
        slice=read_only(slice_),
        offset=read_only(offset),
    )
