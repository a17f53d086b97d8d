"""What the contraction and the Vector Engine see of a stream: its layout, its values and how to hand
the next stage's stream back. stream.py imports those engines to start them, so they type the stream
they are given by this protocol instead of importing stream.py back.

    def contract_outer(stream: Flow, trf: TrfTensor, time: Mapping, packet: Mapping) -> Contraction: ...
"""

from __future__ import annotations

from typing import Protocol

from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping


class Flow(Protocol):
    """A Tensor Unit stream (`lang.stream.Stream`) as the engines it enters use it."""

    ctx: object
    dtype: DType
    spatial: tuple[Mapping, Mapping, Mapping]
    time: Mapping
    packet: Mapping
    data: object

    @property
    def layout(self) -> Mapping: ...

    def advanced(
        self, stage: str, dtype: DType, time: Mapping, packet: Mapping, data: object, slice_: Mapping | None = None
    ) -> Flow: ...
