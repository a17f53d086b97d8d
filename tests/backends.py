"""Run one host scenario on either backend in this process.

Under the NPU backend `launch` loads a kernel's EDF from its package's output directory; kernels defined
in tests belong to no package, so the NPU side uses `runtime.launch_here`, which compiles them in this
process (once per kernel) and makes the same `runtime.execute` call. With `FURIOSA_OPT_BACKEND=npu` set,
every HBM tensor the scenario makes lives in the simulated device's memory, exactly as under `furiosa-opt`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from furiosa_opt import launch, runtime

compiled = runtime.compiled_here


def input_seed() -> int:
    """The seed of the random inputs the differential tests draw: `FURIOSA_OPT_TEST_SEED` if set, a fresh
    one under `make fuzz` (`FURIOSA_OPT_FUZZ=1`), else a fixed one, so that `make test` draws the same
    inputs on every run and a failure it reports is one it reports again. The tests print it."""
    if "FURIOSA_OPT_TEST_SEED" in os.environ:
        return int(os.environ["FURIOSA_OPT_TEST_SEED"])
    if os.environ.get("FURIOSA_OPT_FUZZ") == "1":
        return int(np.random.SeedSequence().entropy % 2**32)
    return 20261202


@contextmanager
def backend(name: str) -> Iterator[Callable]:
    """Select `name` (`cpu` or `npu`) for the HBM tensors made inside; yields the matching launch."""
    saved = os.environ.get("FURIOSA_OPT_BACKEND")
    os.environ["FURIOSA_OPT_BACKEND"] = name
    try:
        yield launch if name == "cpu" else runtime.launch_here
    finally:
        if saved is None:
            del os.environ["FURIOSA_OPT_BACKEND"]
        else:
            os.environ["FURIOSA_OPT_BACKEND"] = saved
