"""Execution contexts: what a kernel issues work on. The DMA engines live here; the Tensor Unit contexts
(`ctx.main`, `ctx.sub`, which start pipelines) in stream.py, and `Context`, which holds all four, in
device.py — so that tensors, streams and the device import one another in one direction only."""

from __future__ import annotations

from contextvars import ContextVar

from furiosa_opt.diagnostics import VerifyError

RUNNING: ContextVar[str | None] = ContextVar("furiosa_opt_running", default=None)  # the kernel the CPU runs


class ExecutionContext:
    """One of the four contexts of a `Context`, known by its name (`main`, `sub`, `tdma`, `pdma`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ctx.{self.name}"


class DmaContext(ExecutionContext):
    """`ctx.tdma` (on-chip tensor DMA) or `ctx.pdma` (PCIe DMA between host and HBM)."""


def expect_context(given: object, allowed: tuple[str, ...], what: str) -> None:
    """Refuse an operation issued on the wrong context (`to_dm` on `ctx.pdma`, …)."""
    name = getattr(given, "name", None)
    if not isinstance(given, ExecutionContext) or name not in allowed:
        wanted = " or ".join(f"`ctx.{a}`" for a in allowed)
        raise VerifyError("wrong-context", f"{what} runs on {wanted}, got `{given!r}`")
