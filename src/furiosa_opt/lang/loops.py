"""Device loops and runtime conditions: a loop the kernel keeps (upstream's `for i in 0..n` inside a
`#[device]` function), not one Python unrolls while tracing.

    for i in device_range(2):
        for _ in when(i == 0):          # upstream: `if i == 0 { … }`
            add(ctx, x, 1, out_then.view_mut())
        for _ in when(i != 0):          # … `else { … }`
            add(ctx, x, 2, out_else.view_mut())
        half = x.view().tile(select(i == 0, 0, 16), m["B"], 16, m["B = 16 # 32"])   # a runtime view index

On the CPU backend `device_range` is `range` and `when` runs its body when the condition holds, so the
kernel executes as the loop it is. While tracing, the body is traced twice and kept once (what the second
pass read of the first is carried from pass to pass: `x = step(x)`): the loop index is a `Scalar`,
a runtime value, and arithmetic and comparisons on it build runtime expressions. A runtime scalar may be
a view index (`tile`'s start); it has no truth value and no constant value while tracing, so a Python
`if`/`assert` on it and an instruction immediate that depends on it are refused with their line, as
upstream refuses them. The vISA keeps the loop as a region (`loop` … `end_loop`, `if` … `end_if`);
stage 2 unrolls it (the LIR records that it did).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.scalar import Scalar

# ---- the kernel-language names ----------------------------------------------------------------------


def _tracing() -> bool:
    return hasattr(active(), "ops")


def device_range(count: int) -> Iterator[int | Scalar]:
    """A loop the kernel keeps: the CPU backend runs it; tracing records a `loop` region once, with the
    index as a runtime `Scalar`.

        for i in device_range(4):
            rows = table.view().tile(i * 64, m["R"], 64, m["R = 64 # 256"])

    Examples:
        >>> [i * 16 for i in device_range(4)]       # the CPU backend runs the loop; a kernel keeps it
        [0, 16, 32, 48]
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise VerifyError("device-loop", f"device_range takes a positive trip count, got {count!r}")
    if not _tracing():
        yield from range(count)
        return
    tracer = active()
    start = len(tracer.ops)
    index = begin_loop(count)
    first = len(tracer.ops)
    yield index  # the body, traced once …
    second = len(tracer.ops)
    yield index  # … and again: what the second pass reads of the first is carried from pass to pass
    end_loop(*tracer.fold_loop(start, first, second))


def begin_loop(count: int) -> Scalar:
    """Record a `loop` op; its index (what `device_range` yields while tracing)."""
    marker = LoopMarker()
    active().record("loop", (), (marker,), count=count)
    return Scalar("index", (active().names[id(marker)].name, count))


def carried(value: object) -> object:
    """Record a `carried` op: the value a loop body reads in place of `value` (a stand-in object: the
    first pass reads `value`, later passes what the `end_loop` names)."""
    stand_in = copy.copy(value)
    active().record("carried", (value,), (stand_in,))
    return stand_in


def end_loop(*back_edges: object) -> None:
    """Record the `end_loop` op; its operands are the values each `carried` op takes on the next pass."""
    active().record("end_loop", back_edges, ())


def when(condition: bool | Scalar) -> Iterator[None]:
    """A runtime branch: its body runs when `condition` holds (upstream's `if cond { … }`); the CPU
    backend decides as it runs, tracing records an `if` region around the body.

        for _ in when(i == 0):
            first_pass(ctx, x)

    Examples:
        >>> taken = []
        >>> for i in device_range(4):
        ...     for _ in when(i % 2 == 0):
        ...         taken.append(i)
        >>> taken
        [0, 2]
    """
    if not isinstance(condition, Scalar):
        if condition:
            yield None
        return
    begin_if(condition)
    yield None
    end_if()


def begin_if(condition: Scalar) -> None:
    active().record("if", (), (), cond=condition)


def end_if() -> None:
    active().record("end_if", (), ())


def select(condition: bool | Scalar, then: int | Scalar, otherwise: int | Scalar) -> int | Scalar:
    """A runtime value chosen by a condition (upstream's `if cond { a } else { b }` as an expression).

    offset = select(i == 0, 0, 16)

    Examples:
        >>> [select(i == 0, 0, 16 - i) for i in device_range(3)]
        [0, 15, 14]
    """
    if isinstance(condition, Scalar):
        return Scalar("sel", (condition, then, otherwise))
    return then if condition else otherwise


class LoopMarker:
    """What the tracer names as a `loop` op's result: the index's SSA value (type `scalar<i32>`)."""
