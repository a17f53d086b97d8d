"""The compiler: stage 1 (Python → vISA: trace, or replay hand-written vISA), stage 2 (vISA → LIR: placement,
sequencers, engine configs, syncs) and stage 3 (LIR → costed schedule → EDF), walked by `driver.py`."""
