"""The Vector Engine: the intra-slice chain tag → logic → fxp → fxp_to_fp → narrow → fp → intra-slice
reduce → fp_div → widen → fp_to_fxp → clip, each stage usable in that order, each ALU once per pass; the
stash (written once, read once); and the inter-slice reducer, before the chain (InterFirst) or after it
(IntraFirst).

Elementwise ops run on every physical cell, padding included, like upstream's CPU backend; operands
are constants, VRF tensors or the stash, broadcast into the stream's layout. Reduces fold one cell at a
time in the wire order of the reduced axes (`fold.reduce_fold`), as upstream's `reduce` does.

This module holds the ops, one method each; what they share (state, stage and ALU checks, operands,
recording) is `VectorCore`, in vector_core.py.
"""

from __future__ import annotations

import math

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.flow import Flow
from furiosa_opt.lang.pair import VectorPair
from furiosa_opt.lang.vector_core import Stashed, VectorCore
from furiosa_opt.mapping import Axis, Mapping
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.expr import Sym
from furiosa_opt.mapping.factors import SymAtom
from furiosa_opt.stages import STAGES, rule
from furiosa_opt.vector import arithmetic as ops
from furiosa_opt.vector.ops import BinaryArgMode, Branched, FpDivBinaryOp, TagGuard, TagMode, TernaryArgMode
from furiosa_opt.verify import vector as rules


