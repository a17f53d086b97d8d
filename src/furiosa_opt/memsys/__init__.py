"""The memory system's geometry as pure functions over numpy arrays of addresses: where an HBM byte address
lands (`hbm.py`) and where a DM address lands (`dm.py`). Every number is read from `arch.RNGD`; nothing
here is timed yet.
"""
