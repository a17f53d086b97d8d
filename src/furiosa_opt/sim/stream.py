"""What the Tensor Unit's stage handlers share: the stream between engines, a register-file operand, what
the simulator does not execute, and what a handler outside `tensor_unit.py` reads of the unit (`Unit`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from furiosa_opt.compiler.lir import Command
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.dtypes import DType
from furiosa_opt.sim.walk import box_mask


class Unsupported(Exception):
    """A stage this simulator does not execute."""


@dataclass(frozen=True)
class Stream:
    """The data between engines. Its values are [slices, positions]; a fetch whose walk does not flatten
    into one axis (it rereads memory, a loop of stride 0, or transposes) leaves them as that walk's view,
    [slices, loop sizes…] in the positions' row-major order, so that a walk or the contraction reads
    memory in place (a reread value once, not a copy per reread); every other stage sees them as
    positions (`flat`)."""

    values: np.ndarray  # [slices, steps · lanes] in wire order, dtype.storage
    dtype: DType
    steps: int  # Time positions (in pair mode both groups', the group outermost)
    lanes: int  # Packet positions
    box: list[int]  # the layout's live box (sim/walk.py)
    tags: np.ndarray | None = None  # inside the Vector Engine: each element's 4-bit tag, same shape

    @property
    def positions(self) -> int:
        return self.steps * self.lanes

    @property
    def live(self) -> np.ndarray | None:
        """Which positions hold a value (None: all do)."""
        return box_mask(self.box)

    def flat(self) -> Stream:
        """The stream with its values as [slices, positions] (a fetch's view copied, if it is one)."""
        if self.values.ndim <= 2:
            return self
        return replace(self, values=self.values.reshape(self.values.shape[0], -1))

    def reshaped(self, config: EngineConfig) -> Stream:
        """The stream with the layout a config gives it (`steps`, `lanes`, `live`), values unchanged."""
        return replace(self, steps=config.steps, lanes=config.lanes, box=config.live)


@dataclass(frozen=True)
class Operand:
    """A register-file tensor as the engines see it: every element it holds, per slice."""

    values: np.ndarray
    dtype: DType


class Unit(Protocol):
    """The Tensor Unit as a stage handler sees it (`tensor_unit.TensorUnit`)."""

    pending: dict  # what earlier stages of the command left for later ones (the stash, the contraction's)

    def operand(self, command: Command, config: EngineConfig, memory: str) -> Operand: ...

    def rf_values(self, stream: Stream, config: EngineConfig, command: Command) -> np.ndarray: ...

    def stash_values(self, stream: Stream, config: EngineConfig) -> np.ndarray: ...