class VectorStream(VectorCore):
    """A stream inside the Vector Engine: its tags, stage, way, the ALUs it has used, the stash (None,
    what was written, or spent) and whether the inter-slice reducer came first."""

    def __repr__(self) -> str:
        return f"VectorStream({self.stage}, Way{self.way}, {self.stream!r})"

    # ---- the chain ----

    @user_facing
    def vector_intra_slice_tag(self, mode: TagMode = TagMode.Zero) -> VectorStream:
        """Compute each element's tag (which later guards read) and start the intra-slice chain.

        s.vector_init().vector_intra_slice_tag(TagMode.Zero)
        """
        slot = self._enter("vector_intra_slice_tag")
        rule("vector_intra_slice_tag")(self.stream.packet)
        tags = active().elementwise(lambda v: STAGES["vector_intra_slice_tag"].arithmetic(mode, v), self.stream.data)
        return self._recorded(self._with(slot, self.stream.data, tags=tags), "vector_intra_slice_tag", mode=mode)

    @user_facing
    def vector_intra_slice_unzip(self, axis: Axis, tile_time: Mapping, split_time: Mapping) -> VectorPair:
        """Enter pair mode: the stream's size-2 Time axis `axis` (from `begin_interleaved`) splits it into
        group 0 and group 1, each over `split_time` (a group's tile of Time, `tile_time`, read without the
        axis). Both groups start at the tag stage with zero tags.

            s.vector_init().vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        """
        method = "vector_intra_slice_unzip"
        if self.stage != "init":
            raise VerifyError("vector-stage-order", f"`{method}` enters pair mode right after vector_init")
        s = self.stream
        if not isinstance(axis, Axis) and not (isinstance(axis, Mapping) and len(axis.axis_names) == 1):
            raise VerifyError("vector-unzip-axis", f"`{method}` splits Time at an axis, got {axis!r}")
        axis = _stream_axis(axis, s.layout, method) if isinstance(axis, Mapping) else axis
        rule("vector_intra_slice_unzip")(s.time, s.packet, axis, tile_time, split_time)
        selector = Mapping.from_node(Sym(axis))
        grouped = pair(*s.spatial, selector, split_time, s.packet).factors  # the groups outermost in time
        data = active().relayout(s.data, s.layout.factors, grouped, False)
        outer = math.prod(level.size for level in s.spatial)
        groups = []
        for index in (0, 1):
            stream = s.advanced("vector", s.dtype, split_time, s.packet, active().half(data, outer, index))
            tags = active().zeros(np.dtype(np.uint8), stream.layout.size)
            groups.append(VectorStream(stream, tags, STAGES[method].slot, 8, frozenset()))
        result = VectorPair(*groups, STAGES[method].slot, 8, frozenset())
        return self._recorded(result, method, axis=selector, tile_time=tile_time, split_time=split_time)

    @user_facing
    def vector_logic(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Bitwise op (`LogicBinaryOpI32.BitAnd`, …) with a constant, VRF or Stash operand.

        s.vector_logic(LogicBinaryOpI32.BitAnd, 0xFF)
        """
        return self._binary("vector_logic", op, operand, mode)

    @user_facing
    def vector_logic_with_mode(self, op, mode: BinaryArgMode, operand: object) -> VectorStream:
        """`vector_logic` with the argument mode first, as upstream writes it.

        s.vector_logic_with_mode(LogicBinaryOpI32.LeftShift, BinaryArgMode.Mode10, 1)
        """
        return self._binary("vector_logic", op, operand, mode)

    @user_facing
    def vector_fxp(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Fixed-point/integer op on an i32 stream (`FxpBinaryOp.AddFxp`, `MulInt`, …).

        s.vector_fxp(FxpBinaryOp.AddFxp, 10)
        """
        return self._binary("vector_fxp", op, operand, mode)

    @user_facing
    def vector_fxp_with_mode(self, op, mode: BinaryArgMode, operand: object) -> VectorStream:
        """`vector_fxp` with the argument mode first.

        s.vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 100)  # 100 - x
        """
        return self._binary("vector_fxp", op, operand, mode)

    @user_facing
    def vector_fxp_to_fp(self, int_width: int) -> VectorStream:
        """Fixed point with `int_width` integer bits → f32.

        s.vector_fxp_to_fp(31)  # plain i32 → f32
        """
        slot = self._enter("vector_fxp_to_fp")
        rules.check_scalar(self.dtype, dtypes.i32, "vector_fxp_to_fp")
        data = active().elementwise(lambda v: STAGES["vector_fxp_to_fp"].arithmetic(v, int_width), self.stream.data)
        return self._recorded(self._with(slot, data, dtype=dtypes.f32), "vector_fxp_to_fp", int_width=int_width)

    @user_facing
    def vector_narrow_split(self, time: Mapping, packet: Mapping) -> VectorStream:
        """Split each 8-element flit into two 4-element steps (Way8 → Way4).

        s.vector_narrow_split(m["T, A / 4 % 2"], m["A % 4"])
        """
        slot = self._enter("vector_narrow_split")
        rule("vector_narrow_split")(self.stream.time, self.stream.packet, time, packet)
        return self._recorded(self._relaid(slot, time, packet, way=4), "vector_narrow_split", time=time, packet=packet)

    @user_facing
    def vector_narrow_trim(self, packet: Mapping) -> VectorStream:
        """Drop the back four (dummy) lanes of each flit (Way8 → Way4).

        s.vector_narrow_trim(m["A % 2 # 4"])
        """
        slot = self._enter("vector_narrow_trim")
        rule("vector_narrow_trim")(self.stream.packet, packet)
        return self._recorded(self._relaid(slot, self.stream.time, packet, way=4), "vector_narrow_trim", packet=packet)

    @user_facing
    def vector_fp_unary(self, op) -> VectorStream:
        """A float unary op on an f32 Way4 stream (`FpUnaryOp.Exp`, `Sqrt`, `Sigmoid`, …), or `(guard, op)`
        to apply it only where the tag guard admits (elsewhere the value passes through).

        s.vector_fp_unary(FpUnaryOp.Exp)
        s.vector_fp_unary((TagGuard.matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore)), FpUnaryOp.Sqrt))
        """
        guard, op = op if isinstance(op, tuple) else (None, op)
        slot = self._enter("vector_fp_unary")
        alu = self._op(op, "vector_fp_unary", dtypes.f32)
        if guard is None:
            data = active().elementwise(lambda v: STAGES["vector_fp_unary"].arithmetic(op, v), self.stream.data)
        else:
            if not isinstance(guard, TagGuard) or guard.dead:
                raise VerifyError("vector-branch-guard", f"vector_fp_unary: a guard admitting some tag, got {guard!r}")
            apply = lambda v, t: np.where(guard.admits(t), STAGES["vector_fp_unary"].arithmetic(op, v), v)  # noqa: E731
            data = active().elementwise(apply, self.stream.data, self.tags)
        return self._recorded(self._with(slot, data, alu=alu), "vector_fp_unary", op=op, guard=guard)

    @user_facing
    def vector_fp_binary(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Float op on an f32 Way4 stream (`FpBinaryOp.AddF`, `MulF(FpMulAlu.Mul0)`, …).

        s.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.5)
        """
        return self._binary("vector_fp_binary", op, operand, mode)

    @user_facing
    def vector_fp_binary_with_mode(self, op, mode: BinaryArgMode, operand: object) -> VectorStream:
        """`vector_fp_binary` with the argument mode first.

        s.vector_fp_binary_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10, vrf)  # vrf - x
        """
        return self._binary("vector_fp_binary", op, operand, mode)

    @user_facing
    def vector_fp_ternary(self, op, operands: tuple) -> VectorStream:
        """`FpTernaryOp.FmaF` (`x * a + b`, one rounding) with operands `(a, b)`: `a` a constant, a VRF
        tensor or Stash, `b` a constant.

        s.vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0))
        """
        return self.vector_fp_ternary_with_mode(op, TernaryArgMode.Mode012, operands)

    @user_facing
    def vector_fp_ternary_with_mode(self, op, mode: TernaryArgMode, operands: tuple) -> VectorStream:
        """`vector_fp_ternary` with the argument mode first (`Mode012` = `op(x, a, b)`).

        s.vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode102, (vrf, 0.0))
        """
        method = "vector_fp_ternary"
        stage = self._enter(method)
        alu = self._op(op, method, dtypes.f32)
        combine = lambda x, pair_: STAGES["vector_fp_ternary"].arithmetic(op, *ops.apply_arg_mode(mode, x, *pair_))  # noqa: E731
        if isinstance(operands, Branched):
            data, stash = self._branched(operands, method, combine)
            shown = operands
        else:
            if not isinstance(operands, tuple) or len(operands) != 2:
                raise VerifyError(
                    "vector-operand", f"`{method}` takes a pair of operands `(a, b)` or a Branched, got {operands!r}"
                )
            values, constant, stash = self._ternary(operands, method)
            data = active().elementwise(lambda s, a, b: combine(s, (a, b)), self.stream.data, values, constant)
            shown = operands
        result = self._with(stage, data, alu=alu, stash=stash)
        self._record_operand(method, shown, result, op=op, mode=mode)
        return result

    @user_facing
    def vector_intra_slice_reduce(
        self, op, reduce: Axis | str | Mapping, time: Mapping, packet: Mapping
    ) -> VectorStream:
        """Fold the axis `reduce` out of Time (and the packet) inside each slice, in its wire order
        (`IntraSliceReduceOpF32.Add`, `Max`, …); the packet stays, or collapses to lane 0 (`[1 # 4]`).

        s.vector_intra_slice_reduce(IntraSliceReduceOpF32.Max, R, m["1"], m["A % 2 # 4"])
        """
        method = "vector_intra_slice_reduce"
        stage = self._enter(method)
        alu = self._op(op, method)
        s = self.stream
        axis = _stream_axis(reduce, s.layout, method)
        label = axis.name
        rule("vector_intra_slice_reduce")(s.time, s.packet, time, packet, label)
        target = pair(*s.spatial, time, packet).factors
        data = active().reduce(
            s.data, s.layout.factors, target, *STAGES["vector_intra_slice_reduce"].arithmetic(op), False
        )
        tags = active().reduce(self.tags, s.layout.factors, target, lambda a, x: x, np.uint8(0), False)
        result = self._with(stage, data, alu=alu, time=time, packet=packet, tags=tags)
        return self._recorded(result, method, op=op, axis=Mapping.from_node(Sym(axis)), time=time, packet=packet)

    @user_facing
    def vector_fp_div(self, operand: object) -> VectorStream:
        """`x / operand` on the divider after the reducer (f32, Way4).

        s.vector_fp_div(vrf)
        """
        return self._binary("vector_fp_div", FpDivBinaryOp.DivF, operand, BinaryArgMode.Mode01)

    @user_facing
    def vector_fp_div_with_mode(self, mode: BinaryArgMode, operand: object) -> VectorStream:
        """`vector_fp_div` with an argument mode (`Mode10` = `operand / x`).

        s.vector_fp_div_with_mode(BinaryArgMode.Mode10, 1.0)  # 1 / x
        """
        return self._binary("vector_fp_div", FpDivBinaryOp.DivF, operand, mode)

    @user_facing
    def vector_widen_concat(self, time: Mapping, packet: Mapping) -> VectorStream:
        """Join two 4-element steps into one flit (Way4 → Way8).

        s.vector_widen_concat(m["T"], m["A / 4 % 2, A % 4"])
        """
        slot = self._enter("vector_widen_concat")
        rule("vector_widen_concat")(self.stream.time, self.stream.packet, time, packet)
        return self._recorded(self._relaid(slot, time, packet, way=8), "vector_widen_concat", time=time, packet=packet)

    @user_facing
    def vector_widen_pad(self, packet: Mapping) -> VectorStream:
        """Pad each 4-element step back to a flit (Way4 → Way8).

        s.vector_widen_pad(m["A % 2 # 8"])
        """
        slot = self._enter("vector_widen_pad")
        rule("vector_widen_pad")(self.stream.packet, packet)
        return self._recorded(self._relaid(slot, self.stream.time, packet, way=8), "vector_widen_pad", packet=packet)

    @user_facing
    def vector_fp_to_fxp(self, int_width: int) -> VectorStream:
        """f32 → fixed point with `int_width` integer bits (rounded, saturated).

        s.vector_fp_to_fxp(31)
        """
        slot = self._enter("vector_fp_to_fxp")
        rules.check_scalar(self.dtype, dtypes.f32, "vector_fp_to_fxp")
        data = active().elementwise(lambda v: STAGES["vector_fp_to_fxp"].arithmetic(v, int_width), self.stream.data)
        return self._recorded(self._with(slot, data, dtype=dtypes.i32), "vector_fp_to_fxp", int_width=int_width)

    @user_facing
    def vector_clip(self, op, operand: object, mode: BinaryArgMode = BinaryArgMode.Mode01) -> VectorStream:
        """Min/max/abs-min/abs-max/add on the clip unit (i32 or f32, Way8).

        s.vector_clip(ClipBinaryOpF32.Max, 0.0)  # ReLU
        """
        return self._binary("vector_clip", op, operand, mode)

    @user_facing
    def vector_clip_with_mode(self, op, mode: BinaryArgMode, operand: object) -> VectorStream:
        """`vector_clip` with the argument mode first.

        s.vector_clip_with_mode(ClipBinaryOpI32.Min, BinaryArgMode.Mode01, 127)
        """
        return self._binary("vector_clip", op, operand, mode)

    # ---- the stash, reinterpretation, the filter ----

    @user_facing
    def vector_stash(self) -> VectorStream:
        """Write the stream to the operand register, for one later `Stash` operand of this pass.

        s.vector_stash().vector_fp_unary(FpUnaryOp.Exp).vector_fp_binary(FpBinaryOp.SubF, Stash)
        """
        rule("vector_stash")(self.stage, self.stash, None)
        stashed = Stashed(self.stream.data, self.stream.layout, self.dtype, self.way)
        return self._recorded(self._with(self.stage, self.stream.data, stash=stashed), "vector_stash")

    @user_facing
    def vector_reinterpret(self, dtype: DType) -> VectorStream:
        """Read the stream's bits as the other 32-bit scalar (i32 ↔ f32): no instruction, no ALU, so it
        keeps the stage and the way.

        s.vector_reinterpret(i32)  # 1.0 → 0x3f800000
        """
        rule("vector_reinterpret")(dtype)
        target = dtype.storage
        data = active().elementwise(lambda v: v.view(target), self.stream.data)
        return self._recorded(self._with(self.stage, data, dtype=dtype), "vector_reinterpret", dtype=dtype)

    @user_facing
    def vector_filter(self, time: Mapping, guard: object) -> VectorStream:
        """Keep the elements whose tag `guard` admits. Upstream's body is `todo!()`, so this refuses.

        s.vector_filter(m["T"], guard)  # error[upstream-undefined]
        """
        raise VerifyError("upstream-undefined", "vector_filter: upstream does not define its meaning yet (`todo!()`)")

    # ---- the inter-slice reducer and the exit ----

    @user_facing
    def vector_inter_slice_reduce(self, op, slice: Mapping, time: Mapping) -> VectorStream:
        """Fold Slice axes across the slices of a cluster (`InterSliceReduceOpF32.Add`, …): the reduced
        innermost Slice axes' slots take dummies, fresh axes or Time axes; a Way8 stream results, with
        fresh tags, ALUs and stash.

        s.vector_init().vector_inter_slice_reduce(InterSliceReduceOpF32.Add, m["W, 1 # 4"], m["1"])
        """
        method = "vector_inter_slice_reduce"
        rules.check_inter_slice_entry(self.stage, self.way)
        if self.stage != "init" and self.inter_first:
            raise VerifyError("vector-stage-order", f"`{method}`: the inter-slice reducer runs once per pass")
        self._op(op, method)
        s = self.stream
        rule("vector_inter_slice_reduce")(s.spatial[2], s.time, slice, time)
        target = pair(*s.spatial[:2], slice, time, s.packet).factors
        data = active().reduce(
            s.data, s.layout.factors, target, *STAGES["vector_inter_slice_reduce"].arithmetic(op), True
        )
        stream = s.advanced("vector", s.dtype, time, s.packet, data, slice_=slice)
        tags = active().zeros(np.dtype(np.uint8), stream.layout.size)
        result = VectorStream(stream, tags, rules.INTER, 8, frozenset(), None, self.stage == "init")
        return self._recorded(result, method, op=op, slice=slice, time=time)

    @user_facing
    def vector_final(self) -> Flow:
        """Leave the Vector Engine (in Way8).

        s.vector_final().commit_trim(m["A % 8"])
        """
        if self.way != 8:
            raise VerifyError(
                "vector-way",
                "vector_final needs a Way8 stream; widen it first",
                notes=("vector_widen_concat / vector_widen_pad",),
            )
        s = self.stream
        return self._recorded(s.advanced("vector_final", s.dtype, s.time, s.packet, s.data), "vector_final")


def _stream_axis(reduce: object, layout: Mapping, method: str) -> Axis:
    """An axis of the stream (a reduce label, a pair-mode group axis): given as the axis, its name, or a
    mapping of it alone."""
    if isinstance(reduce, Axis):
        return reduce
    name = next(iter(reduce.axis_names)) if isinstance(reduce, Mapping) and len(reduce.axis_names) == 1 else reduce
    sizes = {f.atom.name: f.atom.n for f in layout.factors if isinstance(f.atom, SymAtom)}
    if not isinstance(name, str) or name not in sizes:
        raise VerifyError("vector-reduce-label", f"`{method}` names an axis of the stream to reduce, got {reduce!r}")
    return Axis(name, sizes[name])


def vector_init(stream: Flow) -> VectorStream:
    rule("vector_init")(stream.dtype)
    tags = active().zeros(np.dtype(np.uint8), stream.layout.size)
    result = VectorStream(stream, tags, STAGES["vector_init"].slot, 8, frozenset())
    active().record("vector_init", (stream,), (result,))
    return result
