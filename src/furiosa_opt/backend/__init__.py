"""Backends: what the kernel language's operations do.

The language layer (`lang/`) checks each operation with `verify/`, then calls the active backend
through one small interface — `relayout`, `elementwise`, `reduce`, `interleave`, `half`, `constant`, `zeros`,
`window_read`, `window_write`, `contraction`, `dma_gather`, `dma_scatter` for values, and `record` to note the
operation itself. `cpu` computes with numpy (the default); the tracer (`trace.py`) computes nothing and
records vISA.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from furiosa_opt import env
from furiosa_opt.backend import cpu

_ACTIVE: ContextVar[Any] = ContextVar("furiosa_opt_backend", default=cpu)
_DEVICES: dict[str, Any] = {}  # FURIOSA_OPT_BACKEND value → the runtime that registered for it


def register_device(name: str, device: Any) -> None:
    """A device runtime (above the language) announces itself for `FURIOSA_OPT_BACKEND=name`: it runs
    kernels (`device.run(kernel, leaves)`) and keeps HBM tensors (`device.upload(values, dtype)`). This keeps
    the language from importing the layers above it; `furiosa_opt.runtime` registers `npu` on import."""
    _DEVICES[name] = device


def device(name: str) -> Any | None:
    """The runtime registered for backend `name`, or None (the CPU backend needs none)."""
    return _DEVICES.get(name)


def selected_device() -> Any | None:
    """The runtime of the backend FURIOSA_OPT_BACKEND selects, if it is a registered device. A bad value
    gives None here: `launch` reports it, naming the kernel."""
    try:
        return device(env.backend())
    except env.EnvError:
        return None


def active() -> Any:
    """The backend operations run on: the `cpu` module unless a tracer is installed."""
    return _ACTIVE.get()


@contextmanager
def using(backend: Any) -> Iterator[Any]:
    token = _ACTIVE.set(backend)
    try:
        yield backend
    finally:
        _ACTIVE.reset(token)
