"""The Vector Engine's intra-slice chain: tag → logic → fxp → fxp_to_fp → narrow → fp → widen →
fp_to_fxp → clip, each stage usable in that order, each ALU once per pass.

Elementwise ops run on every physical cell, padding included, like upstream's CPU backend; operands
are constants or VRF tensors broadcast into the stream's layout.
"""

from __future__ import annotations

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.flow import Flow
from furiosa_opt.lang.tensors import VrfTensor
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.stages import STAGES
from furiosa_opt.vector import arithmetic as ops
from furiosa_opt.vector.ops import BinaryArgMode, TagMode, alu_of, scalar_dtype
from furiosa_opt.verify import vector as rules


class VectorStream:
    """A stream inside the Vector Engine, with its tags, stage, way and the ALUs it has used."""

    def __init__(self, stream: Flow, tags: object, stage: str, way: int, used: frozenset):
        self.stream, self.tags, self.stage, self.way, self.used = stream, tags, stage, way, used

    def __repr__(self) -> str:
        return f"VectorStream({self.stage}, Way{self.way}, {self.stream!r})"

    @property
    def dtype(self) -> DType:
        return self.stream.dtype

    def _with(
        self,
        stage: str,
        data: object,
        dtype: DType | None = None,
        alu=None,
        way: int | None = None,
        time: Mapping | None = None,
        packet: Mapping | None = None,
        tags: object = None,
    ) -> VectorStream:
        s = self.stream
        stream = s.advanced("vector", dtype or s.dtype, time or s.time, packet or s.packet, data)
        used = self.used | {alu} if alu is not None else self.used
        return VectorStream(stream, tags if tags is not None else self.tags, stage, way or self.way, used)

    def _operand(self, operand: object, method: str) -> object:
        """A constant, or a VRF tensor broadcast into the stream's layout."""
        if isinstance(operand, VrfTensor):
            if operand.dtype != self.dtype:
                raise VerifyError(
                    "vector-operand", f"`{method}`: a {operand.dtype} VRF operand on a {self.dtype} stream"
                )
            try:
                return active().relayout(operand.data, operand.storage.factors, self.stream.layout.factors, True)
            except MappingError as error:
                raise VerifyError(
                    "vector-operand", f"`{method}`: the VRF operand does not fit the stream: {error}"
                ) from None
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise VerifyError("vector-operand", f"`{method}` takes a constant or a VrfTensor, got {operand!r}")
        if self.dtype == dtypes.i32 and not isinstance(operand, int):
            raise VerifyError("vector-operand", f"`{method}`: an i32 stream takes an int constant, got {operand!r}")
        return active().constant(operand, self.dtype.storage, self.stream.layout.size)

    def _enter(self, method: str) -> str:
        """Check that `method` may come next in the intra-slice chain; its slot (the stage table's)."""
        slot = STAGES[method].slot
        rules.check_stage(self.stage, self.way, method, slot)
        return slot

    def _binary(self, method: str, op, operand: object, mode, compute) -> VectorStream:
        stage = self._enter(method)
        rules.check_scalar(self.dtype, scalar_dtype(op), method)
        alu = alu_of(op)
        rules.check_alu(alu, self.used, method)
        values = self._operand(operand, method)
        data = active().elementwise(lambda s, o: compute(op, *ops.apply_arg_mode(mode, s, o)), self.stream.data, values)
        result = self._with(stage, data, alu=alu)
        operands = (self, operand) if isinstance(operand, VrfTensor) else (self,)
        active().record(method, operands, (result,), op=op, operand=None if len(operands) == 2 else operand, mode=mode)
        return result

    # ---- the chain ----

    @user_facing
    def vector_intra_slice_tag(self, mode: TagMode = TagMode.Zero) -> VectorStream:
        slot = self._enter("vector_intra_slice_tag")
        rules.check_tag_packet(self.stream.packet)
        tags = active().elementwise(lambda v: ops.comparison_tags(mode, v), self.stream.data)
        return self._recorded(self._with(slot, self.stream.data, tags=tags), "vector_intra_slice_tag", mode=mode)

    @user_facing
    def vector_logic(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        return self._binary("vector_logic", op, operand, mode, ops.logic)

    @user_facing
    def vector_fxp(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Fixed-point/integer op on an i32 stream (`FxpBinaryOp.AddFxp`, `MulInt`, …)."""
        return self._binary("vector_fxp", op, operand, mode, ops.fxp)

    @user_facing
    def vector_fxp_to_fp(self, int_width: int) -> VectorStream:
        slot = self._enter("vector_fxp_to_fp")
        rules.check_scalar(self.dtype, dtypes.i32, "vector_fxp_to_fp")
        data = active().elementwise(lambda v: dtypes.fxp_to_fp(v, int_width), self.stream.data)
        return self._recorded(self._with(slot, data, dtype=dtypes.f32), "vector_fxp_to_fp", int_width=int_width)

    @user_facing
    def vector_narrow_split(self, time: Mapping, packet: Mapping) -> VectorStream:
        """Split each 8-element flit into two 4-element steps (Way8 → Way4)."""
        slot = self._enter("vector_narrow_split")
        rules.check_narrow_split(self.stream.time, self.stream.packet, time, packet)
        return self._recorded(self._relaid(slot, time, packet, way=4), "vector_narrow_split", time=time, packet=packet)

    @user_facing
    def vector_narrow_trim(self, packet: Mapping) -> VectorStream:
        """Drop the back four (dummy) lanes of each flit (Way8 → Way4)."""
        slot = self._enter("vector_narrow_trim")
        rules.check_narrow_trim(self.stream.packet, packet)
        return self._recorded(self._relaid(slot, self.stream.time, packet, way=4), "vector_narrow_trim", packet=packet)

    @user_facing
    def vector_fp_unary(self, op) -> VectorStream:
        slot = self._enter("vector_fp_unary")
        rules.check_scalar(self.dtype, dtypes.f32, "vector_fp_unary")
        alu = alu_of(op)
        rules.check_alu(alu, self.used, "vector_fp_unary")
        data = active().elementwise(lambda v: ops.fp_unary(op, v), self.stream.data)
        return self._recorded(self._with(slot, data, alu=alu), "vector_fp_unary", op=op)

    @user_facing
    def vector_fp_binary(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Float op on an f32 Way4 stream (`FpBinaryOp.AddF`, `MulF(FpMulAlu.Mul0)`, …)."""
        return self._binary("vector_fp_binary", op, operand, mode, ops.fp_binary)

    @user_facing
    def vector_widen_concat(self, time: Mapping, packet: Mapping) -> VectorStream:
        """Join two 4-element steps into one flit (Way4 → Way8)."""
        slot = self._enter("vector_widen_concat")
        rules.check_widen_concat(self.stream.time, self.stream.packet, time, packet)
        return self._recorded(self._relaid(slot, time, packet, way=8), "vector_widen_concat", time=time, packet=packet)

    @user_facing
    def vector_widen_pad(self, packet: Mapping) -> VectorStream:
        """Pad each 4-element step back to a flit (Way4 → Way8)."""
        slot = self._enter("vector_widen_pad")
        rules.check_widen_pad(self.stream.packet, packet)
        return self._recorded(self._relaid(slot, self.stream.time, packet, way=8), "vector_widen_pad", packet=packet)

    @user_facing
    def vector_fp_to_fxp(self, int_width: int) -> VectorStream:
        slot = self._enter("vector_fp_to_fxp")
        rules.check_scalar(self.dtype, dtypes.f32, "vector_fp_to_fxp")
        data = active().elementwise(lambda v: dtypes.fp_to_fxp(v, int_width), self.stream.data)
        return self._recorded(self._with(slot, data, dtype=dtypes.i32), "vector_fp_to_fxp", int_width=int_width)

    @user_facing
    def vector_clip(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        return self._binary("vector_clip", op, operand, mode, ops.clip)

    @user_facing
    def vector_final(self) -> Flow:
        """Leave the Vector Engine (in Way8)."""
        if self.way != 8:
            raise VerifyError(
                "vector-way",
                "vector_final needs a Way8 stream; widen it first",
                notes=("vector_widen_concat / vector_widen_pad",),
            )
        s = self.stream
        return self._recorded(s.advanced("vector_final", s.dtype, s.time, s.packet, s.data), "vector_final")

    def _recorded(self, result: VectorStream | Flow, name: str, **attrs) -> VectorStream | Flow:
        active().record(name, (self,), (result,), **attrs)
        return result

    def _relaid(self, stage: str, time: Mapping, packet: Mapping, way: int) -> VectorStream:
        s = self.stream
        source, target = s.layout.factors, pair(*s.spatial, time, packet).factors
        data = active().relayout(s.data, source, target, False)
        tags = active().relayout(self.tags, source, target, False)
        return self._with(stage, data, way=way, time=time, packet=packet, tags=tags)


def vector_init(stream: Flow) -> VectorStream:
    rules.check_entry(stream.dtype)
    tags = active().zeros(np.dtype(np.uint8), stream.layout.size)
    result = VectorStream(stream, tags, STAGES["vector_init"].slot, 8, frozenset())
    active().record("vector_init", (stream,), (result,))
    return result
