"""The Vector Engine's vocabulary (`ops/`) and exact arithmetic (`arithmetic.py`), shared by the CPU
backend and the simulator so that both compute every op the same way."""
