"""The memory system's geometry as pure functions over numpy arrays of addresses: where an HBM byte address
lands (`hbm.py`), where a DM address lands (`dm.py`), what an access stream does to either memory's
channels, banks and rows (`stats.py`), what a DMA command costs from its streams (`dma.py`) and which of the
book's pathologies it shows (`findings.py`). Every number is read from `arch.RNGD`.
"""
