"""Stage 3's warnings: what a schedule would do to the hardware that no single command shows.

DM bank starvation (the book's memory-performance.md, "Bank Starvation", and schedule.md, "Resource and
bank contention"). A DMA request waits at a DM bank for every engine above it in priority (main fetch,
main commit, sub fetch, sub commit); held for 64 or more accesses, it can wait past the NoC's
4,096-cycle acknowledgement window, and the hardware resets the cluster. One command with such a run is
scheduled as holding the DMA (`resource.cost`), so no DMA runs beside it. What one command cannot see is
the total: the count adds every engine that holds the bank while the DMA waits, so a main and a sub
command running at once, each under the limit, can reach it together (the book's example: main 30, sub
35 and the DMA's own 1 make 66). `bank_starvation` finds those pairs in the schedule and warns at their
lines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler import visa
from furiosa_opt.compiler.diagnostics import Diagnostic, Span
from furiosa_opt.compiler.schedule import Schedule, Slot
from furiosa_opt.memsys.stats import starves_dma

RULE = "dm-bank-starvation"


def bank_starvation(plan: Schedule, ops: Sequence[visa.Op]) -> list[Diagnostic]:
    """One warning per main and sub command that the schedule runs at once, beside a DMA into or out of
    DM, whose longest same-bank runs on one bank add up (with the DMA's own access) to the 64-access
    limit or more."""
    memory = {b.name: b.memory for b in plan.lir.buffers}
    running = [s for s in plan.slots if s.end > s.start]
    held = [s for s in running if s.costed.runs is not None]
    dmas = [
        s
        for s in running
        if s.costed.command.kind in ("dma", "indirect")
        and "tdma" in s.costed.resources
        and any(memory[n] == "sram" for n in (*s.costed.command.inputs, *s.costed.command.outputs))
    ]
    warnings = []
    for main in (s for s in held if s.costed.command.context == "main"):
        for sub in (s for s in held if s.costed.command.context == "sub"):
            begin, end = max(main.start, sub.start), min(main.end, sub.end)
            dma = next((d for d in dmas if d.start < end and begin < d.end), None)
            if begin >= end or dma is None:
                continue
            totals = main.costed.runs + sub.costed.runs + RNGD.bank_starvation_dma_accesses
            bank = int(np.argmax(totals))
            if starves_dma(int(totals[bank])):
                warnings.append(_warning(plan, ops, main, sub, dma, bank, (begin, end)))
    return warnings


def _warning(
    plan: Schedule, ops: Sequence[visa.Op], main: Slot, sub: Slot, dma: Slot, bank: int, window: tuple[int, int]
) -> Diagnostic:
    runs = {"main": int(main.costed.runs[bank]), "sub": int(sub.costed.runs[bank])}
    total = sum(runs.values()) + RNGD.bank_starvation_dma_accesses
    limit = RNGD.bank_starvation_accesses
    spans = [
        _span(ops, main, f"main: {runs['main']} consecutive accesses hold bank {bank}"),
        _span(ops, sub, f"sub: {runs['sub']} consecutive accesses hold bank {bank}"),
        _span(ops, dma, "this DMA waits for the bank meanwhile"),
    ]
    ratio = RNGD.dma_burst_bytes // RNGD.dm_bytes_per_dmn_cycle
    return Diagnostic(
        RULE,
        f"DM bank starvation: main and sub hold bank {bank} of every slice for {runs['main']} + {runs['sub']} "
        f"consecutive accesses while a DMA waits: {total} with the DMA's own, the limit is {limit}",
        "edf",
        plan.lir.kernel,
        [span for span in spans if span is not None],
        [
            f"the DMA has the lowest priority at a DM bank; held {limit} or more accesses it can wait past the "
            f"NoC's {RNGD.noc_ack_cycles:,}-cycle acknowledgement window (({RNGD.dma_burst_bytes} / "
            f"{RNGD.dm_bytes_per_dmn_cycle}) · {limit} · {RNGD.slices_per_dmn} slices = "
            f"{ratio * limit * RNGD.slices_per_dmn:,}), and the hardware resets the cluster",
            "the count adds every engine holding the bank, interleaved or not (the book: main 30 + sub 35 + "
            "DMA 1 = 66 starves)",
            f"the schedule runs the two commands at once over cycles {window[0]}–{window[1]}",
        ],
        [
            f"let one stream's consecutive accesses walk the banks (a bank is {RNGD.dm_bank_width_bytes} bytes "
            f"wide; the {RNGD.dm_banks_per_slice} banks repeat every "
            f"{RNGD.dm_bank_width_bytes * RNGD.dm_banks_per_slice} bytes of a slice), e.g. by moving its "
            "fastest time axis to one whose stride is not a multiple of 128 bytes"
        ],
        level="warning",
    )


def _span(ops: Sequence[visa.Op], slot: Slot, label: str) -> Span | None:
    """The command's line in the user's source, from its vISA op (with the column the tracer recorded)."""
    index = slot.costed.command.op
    loc = ops[index].loc if 0 <= index < len(ops) else None
    return Span(loc.file, loc.line, loc.column, label=label) if loc is not None else None
