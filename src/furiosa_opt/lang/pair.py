"""The Vector Engine's pair mode: two groups of one interleaved stream through one pass.

`ctx.main.begin_interleaved(lhs, rhs, I)` reads two DM tensors as one stream whose new size-2 Time axis
`I` selects the tensor; `vector_intra_slice_unzip(I, tile_time, split_time)` splits it into group 0 (I = 0)
and group 1 (I = 1), each over `split_time`. Ops then apply to each group with its own operand (`None`
skips a group), sharing the pass's ALUs; a `*_zip` op combines the groups into one stream.

The hardware runs both groups as one stream whose tag bit 3 is the group, so a pair op is recorded as
the plain op with a `Branched` operand guarded by `TagGuard.group(0)` / `TagGuard.group(1)`; the
simulator runs it so.
"""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.tensors import VrfTensor
from furiosa_opt.mapping import Mapping
from furiosa_opt.stages import STAGES, rule
from furiosa_opt.vector import arithmetic as ops
from furiosa_opt.vector.ops import RF, BinaryArgMode, Branched, FpDivBinaryOp, Stash, TagGuard, TernaryArgMode
from furiosa_opt.verify import vector as rules


class VectorPair:
    """Two groups in one Vector Engine pass (upstream's `VectorTensorPair`): `g0` and `g1` are the
    groups' streams over the split time; the stage, way and ALUs are the pass's.

        pair = ctx.main.begin_interleaved(a.view(), b.view(), I).fetch(m["I"], m["A % 8"]) \\
            .collect(m["I"], m["A % 8"]).vector_init().vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        pair.vector_fxp(FxpBinaryOp.MulInt, 2, None).vector_clip_zip(ClipBinaryOpI32.AddFxp)

    Examples:
        >>> A, I = axes(A=2048, I=2)
        >>> In, Out = HbmTensor[i8, m["1"], m["A"]], HbmTensor[i32, m["1"], m["A"]]
        >>> @device
        ... def add(ctx: Context, a: In, b: In) -> Out:
        ...     a_dm = a.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     b_dm = b.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     out = DmTensor.new(i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     (
        ...         ctx.main.begin_interleaved(a_dm.view(), b_dm.view(), I)    # I = 0: a, I = 1: b
        ...         .fetch(m["I"], m["A % 8"]).fetch_cast(i32).collect(m["I"], m["A % 8"])
        ...         .vector_init()
        ...         .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])           # a VectorPair: g0 = a, g1 = b
        ...         .vector_clip_zip(ClipBinaryOpI32.AddFxp)                  # one stream again: a + b
        ...         .vector_final()
        ...         .commit_trim(m["A % 8"])
        ...         .commit_view(out.view_mut())                              # into the DmTensorViewMut
        ...     )
        ...     return out.to_hbm(ctx.tdma, m["A"])
        >>> rng = np.random.default_rng(0)
        >>> a, b = HostTensor.rand(i8, m[A], rng), HostTensor.rand(i8, m[A], rng)
        >>> with Context.acquire() as ctx:
        ...     y = launch(add, ctx, a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == a.to_numpy().astype(np.int32) + b.to_numpy()).all())
        True
    """

    def __init__(self, g0, g1, stage: str, way: int, used: frozenset):
        self.g0, self.g1, self.stage, self.way, self.used = g0, g1, stage, way, used

    def __repr__(self) -> str:
        return f"VectorPair({self.stage}, Way{self.way}, {self.g0.stream!r})"

    @property
    def dtype(self) -> DType:
        return self.g0.dtype

    def _advanced(self, method: str, g0, g1, alu=None) -> VectorPair:
        used = self.used | {alu} if alu is not None else self.used
        return VectorPair(g0, g1, STAGES[method].slot, g0.way, used)

    def _groups(self, method: str, op, operands: tuple, combine) -> VectorPair:
        """`combine(stream, operand)` in each group that has an operand; the ALU is the pass's once either does."""
        slot = self._enter(method)
        alu = self.g0._op(op, method)
        rules.check_alu(alu, self.used, method)
        if sum(register_file(o) is not None for o in operands) > 1:
            raise VerifyError(
                "vector-pair-operand",
                f"`{method}`: both groups read a register-file tensor, but a pass has one register-file port",
            )
        groups = []
        for group, operand in zip((self.g0, self.g1), operands, strict=True):
            if operand is Stash or (isinstance(operand, tuple) and operand[0] is Stash):
                raise VerifyError("vector-stash-context", f"`{method}`: pair mode has no stash")
            data = group.stream.data if operand is None else self._computed(group, operand, method, combine)
            groups.append(group._with(slot, data))
        result = self._advanced(method, *groups, alu if any(o is not None for o in operands) else None)
        return result

    @staticmethod
    def _computed(group, operand, method: str, combine) -> object:
        if isinstance(operand, tuple):
            first, second, _ = group._ternary(operand, method)
            return active().elementwise(lambda s, a, b: combine(s, (a, b)), group.stream.data, first, second)
        values, _ = group._operand(operand, method)
        return active().elementwise(combine, group.stream.data, values)

    def _binary(self, method: str, op, mode, o0, o1) -> VectorPair:
        compute = STAGES[method].arithmetic
        combine = lambda x, o: compute(op, *ops.apply_arg_mode(mode, x, o))  # noqa: E731
        result = self._groups(method, op, (o0, o1), combine)
        return self._record(method, op, (o0, o1), result, mode)

    def _record(self, method: str, op, operands: tuple, result: VectorPair, mode) -> VectorPair:
        """One op for the pass: the groups' operands as a `Branched` guarded by the group bit."""
        imms, port, tensor = [], None, None
        for group, operand in enumerate(operands):
            if operand is None:
                continue
            held = register_file(operand)
            if held is not None:
                tensor = held
                port = (TagGuard.group(group), (RF, operand[1]) if isinstance(operand, tuple) else RF)
            else:
                imms.append((TagGuard.group(group), operand))
        shown = Branched(tuple(imms), port) if imms or port else None
        operands_ = (self, tensor) if tensor is not None else (self,)
        active().record(method, operands_, (result,), op=op, operand=shown, mode=mode)
        return result

    # ---- per-group ops ----

    @user_facing
    def vector_logic(self, op, group0: object, group1: object) -> VectorPair:
        """A bitwise op in each group with its own operand (`None` skips the group).

        pair.vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFFFFFF, 0x7FFFFFFF)
        """
        return self._binary("vector_logic", op, BinaryArgMode.Mode01, group0, group1)

    @user_facing
    def vector_logic_with_mode(self, op, mode: BinaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_logic` with an argument mode, read inside each group (0 = its stream, 1 = its operand).

        pair.vector_logic_with_mode(LogicBinaryOpI32.BitXor, BinaryArgMode.Mode10, 1, None)
        """
        return self._binary("vector_logic", op, mode, group0, group1)

    @user_facing
    def vector_fxp(self, op, group0: object, group1: object) -> VectorPair:
        """An integer op in each group with its own operand.

        pair.vector_fxp(FxpBinaryOp.MulInt, 2, 3)
        """
        return self._binary("vector_fxp", op, BinaryArgMode.Mode01, group0, group1)

    @user_facing
    def vector_fxp_with_mode(self, op, mode: BinaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_fxp` with an argument mode.

        pair.vector_fxp_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10, 100, None)
        """
        return self._binary("vector_fxp", op, mode, group0, group1)

    @user_facing
    def vector_fp_binary(self, op, group0: object, group1: object) -> VectorPair:
        """A float op in each group (f32, Way4).

        pair.vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.5, None)
        """
        return self._binary("vector_fp_binary", op, BinaryArgMode.Mode01, group0, group1)

    @user_facing
    def vector_fp_binary_with_mode(self, op, mode: BinaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_fp_binary` with an argument mode.

        pair.vector_fp_binary_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10, 1.0, 1.0)
        """
        return self._binary("vector_fp_binary", op, mode, group0, group1)

    @user_facing
    def vector_fp_ternary(self, op, group0: object, group1: object) -> VectorPair:
        """`FmaF` in each group with its own operand pair `(a, b)`.

        pair.vector_fp_ternary(FpTernaryOp.FmaF, (2.0, 1.0), None)
        """
        return self.vector_fp_ternary_with_mode(op, TernaryArgMode.Mode012, group0, group1)

    @user_facing
    def vector_fp_ternary_with_mode(self, op, mode: TernaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_fp_ternary` with an argument mode.

        pair.vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode102, (2.0, 1.0), (3.0, 0.0))
        """
        method = "vector_fp_ternary"
        for operand in (group0, group1):
            if operand is not None and not (isinstance(operand, tuple) and len(operand) == 2):
                raise VerifyError("vector-operand", f"`{method}` takes a pair `(a, b)` per group, got {operand!r}")
        combine = lambda x, pair_: STAGES["vector_fp_ternary"].arithmetic(op, *ops.apply_arg_mode(mode, x, *pair_))  # noqa: E731
        result = self._groups(method, op, (group0, group1), combine)
        return self._record(method, op, (group0, group1), result, mode)

    @user_facing
    def vector_fp_div(self, group0: object, group1: object) -> VectorPair:
        """`x / operand` in each group on the divider.

        pair.vector_fp_div(2.0, None)
        """
        return self.vector_fp_div_with_mode(BinaryArgMode.Mode01, group0, group1)

    @user_facing
    def vector_fp_div_with_mode(self, mode: BinaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_fp_div` with an argument mode (`Mode10` = `operand / x`).

        pair.vector_fp_div_with_mode(BinaryArgMode.Mode10, 1.0, 1.0)
        """
        return self._binary("vector_fp_div", FpDivBinaryOp.DivF, mode, group0, group1)

    @user_facing
    def vector_clip(self, op, group0: object, group1: object) -> VectorPair:
        """Min/max/add on the clip unit in each group.

        pair.vector_clip(ClipBinaryOpI32.Max, 0, None)
        """
        return self._binary("vector_clip", op, BinaryArgMode.Mode01, group0, group1)

    @user_facing
    def vector_clip_with_mode(self, op, mode: BinaryArgMode, group0: object, group1: object) -> VectorPair:
        """`vector_clip` with an argument mode.

        pair.vector_clip_with_mode(ClipBinaryOpI32.Min, BinaryArgMode.Mode01, 127, 127)
        """
        return self._binary("vector_clip", op, mode, group0, group1)

    @user_facing
    def vector_fp_unary(self, op, group0: bool, group1: bool) -> VectorPair:
        """A float unary op in the groups flagged `True` (the others pass through).

        pair.vector_fp_unary(FpUnaryOp.Exp, True, False)
        """
        method = "vector_fp_unary"
        slot = self._enter(method)
        alu = self.g0._op(op, method, dtypes.f32)
        rules.check_alu(alu, self.used, method)
        groups = [
            g._with(
                slot,
                active().elementwise(lambda v: STAGES["vector_fp_unary"].arithmetic(op, v), g.stream.data)
                if apply
                else g.stream.data,
            )
            for g, apply in ((self.g0, group0), (self.g1, group1))
        ]
        result = self._advanced(method, *groups, alu if group0 or group1 else None)
        if group0 or group1:
            guard = None if group0 and group1 else TagGuard.group(0 if group0 else 1)
            active().record(method, (self,), (result,), op=op, guard=guard)
        return result

    # ---- ops on both groups at once ----

    @user_facing
    def vector_fxp_to_fp(self, int_width: int) -> VectorPair:
        """Both groups' fixed point → f32.

        pair.vector_fxp_to_fp(31)
        """
        slot = self._enter("vector_fxp_to_fp", dtypes.i32)
        convert = lambda v: STAGES["vector_fxp_to_fp"].arithmetic(v, int_width)  # noqa: E731
        return self._both(
            "vector_fxp_to_fp",
            slot,
            lambda g, slot: g._with(slot, active().elementwise(convert, g.stream.data), dtype=dtypes.f32),
            int_width=int_width,
        )

    @user_facing
    def vector_fp_to_fxp(self, int_width: int) -> VectorPair:
        """Both groups' f32 → fixed point.

        pair.vector_fp_to_fxp(31)
        """
        slot = self._enter("vector_fp_to_fxp", dtypes.f32)
        convert = lambda v: STAGES["vector_fp_to_fxp"].arithmetic(v, int_width)  # noqa: E731
        return self._both(
            "vector_fp_to_fxp",
            slot,
            lambda g, slot: g._with(slot, active().elementwise(convert, g.stream.data), dtype=dtypes.i32),
            int_width=int_width,
        )

    @user_facing
    def vector_narrow_split(self, time: Mapping, packet: Mapping) -> VectorPair:
        """Both groups' flits into two 4-element steps; `time` is a group's (Way8 → Way4).

        pair.vector_narrow_split(m["1 # 2"], m["A % 2 # 4"])
        """
        slot = self._enter("vector_narrow_split")
        rule("vector_narrow_split")(self.g0.stream.time, self.g0.stream.packet, time, packet)
        step = lambda g, slot: g._relaid(slot, time, packet, way=4)  # noqa: E731
        return self._both("vector_narrow_split", slot, step, time=time, packet=packet)

    @user_facing
    def vector_widen_concat(self, time: Mapping, packet: Mapping) -> VectorPair:
        """Both groups' 4-element steps joined into flits (Way4 → Way8).

        pair.vector_widen_concat(m["1"], m["A % 2 # 8"])
        """
        slot = self._enter("vector_widen_concat")
        rule("vector_widen_concat")(self.g0.stream.time, self.g0.stream.packet, time, packet)
        step = lambda g, slot: g._relaid(slot, time, packet, way=8)  # noqa: E731
        return self._both("vector_widen_concat", slot, step, time=time, packet=packet)

    @user_facing
    def vector_reinterpret(self, dtype: DType) -> VectorPair:
        """Both groups' bits read as the other 32-bit scalar; no stage, no ALU.

        pair.vector_reinterpret(i32)
        """
        rule("vector_reinterpret")(dtype)

        def view(g, slot):
            return g._with(g.stage, active().elementwise(lambda v: v.view(dtype.storage), g.stream.data), dtype=dtype)

        return self._both("vector_reinterpret", self.stage, view, dtype=dtype)  # no stage of its own

    def _enter(self, method: str, scalar: DType | None = None) -> str:
        """Check that `method` may come next in the pass (and its scalar); its slot (the stage table's)."""
        slot = STAGES[method].slot
        rules.check_stage(self.stage, self.way, method, slot)
        if scalar is not None:
            rules.check_scalar(self.dtype, scalar, method)
        return slot

    def _both(self, method: str, slot: str, step, **attrs) -> VectorPair:
        """The same stage in both groups (`step(group, slot)`), recorded once for the pass."""
        g0, g1 = step(self.g0, slot), step(self.g1, slot)
        result = VectorPair(g0, g1, slot, g0.way, self.used)
        active().record(method, (self,), (result,), **attrs)
        return result

    # ---- zips: the groups into one stream ----

    @user_facing
    def vector_logic_zip(self, op) -> object:
        """`op(group 0, group 1)` on the logic unit, one stream out.

        pair.vector_logic_zip(LogicBinaryOpI32.BitXor)
        """
        return self._zip("vector_logic_zip", op, BinaryArgMode.Mode01)

    @user_facing
    def vector_logic_zip_with_mode(self, op, mode: BinaryArgMode) -> object:
        """`vector_logic_zip` with a mode over the groups (0 = group 0, 1 = group 1).

        pair.vector_logic_zip_with_mode(LogicBinaryOpI32.LeftShift, BinaryArgMode.Mode10)
        """
        return self._zip("vector_logic_zip", op, mode)

    @user_facing
    def vector_fxp_zip(self, op) -> object:
        """`op(group 0, group 1)` on the fixed-point unit.

        pair.vector_fxp_zip(FxpBinaryOp.MulInt)
        """
        return self._zip("vector_fxp_zip", op, BinaryArgMode.Mode01)

    @user_facing
    def vector_fxp_zip_with_mode(self, op, mode: BinaryArgMode) -> object:
        """`vector_fxp_zip` with a mode over the groups.

        pair.vector_fxp_zip_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10)  # group 1 - group 0
        """
        return self._zip("vector_fxp_zip", op, mode)

    @user_facing
    def vector_fp_zip(self, op) -> object:
        """`op(group 0, group 1)` on the float unit (f32, Way4).

        pair.vector_fp_zip(FpBinaryOp.AddF)
        """
        return self._zip("vector_fp_zip", op, BinaryArgMode.Mode01)

    @user_facing
    def vector_fp_zip_with_mode(self, op, mode: BinaryArgMode) -> object:
        """`vector_fp_zip` with a mode over the groups.

        pair.vector_fp_zip_with_mode(FpBinaryOp.SubF, BinaryArgMode.Mode10)
        """
        return self._zip("vector_fp_zip", op, mode)

    @user_facing
    def vector_clip_zip(self, op) -> object:
        """`op(group 0, group 1)` on the clip unit (MNIST's bias add: `ClipBinaryOpF32.Add`).

        pair.vector_clip_zip(ClipBinaryOpI32.AddFxp)
        """
        return self._zip("vector_clip_zip", op, BinaryArgMode.Mode01)

    @user_facing
    def vector_clip_zip_with_mode(self, op, mode: BinaryArgMode) -> object:
        """`vector_clip_zip` with a mode over the groups.

        pair.vector_clip_zip_with_mode(ClipBinaryOpF32.Max, BinaryArgMode.Mode10)
        """
        return self._zip("vector_clip_zip", op, mode)

    def _zip(self, method: str, op, mode):
        """One stream of `op(group 0, group 1)` (the mode picks the groups), in the Zipped context: no
        stash follows; the tags are group 1's."""
        slot = self._enter(method)
        alu = self.g0._op(op, method)
        rules.check_alu(alu, self.used, method)
        g0, g1, compute = self.g0, self.g1, STAGES[method].arithmetic
        data = active().elementwise(
            lambda a, b: compute(op, *ops.apply_arg_mode(mode, a, b)), g0.stream.data, g1.stream.data
        )
        result = g1._with(slot, data, alu=alu, stash=rules.ZIPPED)
        result.used = self.used | {alu}
        active().record(method, (self,), (result,), op=op, mode=mode)
        return result


def register_file(operand: object) -> VrfTensor | None:
    """The VRF tensor a Vector Engine operand reads, if any: plain, a ternary pair's first part, or a
    branched operand's port (the pass's one register-file port)."""
    if isinstance(operand, Branched):
        operand = operand.port[1] if operand.port else None
    if isinstance(operand, tuple):
        operand = operand[0]
    return operand if isinstance(operand, VrfTensor) else None
