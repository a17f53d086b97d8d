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
    """`ctx.tdma` (on-chip tensor DMA) or `ctx.pdma` (PCIe DMA between host and HBM).

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])   # ctx.tdma: HBM -> DM
        ...     return dm.to_hbm(ctx.tdma, m["A"])
        >>> x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A])
        >>> with Context.acquire() as ctx:
        ...     y = launch(copy, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == np.arange(2048)).all())
        True
    """


def expect_context(given: object, allowed: tuple[str, ...], what: str) -> None:
    """Refuse an operation issued on the wrong context (`to_dm` on `ctx.pdma`, …)."""
    name = getattr(given, "name", None)
    if not isinstance(given, ExecutionContext) or name not in allowed:
        wanted = " or ".join(f"`ctx.{a}`" for a in allowed)
        raise VerifyError("wrong-context", f"{what} runs on {wanted}, got `{given!r}`")
