"""4-bit tensors pack two elements per byte, and the hardware addresses bytes: a fetch whose innermost run
steps over every other nibble, or a DM tensor holding an odd number of i4 elements per slice, cannot be laid
out (`subbyte-alignment`: the fetch in stage 2, where its sequencer is built; the tensor when it is made);
a DMA whose shared run is half a byte fails the DMA tail rule first."""

from furiosa_opt import *

A, C, E, O = axes(A=256, C=2, E=16, O=3)
Chip, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def strided_fetch(ctx: Context, x: HbmTensor[i4, Chip, m["A, E, C"]]) -> HbmTensor[i4, Chip, m["A, C, E"]]:
    dm = x.to_dm(ctx.tdma, Cluster, m["A"], m["E, C"])
    stream = ctx.main.begin(dm.view()).fetch(m["C"], m["E"])  # refused[lir]: subbyte-alignment
    out = stream.collect(m["C"], m["E # 64"]).commit_trim(m["E"]).commit(m["C, E"])
    return out.to_hbm(ctx.tdma, m["A, C, E"])


@device(chip=1)
def odd_dm(ctx: Context, x: HbmTensor[i4, Chip, m["A, O"]]) -> None:
    DmTensor.new(i4, Chip, Cluster, m["A"], m["O"])  # refused[visa]: subbyte-alignment
