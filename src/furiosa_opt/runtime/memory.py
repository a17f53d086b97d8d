"""The simulated device's HBM: allocations that persist across launches, and the buffer HBM tensors keep.

Under the NPU backend an `HbmTensor`'s bytes live here from the moment it is made on the host
(`HostTensor.to_hbm`, `HbmTensor.new`, a kernel's result) until the last tensor or view that uses them is
dropped. A launch binds its arguments in place, so what a kernel writes into an argument is what the host
reads back. Host reads copy the bytes out (the PCIe download), so nothing the host derived earlier changes
when a later launch writes the same memory.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import deque

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType

ALIGN = RNGD.dma_burst_bytes  # every allocation starts on a DMA burst, as stage 2 places DRAM buffers


class Allocation:
    """`nbytes` bytes at device address `address`; returned to the device when garbage-collected."""

    def __init__(self, memory: DeviceMemory, address: int, nbytes: int):
        self.address, self.nbytes = address, nbytes
        self.bytes = np.zeros(nbytes, dtype=np.uint8)
        weakref.finalize(self, memory.release, address, nbytes)

    def __repr__(self) -> str:
        return f"<{self.nbytes} bytes of device HBM at {self.address:#x}>"


class DeviceMemory:
    """First-fit allocation over one chip's HBM address space (`RNGD.hbm_bytes_per_chip`).

    An allocation comes back when its `Allocation` is collected, and the garbage collector runs wherever
    Python allocates, inside `allocate` too: a finalizer that took the lock there would wait for itself
    forever. So `release` only queues the span (a deque append, safe anywhere), and the free list takes
    the queued spans back under the lock before it is read."""

    def __init__(self, capacity: int = RNGD.hbm_bytes_per_chip):
        self.capacity = capacity
        self._free: list[tuple[int, int]] = [(0, capacity)]  # (address, bytes), sorted, coalesced
        self._returned: deque[tuple[int, int]] = deque()  # (address, bytes) released, not yet in `_free`
        self._lock = threading.Lock()

    @property
    def free_bytes(self) -> int:
        with self._lock:
            self._take_back()
            return sum(size for _, size in self._free)

    def allocate(self, nbytes: int) -> Allocation:
        span = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
        with self._lock:
            self._take_back()
            found = next((i for i, (_, size) in enumerate(self._free) if size >= span), None)
            if found is not None:
                address, size = self._free[found]
                self._free[found : found + 1] = [(address + span, size - span)] if size > span else []
        if found is None:
            raise VerifyError(
                "device-memory",
                f"the device has no {nbytes} contiguous bytes of HBM left ({self.free_bytes} of {self.capacity} "
                "free); drop tensors that are no longer needed",
            )
        return Allocation(self, address, nbytes)  # outside the lock: making its bytes may collect garbage

    def release(self, address: int, nbytes: int) -> None:
        """Give a span back (an `Allocation`'s finalizer): queued, taken back by the next allocation."""
        self._returned.append((address, max(ALIGN, -(-nbytes // ALIGN) * ALIGN)))

    def _take_back(self) -> None:
        """Merge the released spans into the free list (under the lock)."""
        if not self._returned:
            return
        while self._returned:
            address, span = self._returned.popleft()
            bisect.insort(self._free, (address, span))
        merged: list[tuple[int, int]] = []
        for start, size in self._free:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((start, size))
        self._free = merged


DEVICE = DeviceMemory()


class DeviceBuf:
    """An HBM tensor's buffer in device memory, read and written like the CPU backend's `Buf`. Its bytes
    are the device image: a 4-bit dtype packs two elements per byte, as stage 2 lays them out."""

    index = None  # no pending relayout: the buffer is the allocation itself

    def __init__(self, allocation: Allocation, dtype: DType, offset: int = 0, count: int | None = None):
        self.allocation, self.dtype, self.offset = allocation, dtype, offset
        self.count = (allocation.nbytes - offset) * 8 // dtype.bits if count is None else count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"DeviceBuf({self.allocation!r}, {self.dtype}, offset={self.offset})"

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(self.count)

    def device_bytes(self) -> np.ndarray:
        """The live uint8 view of the bytes in device memory (what a launch binds)."""
        return self.allocation.bytes[self.offset : self.offset + self.nbytes]

    @property
    def base(self) -> np.ndarray:
        """A copy of the values in storage dtype: the PCIe download every host read makes."""
        if self.dtype.bits < 8:
            return dtypes.unpack_nibbles(self.device_bytes(), self.dtype)
        return self.device_bytes().view(self.dtype.storage).copy()

    def values(self) -> np.ndarray:
        return self.base

    def with_values(self, values: np.ndarray) -> DeviceBuf:
        """Write `values` (the whole buffer, storage dtype) back into device memory: the PCIe upload."""
        if self.dtype.bits < 8:
            self.device_bytes()[:] = dtypes.pack_nibbles(np.asarray(values), self.dtype)
        else:
            self.device_bytes().view(self.dtype.storage)[:] = values
        return self


def upload(values: np.ndarray, dtype: DType) -> DeviceBuf:
    """A new device allocation holding `values` (a host buffer of `dtype` in wire order)."""
    values = np.ascontiguousarray(values)
    return DeviceBuf(DEVICE.allocate(dtype.nbytes(values.size)), dtype, count=values.size).with_values(values)
