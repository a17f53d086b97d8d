"""How every enum of the vocabulary prints: ``repr`` in Python's spelling, ``str`` in Rust's (upstream's)."""

from __future__ import annotations

from enum import Enum


class _RustEnum(Enum):
    """An enum whose ``repr`` is the Python spelling and whose ``str`` is the Rust spelling."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __str__(self) -> str:
        return f"{type(self).__name__}::{self.name}"
