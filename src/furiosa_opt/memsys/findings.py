"""What a DMA's address streams say to its author: the book's pathologies, each with the book's fix
(memory-performance.md's rule table; dma-engine.md, "Optimizations" and Examples 4 and 5).

A finding is reported only where it costs time in this command: a stream that keeps to one stack but
finishes inside its startup is not worth a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from furiosa_opt.memsys.dma import DmaCost
from furiosa_opt.memsys.stats import DmStats, HbmStats

ROW_CONFLICT_SHARE = 0.5  # row switches per repeated bank access above which the rows are the problem


@dataclass(frozen=True, slots=True)
class Finding:
    """One pathology of one DMA: the book's rule it breaks, what the streams show, and the fix."""

    rule: str
    shown: str
    fix: str


def findings(cost: DmaCost) -> list[Finding]:
    """The pathologies of a priced DMA, worst first, given what decides its time.

    >>> import numpy as np
    >>> from furiosa_opt.memsys.dma import Side, dma_cost
    >>> rows = Side("hbm", np.zeros(64, np.int64), np.arange(64) << 29)  # one bank, a new row each time
    >>> dm = Side("dm", np.zeros(64, np.int64), (np.arange(64) % 2 * 32 + np.arange(64) // 2) * (4 << 20))
    >>> [f.rule for f in findings(dma_cost(rows, dm, 256))]
    ['hbm-row-conflicts', 'hbm-channels']
    """
    read, write = cost.stats()
    found = []
    hbm_bound = cost.bottleneck == "HBM"
    for stats, side in ((read, "read"), (write, "write")):
        if isinstance(stats, HbmStats):
            found += _hbm(stats, side, hbm_bound)
        elif cost.dm_stalls:
            found += _dm(stats, side)
    return found


def _hbm(stats: HbmStats, side: str, bound: bool) -> list[Finding]:
    found = []
    if side == "write" and stats.partial:
        found.append(
            Finding(
                "hbm-partial-write",
                f"{stats.partial} of {stats.requests} HBM writes cover part of a 256-byte unit (read-modify-write, "
                "~50× an aligned write)",
                "make the packet (the run contiguous on both sides) a multiple of 256 bytes, starting on a 256-byte "
                "boundary",
            )
        )
    if not bound:
        return found
    if stats.row_switch_share > ROW_CONFLICT_SHARE:
        found.append(
            Finding(
                "hbm-row-conflicts",
                f"{stats.row_switch_share:.0%} of repeated bank accesses switch rows ({stats.row_switches} row "
                "switches, ~40 cycles each)",
                "order the move so that consecutive requests to a bank stay in its row: the axes whose HBM strides "
                "reach address bit 21 and above (rows) should not be the fastest-changing ones",
            )
        )
    if side == "read" and stats.crossing:
        found.append(
            Finding(
                "hbm-unaligned-read",
                f"{stats.crossing} of {stats.requests} HBM reads cross a 256-byte boundary (two transfers each)",
                "start the HBM runs on 256-byte boundaries",
            )
        )
    if stats.channels_touched < 32:
        cause = "" if stats.stack_toggles else "; address bit 8 (the stack) never toggles"
        found.append(
            Finding(
                "hbm-channels",
                f"{stats.channels_touched} of 32 HBM channels carry the {side}s{cause}",
                "let consecutive 256-byte units walk address bits 8–12 (stack and channel): a contiguous run of at "
                "least 8 KiB, or strides that toggle bit 8",
            )
        )
    return found


def _dm(stats: DmStats, side: str) -> list[Finding]:
    return [
        Finding(
            "dm-dmn-interleave",
            f"the DM {side}s wait for their DMN: {stats.dmns_used} DMN(s) used, balance {stats.dmn_balance:.0%}",
            "spread the DM side over slices of both DMNs of a pair (32 slices apart) so consecutive requests "
            "take turns; a DMN moves 128 bytes a cycle",
        )
    ]


def report(cost: DmaCost) -> dict[str, Any]:
    """A DMA's price and streams as JSON: what `--dump-summary` and `schedule summary` print per DMA."""
    read, write = cost.stats()
    sides = {}
    for name, stats in (("read", read), ("write", write)):
        if isinstance(stats, HbmStats):
            sides[name] = {
                "memory": "hbm",
                "channels": stats.channels_touched,
                "stack_toggles": stats.stack_toggles,
                "row_conflict_share": round(stats.row_switch_share, 4),
                "unaligned": stats.unaligned,
                "partial": stats.partial,
            }
        else:
            sides[name] = {"memory": "dm", "dmns": stats.dmns_used, "dmn_balance": round(stats.dmn_balance, 4)}
    return {
        "cycles": cost.cycles,
        "bottleneck": cost.bottleneck,
        "engines": cost.engines,
        "issue": cost.issue,
        "dmn_stalls": cost.dm_stalls,
        "hbm_cycles": cost.hbm,
        **sides,
        "findings": [{"rule": f.rule, "shown": f.shown, "fix": f.fix} for f in findings(cost)],
    }
