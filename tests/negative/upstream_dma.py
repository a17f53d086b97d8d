"""Upstream `furiosa-opt-examples/src/negative/dma.rs`: an HBM → DM `to_dm` that transposes the element axes,
`[A, B]` into slices of `B / 4` holding `[B % 4, A]`. Consecutive `A` cells of the source are `B` cells apart,
so the innermost run both sides share is one byte, below the DMA's 8-byte alignment; upstream refuses it as a
transpose the DMA cannot do, ours as `dma-tail-alignment`. The move back to HBM depends on the refused tensor
and is not reported again.

`dma_transpose.py` is a reduced variant of the same program (A = 8, B = 256, no result); this fixture keeps
upstream's sizes (A = 65536, B = 1024: a 256 KiB element per slice, within the DM) and its returned tensor.
"""

from furiosa_opt import *

A, B = axes(A=65536, B=1024)  # upstream re-exports them from `dma.rs`
Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def invalid_hbm_to_dm(ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]]) -> HbmTensor[i8, Chip, m["B, A"]]:
    output_dm = input.to_dm(ctx.tdma, Cluster, m["B / 4"], m["B % 4, A"])  # refused[visa]: dma-tail-alignment

    return output_dm.to_hbm(ctx.tdma, m["B, A"])
