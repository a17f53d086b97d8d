"""Execution contexts: the two Tensor Unit contexts and the two DMA engines a kernel issues work on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from furiosa_opt.diagnostics import VerifyError, user_facing

if TYPE_CHECKING:
    from furiosa_opt.lang.stream import Stream
    from furiosa_opt.lang.tensors import TensorView


class TuContext:
    """`ctx.main` or `ctx.sub`: starts Tensor Unit pipelines with `begin(dm_view)`."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ctx.{self.name}"

    def begin(self, view: TensorView) -> Stream:
        from furiosa_opt.lang.stream import begin

        return begin(self, view)

    begin = user_facing(begin)


class DmaContext:
    """`ctx.tdma` (on-chip tensor DMA) or `ctx.pdma` (PCIe DMA between host and HBM)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ctx.{self.name}"


class Context:
    """The device's execution contexts; `Context.acquire()` hands out the process-wide one."""

    _lock = threading.Lock()

    def __init__(self):
        self.main, self.sub = TuContext("main"), TuContext("sub")
        self.tdma, self.pdma = DmaContext("tdma"), DmaContext("pdma")

    def __repr__(self) -> str:
        return "Context(main, sub, tdma, pdma)"

    @classmethod
    @contextmanager
    def acquire(cls) -> Iterator[Context]:
        """`with Context.acquire() as ctx:` — one holder at a time, like upstream's singleton."""
        with cls._lock:
            yield _SINGLETON


_SINGLETON = Context()


def expect_context(given: object, allowed: tuple[str, ...], what: str) -> None:
    """Refuse an operation issued on the wrong context (`to_dm` on `ctx.pdma`, …)."""
    name = getattr(given, "name", None)
    if not isinstance(given, TuContext | DmaContext) or name not in allowed:
        wanted = " or ".join(f"`ctx.{a}`" for a in allowed)
        raise VerifyError("wrong-context", f"{what} runs on {wanted}, got `{given!r}`")
