"""What the benchmarks share: the timing discipline, the numpy gemm reference, the machine line, peak RSS of
a child process, the bit-for-bit check, and a launch on the simulator for kernels outside any package."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from furiosa_opt import runtime


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    """The fastest of `repeats` calls, in seconds: the least disturbed by the rest of the machine."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def numpy_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A·Bᵀ as gemm_kernel computes it, written as a user would for speed: f32 operands, one k at a time
    added into one f32 accumulator in place (the product of each step is the only other array, reused),
    then numpy's own cast to bf16. The benchmarks check it gives the kernel's bits before timing it (the
    hardware also flushes subnormals, which random operands do not produce)."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    product = np.empty_like(acc)
    for k in range(a.shape[1]):
        np.multiply.outer(a32[:, k], b32[:, k], out=product)
        acc += product
    return acc.astype(a.dtype)


def machine() -> str:
    """The line each benchmark prints first: its figures mean little without the machine they came from."""
    processor = platform.processor() or platform.machine()  # processor() is empty on many Linux builds
    return f"machine: {processor}, {os.cpu_count()} CPUs, numpy {np.__version__}"


def same_bits(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal dtype, shape and bytes: NaN payloads and signed zeros count, tolerances do not."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    as_bytes = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in (actual, expected)]
    return bool(np.array_equal(*as_bytes))


def duration(seconds: float) -> str:
    """Seconds in the unit that keeps three digits: a 0.5 µs numpy copy and a 2 s launch in one table."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e6:.3g} µs"


def row(what: str, figures: str, result: str, target: str, met: bool) -> None:
    """One line of a benchmark's table: what was measured, the raw figures, the result held to the target."""
    print(f"{what:<44} {figures:<40} {result:>9}  target {target:<8} {'meets' if met else 'MISSES'}")


def peak_rss(argv: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """Run `argv` and return it with its peak resident set size in bytes.

    RUSAGE_CHILDREN holds the largest peak of all children waited for so far (`platform.processor()` runs
    `uname`, for one), so the figure is this child's only when it rises above what was there before.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after <= before:
        raise RuntimeError(f"cannot tell the peak RSS of {argv}: an earlier child of this process peaked higher")
    return done, after * 1024  # Linux reports KiB


launch_npu = runtime.launch_here  # benchmark kernels belong to no package: compiled in this process


@contextmanager
def npu_backend() -> Iterator[None]:
    """FURIOSA_OPT_BACKEND=npu inside: HBM tensors made here live in the simulated device's memory."""
    saved = os.environ.get("FURIOSA_OPT_BACKEND")
    os.environ["FURIOSA_OPT_BACKEND"] = "npu"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["FURIOSA_OPT_BACKEND"]
        else:
            os.environ["FURIOSA_OPT_BACKEND"] = saved
