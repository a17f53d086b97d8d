"""The vISA ops stage 2 lowers alike, by what they do to memory."""

VIEW_OPS = {"view", "view_mut", "tile", "chip_tile", "cluster_tile", "slice_tile", "pad", "unpad", "reshape"}
DMA_OPS = {"to_dm", "to_hbm", "hbm_to_hbm", "to_dm_view", "to_hbm_view", "to_dm_pcopy", "to_dm_view_pcopy"}
PCOPY_OPS = {"to_dm_pcopy", "to_dm_view_pcopy"}  # DM → DM on the sub context (ParallelCopy): a DMA walk
GATHER_OPS = {"dma_gather_scaled", "dma_gather_unscaled"}  # operands (table, index) → a new DM tensor
SCATTER_OPS = {"dma_scatter", "dma_scatter_unscaled"}  # operands (source, index, output): writes the output
