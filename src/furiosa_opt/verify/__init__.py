"""Every static rule, written once and called by the CPU backend, the tracer and the vISA parser.

Each check takes mappings and dtypes (never buffers) and raises `VerifyError(rule, message)`, so the
same call answers "may this program run?" whether the values are numpy arrays or symbols.

Each module registers the checks that are a stage's own rule with the stage table (`stages.register`,
layer "rule"), and this package loads them all, so any import of `verify` registers every rule.
"""

from furiosa_opt.verify import contraction, memory, stream, switch, transpose, vector

__all__ = ["contraction", "memory", "stream", "switch", "transpose", "vector"]
