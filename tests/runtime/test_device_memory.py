"""The simulated device's HBM allocator (runtime/memory.py) when the garbage collector returns allocations."""

import gc
import sys
import threading

from furiosa_opt.runtime import memory as memory_module
from furiosa_opt.runtime.memory import ALIGN, DeviceMemory

memory_file = memory_module.__file__


def test_an_allocation_collected_inside_allocate_does_not_deadlock():
    """Tensors in reference cycles give their HBM back when the collector runs, and it runs wherever Python
    allocates: inside `allocate` too. Its finalizer used to take the allocator's lock there and wait for
    itself forever (a full `make test` hung this way, in `HostTensor.to_hbm`). Here the collector runs at
    the first line `allocate` executes under its lock: it must finish, and every collected span must come back."""
    memory = DeviceMemory(1 << 20)
    gc.disable()
    try:
        for _ in range(50):  # each allocation only reachable from a cycle: the collector alone frees it
            holder: list = []
            holder.append((holder, memory.allocate(100)))
        del holder
        kept: list = []
        collected: list = []

        def collecting(frame, event, arg):  # a trace function: collect once, at the first line run under the lock
            if frame.f_code.co_filename == memory_file and event == "line" and memory._lock.locked() and not collected:
                collected.append(gc.collect())
            return collecting

        def allocate() -> None:
            sys.settrace(collecting)
            kept.append(memory.allocate(100))

        worker = threading.Thread(target=allocate, daemon=True)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "allocate deadlocked in a finalizer"
        assert collected and collected[0] >= 50  # the collector ran under the lock and found the 50 cycles
    finally:
        gc.enable()
    gc.collect()
    assert len(kept) == 1 and memory.free_bytes == (1 << 20) - ALIGN  # the 50 collected spans are back, merged


def test_dropped_allocations_merge_back_into_one_span():
    memory = DeviceMemory(4 * ALIGN)
    spans = dict(enumerate(memory.allocate(ALIGN) for _ in range(4)))
    assert memory.free_bytes == 0 and [a.address for a in spans.values()] == [0, ALIGN, 2 * ALIGN, 3 * ALIGN]
    for i in (2, 0, 3, 1):  # dropped out of order: each span comes back beside its neighbours
        del spans[i]
    assert memory.free_bytes == 4 * ALIGN and memory.allocate(4 * ALIGN).address == 0
