"""Every static rule, written once and called by the CPU backend, the tracer and the vISA parser.

Each check takes mappings and dtypes (never buffers) and raises `VerifyError(rule, message)`, so the
same call answers "may this program run?" whether the values are numpy arrays or symbols.
"""
