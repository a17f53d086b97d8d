"""The simulated memories of one chip: HBM (DRAM) as the kernel's buffers bound to device memory, and
per slice DM, TRF and VRF.

Addresses are the LIR's virtual byte addresses (docs/lir.md, "Addresses"): DRAM from 0, DM at
`DM_BASE` with slice `(cluster·256 + slice)` every `SLICE_STRIDE`, TRF and VRF per slice from 0. Each
DRAM buffer is bound to a byte array — the device memory the runtime allocated for it, or an argument's
bytes in place — so a DRAM access is relative to its buffer and may not leave it. A DM access names one
slice's offsets and happens in every slice at once, as the Tensor Unit's does.
"""

from __future__ import annotations

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import DM_BASE, SLICE_STRIDE

SLICES = RNGD.clusters_per_chip * RNGD.slices_per_cluster


class Fault(Exception):
    """An access outside what the kernel's buffers placed; the machine adds which command made it."""


def _bytes(addresses: np.ndarray, unit: int) -> np.ndarray:
    """The byte addresses of `unit`-byte elements at `addresses`."""
    return (addresses[:, None] + np.arange(unit, dtype=np.int64)).ravel()


def _outside(values: np.ndarray, size: int) -> int | None:
    """The first of `values` outside [0, size), if any."""
    bad = np.flatnonzero((values < 0) | (values >= size))
    return int(values[bad[0]]) if len(bad) else None


class Memories:
    def __init__(self, buffers: tuple[dict, ...], dram: dict[str, np.ndarray]):
        """`dram` binds every DRAM buffer's name to its bytes (a writable uint8 array of its size)."""

        def extent(memory: str) -> int:
            return max((b["address"] + b["bytes"] for b in buffers if b["memory"] == memory), default=0)

        self.dram = dram
        self.files = {memory: np.zeros((SLICES, extent(memory)), dtype=np.uint8) for memory in ("sram", "trf", "vrf")}

    # ---- a DRAM buffer or the DM slices by virtual address (DMA) ----

    def read(self, buffer: dict, addresses: np.ndarray, unit: int) -> np.ndarray:
        """Bytes of the elements at `addresses` (each `unit` bytes) in a DRAM buffer or across DM slices."""
        if buffer["memory"] == "dram":
            return self.dram[buffer["name"]][self._dram(buffer, addresses, unit)]
        slices, offsets = self._dm(addresses, unit)
        return self.files["sram"][slices, offsets]

    def write(self, buffer: dict, addresses: np.ndarray, unit: int, data: np.ndarray) -> None:
        if buffer["memory"] == "dram":
            self.dram[buffer["name"]][self._dram(buffer, addresses, unit)] = data
        else:
            slices, offsets = self._dm(addresses, unit)
            self.files["sram"][slices, offsets] = data

    def _dram(self, buffer: dict, addresses: np.ndarray, unit: int) -> np.ndarray:
        flat = _bytes(addresses, unit) - buffer["address"]
        if (bad := _outside(flat, len(self.dram[buffer["name"]]))) is not None:
            raise Fault(
                f"DRAM address {bad + buffer['address']:#x} is outside {buffer['name']} "
                f"({buffer['bytes']} bytes at {buffer['address']:#x})"
            )
        return flat

    def _dm(self, addresses: np.ndarray, unit: int) -> tuple[np.ndarray, np.ndarray]:
        flat = _bytes(addresses, unit) - DM_BASE
        slices, offsets = np.divmod(flat, SLICE_STRIDE)
        self._check_file("sram", offsets, slices)
        return slices, offsets

    # ---- one slice's offsets, in every slice (the Tensor Unit) ----

    def gather(self, memory: str, offsets: np.ndarray, unit: int) -> np.ndarray:
        """[slices, len(offsets)·unit] bytes read at the same offsets in every slice."""
        flat = _bytes(offsets, unit)
        self._check_file(memory, flat)
        return self.files[memory][:, flat]

    def scatter(self, memory: str, offsets: np.ndarray, unit: int, data: np.ndarray) -> None:
        flat = _bytes(offsets, unit)
        self._check_file(memory, flat)
        self.files[memory][:, flat] = data

    def _check_file(self, memory: str, offsets: np.ndarray, slices: np.ndarray | None = None) -> None:
        size = self.files[memory].shape[1]
        if (bad := _outside(offsets, size)) is not None:
            raise Fault(f"{memory.upper()} offset {bad} is outside the {size} bytes placed per slice")
        if slices is not None and (bad := _outside(slices, SLICES)) is not None:
            raise Fault(f"DM slice {bad} does not exist (a chip has {SLICES})")
