"""The memory system's geometry as pure functions over numpy arrays of addresses: where an HBM byte address
lands (`hbm.py`), where a DM address lands (`dm.py`), and what an access stream does to either memory's
channels, banks and rows (`stats.py`). Every number is read from `arch.RNGD`; nothing here is timed yet.
"""
