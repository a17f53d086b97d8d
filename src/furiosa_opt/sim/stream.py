"""What the Tensor Unit's stage handlers share: the stream between engines, a register-file operand, what
the simulator does not execute, and what a handler outside `tensor_unit.py` reads of the unit (`Unit`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from furiosa_opt.compiler.lir import Command
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import pair


class Unsupported(Exception):
    """A stage this simulator does not execute."""


@dataclass(frozen=True)
class Stream:
    values: np.ndarray  # [slices, positions] in `layout` wire order, dtype.storage
    dtype: DType
    time: Mapping
    packet: Mapping
    tags: np.ndarray | None = None  # inside the Vector Engine: each element's 4-bit tag, same shape
    group_axis: Mapping | None = None  # pair mode: the group axis, outermost in time (configs give a group's)

    @property
    def layout(self) -> Mapping:
        return pair(self.time, self.packet)


@dataclass(frozen=True)
class Operand:
    """A register-file tensor as the engines see it: its values per slice and its mapping in the slice."""

    values: np.ndarray
    dtype: DType
    levels: tuple[Mapping, ...]  # the buffer's levels inside the slice (TRF: lane, element; VRF: element)

    @property
    def layout(self) -> Mapping:
        return pair(*self.levels)


class Unit(Protocol):
    """The Tensor Unit as a stage handler sees it (`tensor_unit.TensorUnit`)."""

    pending: dict  # what earlier stages of the command left for later ones (the stash, the contraction's)

    def mapping(self, text: str) -> Mapping: ...

    def operand(self, command: Command, config: dict, memory: str) -> Operand: ...
