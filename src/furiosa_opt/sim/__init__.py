"""The TCP simulator: runs a compiled kernel (EDF) on simulated HBM, DM, TRF and VRF.

It reads only the EDF's numbers: addresses, DMA descriptors, sequencer configs, engine configs (live boxes,
walks, codes and raw bits) and runtime programs. It never imports the kernel language, the CPU backend,
the rules or the mapping algebra, and shares with the CPU backend only the exact arithmetic (`dtypes`,
`vector.arithmetic`, `terms`).
"""

from furiosa_opt.sim.machine import SimulatorError, execute, run

__all__ = ["SimulatorError", "execute", "run"]
