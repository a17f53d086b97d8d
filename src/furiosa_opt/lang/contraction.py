"""The Contraction Engine: outer product → packet reducer → time reducer → lane folder.

Like upstream's CPU backend the four stages are lazy: `contract_outer` records the widened operands
and the joint index space, the reducers only check and relabel, and `contract_lane` runs one fused
contraction that folds every output cell sequentially from zero in the wire order of the contracted
positions, then relays the result out to `[Time, Packet]` / `[Lane # 8]`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.flow import Flow
from furiosa_opt.lang.tensors import TrfTensor
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.stages import STAGES, rule
from furiosa_opt.terms import widener
from furiosa_opt.vector.ops import LaneMode
from furiosa_opt.verify import contraction as rules


@dataclass(frozen=True)
class _Pending:
    stream: Flow
    trf: TrfTensor
    acc: DType
    time: Mapping  # OutTime of contract_outer (the pre-reduce time)
    packet: Mapping  # OutPacket of contract_outer
    packet2: Mapping | None = None  # after contract_packet
    time2: Mapping | None = None  # after contract_time


class Contraction:
    """A contraction in flight; each method is the next stage of the engine."""

    def __init__(self, pending: _Pending, stage: str):
        self._pending, self.stage = pending, stage

    def __repr__(self) -> str:
        return f"Contraction({self.stage}, acc={self._pending.acc})"

    def _expect(self, method: str) -> None:
        """The stage table's order (furiosa_opt/stages.py)."""
        (stage,) = STAGES[method].after
        if self.stage != stage:
            raise VerifyError("pipeline-order", f"`{method}` follows `{stage}`, not `{self.stage}`")

    @user_facing
    def contract_packet(self, packet: Mapping) -> Contraction:
        """Sum the innermost packet cells that `packet` drops (a tree over 2^d cells)."""
        self._expect("contract_packet")
        p = self._pending
        rule("contract_packet")(p.stream.dtype, p.packet, packet)
        result = Contraction(replace(p, packet2=packet), "contract_packet")
        active().record("contract_packet", (self,), (result,), packet=packet)
        return result

    @user_facing
    def contract_time(self, time: Mapping) -> Contraction:
        """Sum the time axes that `time` drops; the kept ones stay in order."""
        self._expect("contract_time")
        rule("contract_time")(self._pending.time, time)
        result = Contraction(replace(self._pending, time2=time), "contract_time")
        active().record("contract_time", (self,), (result,), time=time)
        return result

    @user_facing
    def contract_lane(self, mode: LaneMode, time: Mapping, packet: Mapping) -> Flow:
        """Fold the lanes into the output flit and compute the contraction."""
        self._expect("contract_lane")
        p = self._pending
        lane = p.trf.params[3]
        rule("contract_lane")(mode.name, lane, p.time2, p.packet2, time, packet, p.time)
        stream = p.stream
        reduced = pair(*stream.spatial, lane, p.time2, p.packet2)
        pre_reduce = pair(*stream.spatial, lane, p.time, p.packet)
        backend = active()
        values = backend.contraction(
            stream.data,
            stream.layout.factors,
            p.trf.data,
            p.trf.storage.factors,
            pre_reduce.factors,
            reduced.factors,
            _widener(p.acc, stream.dtype, p.trf.dtype),
            p.acc.storage,
        )
        out = pair(*stream.spatial, time, packet)
        folded = backend.relayout(values, reduced.factors, out.factors, False)
        result = stream.advanced("contract_lane", p.acc, time, packet, folded)
        backend.record("contract_lane", (self,), (result,), mode=mode, time=time, packet=packet)
        return result


def contract_outer(stream: Flow, trf: TrfTensor, time: Mapping, packet: Mapping) -> Contraction:
    if not isinstance(trf, TrfTensor):
        raise VerifyError("contraction-trf", f"contract_outer multiplies with a TrfTensor, got {trf!r}")
    for level, a, b in zip(("chip", "cluster", "slice"), stream.spatial, trf.params, strict=False):
        if a != b:
            raise VerifyError(
                "contraction-spatial",
                f"contract_outer: the TRF tensor's {level} mapping `{b}` differs from the stream's `{a}`",
            )
    acc = rules.accumulator(stream.dtype, trf.dtype)
    rule("contract_outer")(stream.dtype, trf.params[3], stream.time, stream.packet, time, packet)
    result = Contraction(_Pending(stream, trf, acc, time, packet), "contract_outer")
    active().record("contract_outer", (stream, trf), (result,), time=time, packet=packet)
    return result


def _widener(acc: DType, *operands: DType):
    """Widening of both operands to the accumulator; float operands must share one type."""
    sources = set(operands)
    if acc != dtypes.i32 and len(sources) != 1:
        raise VerifyError(
            "contraction-operands", f"float operands must share one type, got {sorted(map(str, sources))}"
        )
    return widener(acc, operands[0])
