"""Upstream `furiosa-opt-examples/src/negative/scatter_gather.rs`, plus refused gathers and scatters of our own.

`invalid_gather_unscaled_index_over_spm` is upstream's fixture: `gather_scaled_from_raw_index` (in
`tests/upstream/test_scatter_gather.py`) written as an unscaled gather. The unscaled index is read from one PE's
4 KiB scratchpad and `IdxRows · Indices = 2048` i32 cells are 8 KiB, so the gather is refused with
`gather-index-spm`, as upstream's `verify_indirect_tensor_dma` refuses it. The move to HBM after it depends on
the refused tensor and is not reported again. Upstream re-exports the axes from `scatter_gather.rs`; they are
declared here with the same sizes.

Ours (upstream has no fixture for these rules):
* `gather_foreign_payload` (`gather-axes`): the output's payload `E` is not an axis of the table.
* `scatter_key_in_cluster` (`scatter-key`): the key `CL, K` has `CL` in the source's cluster, outside its
  slice ⊗ element.
* `gather_i16_index` (`indirect-index`): the index holds i16, not i32.
"""

from furiosa_opt import *

Rows, IdxRows, Indices, Width = axes(Rows=12, IdxRows=16, Indices=128, Width=8)
K, D, C, G, E, CL = axes(K=512, D=128, C=612, G=512, E=128, CL=2)

Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def invalid_gather_unscaled_index_over_spm(
    ctx: Context, table: HbmTensor[bf16, Chip, m["Rows, Width"]], index: HbmTensor[i32, Chip, m["IdxRows, Indices"]]
) -> HbmTensor[bf16, Chip, m["IdxRows, Indices, Width"]]:
    slice_, payload = m["IdxRows, Indices / 8"], m["Indices % 8, Width"]
    index_dm = index.to_dm(ctx.tdma, Cluster, slice_, m["Indices % 8"])
    values = table.dma_gather_unscaled(index_dm, Cluster, slice_, payload)  # refused[visa]: gather-index-spm
    return values.to_hbm(ctx.tdma, m["IdxRows, Indices, Width"])


@device(chip=1)
def gather_foreign_payload(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["G"]]
) -> HbmTensor[bf16, Chip, m["G, E"]]:
    values = table.dma_gather_scaled(index, Cluster, m["G / 2"], m["G % 2, E"])  # refused[visa]: gather-axes
    return values.to_hbm(ctx.tdma, m["G, E"])


@device(chip=1)
def scatter_key_in_cluster(
    ctx: Context,
    data: HbmTensor[bf16, Chip, m["CL, K, D"]],
    index: HbmTensor[i32, Chip, m["CL, K"]],
    output: HbmTensor[bf16, Chip, m["C, D"]],
) -> None:
    data_dm = data.to_dm(ctx.tdma, m["CL"], m["K / 2"], m["K % 2, D"])
    data_dm.dma_scatter(index, output, m["CL, K"])  # refused[visa]: scatter-key


@device(chip=1)
def gather_i16_index(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i16, Chip, m["G"]]
) -> HbmTensor[bf16, Chip, m["G, D"]]:
    values = table.dma_gather_scaled(index, Cluster, m["G / 2"], m["G % 2, D"])  # refused[visa]: indirect-index
    return values.to_hbm(ctx.tdma, m["G, D"])
