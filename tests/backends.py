"""Run one host scenario on either backend in this process.

Under the NPU backend `launch` loads a kernel's EDF from its package's output directory; kernels defined
in tests belong to no package, so `launch_npu` compiles them in-process (once per kernel) and hands the
binary to `runtime.execute`, the same call `launch` makes. With `FURIOSA_OPT_BACKEND=npu` set, every HBM
tensor the scenario makes lives in the simulated device's memory, exactly as under `furiosa-opt`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

from furiosa_opt import launch, runtime
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import Edf, read_edf
from furiosa_opt.lang.device import DeviceFunction, _check_result


class NotCompiled(Exception):
    """The kernel does not compile; the message lists its diagnostics."""


@cache
def compiled(kernel: DeviceFunction) -> Edf:
    result = compile_kernel(kernel)
    if not result.ok:
        raise NotCompiled("; ".join(f"{d.stage}:{d.code}: {d.message}" for d in result.diagnostics))
    return read_edf(result.edf)


def launch_npu(kernel: DeviceFunction, ctx, *args):
    """`launch` under the NPU backend, with the binary compiled here instead of loaded from a package."""
    leaves = [value for _, _, value in kernel.bind(args)]
    results = runtime.execute(kernel.identity, compiled(kernel), leaves, kernel.returns or ())
    return _check_result(kernel, tuple(results) if len(results) != 1 else results[0]) if results else None


@contextmanager
def backend(name: str) -> Iterator[Callable]:
    """Select `name` (`cpu` or `npu`) for the HBM tensors made inside; yields the matching launch."""
    saved = os.environ.get("FURIOSA_OPT_BACKEND")
    os.environ["FURIOSA_OPT_BACKEND"] = name
    try:
        yield launch if name == "cpu" else launch_npu
    finally:
        if saved is None:
            del os.environ["FURIOSA_OPT_BACKEND"]
        else:
            os.environ["FURIOSA_OPT_BACKEND"] = saved
