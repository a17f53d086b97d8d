"""The TCP simulator: runs a compiled kernel (EDF) on simulated HBM, DM, TRF and VRF.

It reads only the EDF: addresses, DMA descriptors, sequencer configs and engine configs. It never
imports the kernel language or the CPU backend, and shares with them only the exact arithmetic
(`dtypes`, `vector.arithmetic`, `fold`) and the mapping algebra the engine configs are written in.
"""

from furiosa_opt.sim.machine import SimulatorError, execute, run

__all__ = ["SimulatorError", "execute", "run"]
