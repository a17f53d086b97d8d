"""The compiler: stage 1 (Python → vISA) today; vISA → LIR and LIR → EDF in later stages."""
