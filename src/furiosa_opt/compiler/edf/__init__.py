"""The EDF: our kernel binary (docs/edf.md). `container` writes and reads the file (header, msgpack body,
the argument/output table); the body's shape is `schema`, what its numbers may be `hardware`, and how its
commands may run (kept loops, runtime values, syncs) `streams`. Reading checks all three before anything
runs."""

from furiosa_opt.compiler.edf.container import (
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    Edf,
    EdfError,
    Leaf,
    read_edf,
    read_edf_file,
    write_edf,
    write_edf_file,
)
from furiosa_opt.compiler.edf.hardware import footprint
from furiosa_opt.compiler.edf.schema import BODY_KEYS, CONTEXTS

__all__ = [
    "BODY_KEYS",
    "CONTEXTS",
    "FORMAT_VERSION",
    "HEADER",
    "MAGIC",
    "Edf",
    "EdfError",
    "Leaf",
    "footprint",
    "read_edf",
    "read_edf_file",
    "write_edf",
    "write_edf_file",
]
