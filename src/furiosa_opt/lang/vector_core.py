"""What every Vector Engine op of `vector.py` builds on: the state of a stream inside the engine (its
tags, stage, way, the ALUs it has used, the stash), the checks an op passes first (its place in the
chain, its scalar, a free ALU), reading its operand (a constant, a VRF tensor, the stash, or a
`Branched` choice of them, broadcast into the stream's layout) and recording it with the backend.

`vector.py` declares the ops themselves, one method each, on `VectorStream`, a `VectorCore`. Neither
imports stream.py: the stream they hold is typed by the `Flow` protocol, and the stream methods a
VectorStream refuses (until `vector_final()`) are looked up on that stream's own class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.flow import Flow
from furiosa_opt.lang.loops import Scalar
from furiosa_opt.lang.pair import register_file
from furiosa_opt.lang.tensors import VrfTensor
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.stages import STAGES
from furiosa_opt.vector import arithmetic as ops
from furiosa_opt.vector.ops import RF, Branched, FpUnaryOp, FxpBinaryOp, Stash, alu_of, scalar_dtype
from furiosa_opt.verify import vector as rules

UNDEFINED_UPSTREAM = (FxpBinaryOp.ArithRightShiftRound, FpUnaryOp.Erf)  # `todo!()` bodies upstream


@dataclass(frozen=True)
class Stashed:
    """What `vector_stash` wrote: the values in their layout, at the scalar and way of the write."""

    data: object
    layout: Mapping
    dtype: DType
    way: int


SPENT = "spent"  # the stash state once read: it cannot be written or read again this pass
OPERAND = "a constant, a VrfTensor or Stash"  # what an operand position with the register-file port accepts
TERNARY = ("operand 1 of 2 (`a`)", "operand 2 of 2 (`b`)")  # a ternary pair's positions, as errors name them
SWAP = (
    "for `x * 2.0 + vrf`, put the VrfTensor first and swap the operands with the mode: "
    "`vector_fp_ternary_with_mode(FpTernaryOp.FmaF, TernaryArgMode.Mode021, (vrf, 2.0))`"
)


def _at(method: str, which: str) -> str:
    """Where an operand error is: the op, and the operand when the op takes several."""
    return f"`{method}` {which}" if which else f"`{method}`"


class VectorNotFinal(VerifyError, AttributeError):
    """A Tensor Unit stream method asked of a stream still inside the Vector Engine. An AttributeError
    too, so `hasattr(stream, "commit_trim")` stays False."""

    def __init__(self, method: str):
        super().__init__(
            "vector-not-final",
            f"a VectorStream must end with `vector_final()` before `{method}`",
            notes=(f"s.vector_final().{method}(…) leaves the Vector Engine first",),
        )


class VectorCore:
    """The state of a stream inside the Vector Engine and the steps its ops share (`VectorStream` adds
    the ops)."""

    def __init__(
        self,
        stream: Flow,
        tags: object,
        stage: str,
        way: int,
        used: frozenset,
        stash: Stashed | str | None = None,
        inter_first: bool = False,
    ):
        self.stream, self.tags, self.stage, self.way, self.used = stream, tags, stage, way, used
        self.stash, self.inter_first = stash, inter_first

    def __getattr__(self, name: str) -> object:
        """Refuse a stream method by name when `vector_final()` is missing, rather than as a bare
        missing attribute (only called for names the VectorStream lacks). The stream methods are those of
        the class of the stream it holds, so the Vector Engine needs no import of stream.py; `stream` is
        read from the instance's dict, since a missing one would land here again."""
        stream = vars(self).get("stream")
        if not name.startswith("_") and callable(getattr(type(stream), name, None)):
            raise VectorNotFinal(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

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
        stash: object = ...,
    ) -> Self:
        s = self.stream
        stream = s.advanced("vector", dtype or s.dtype, time or s.time, packet or s.packet, data)
        used = self.used | {alu} if alu is not None else self.used
        return type(self)(
            stream,
            tags if tags is not None else self.tags,
            stage,
            way or self.way,
            used,
            self.stash if stash is ... else stash,
            self.inter_first,
        )

    def _operand(self, operand: object, method: str, which: str = "") -> tuple[object, object]:
        """A constant, a VRF tensor or the stash, broadcast into the stream's layout; and the stash state
        after the read. `which` names the operand in errors when the op takes several (`operand 1 of 2`)."""
        if operand is Stash:
            rules.check_stash_read(self.stash, self.dtype, self.way, method)
            held: Stashed = self.stash
            values = active().relayout(held.data, held.layout.factors, self.stream.layout.factors, True)
            return values, SPENT
        if isinstance(operand, VrfTensor):
            if operand.dtype != self.dtype:
                raise VerifyError(
                    "vector-operand", f"{_at(method, which)}: a {operand.dtype} VRF operand on a {self.dtype} stream"
                )
            try:
                values = active().relayout(operand.data, operand.storage.factors, self.stream.layout.factors, True)
            except MappingError as error:
                raise VerifyError(
                    "vector-operand", f"{_at(method, which)}: the VRF operand does not fit the stream: {error}"
                ) from None
            return values, self.stash
        return self._constant(operand, method, which, OPERAND), self.stash

    def _ternary(self, operands: tuple, method: str) -> tuple[object, object, object]:
        """A ternary op's pair `(a, b)`: `a` through the op's one register-file port (a constant, a VRF
        tensor or the stash), `b` an immediate. The values of both and the stash state after the read."""
        first, second = operands
        if second is Stash or isinstance(second, VrfTensor):
            got = "Stash" if second is Stash else "a VrfTensor"
            raise VerifyError(
                "vector-operand",
                f"{_at(method, TERNARY[1])} must be a constant, got {got}: the op reads its one register-file "
                f"operand (a VrfTensor or Stash) as {TERNARY[0]} only",
                notes=(SWAP,),
            )
        values, stash = self._operand(first, method, TERNARY[0])
        return values, self._constant(second, method, TERNARY[1], "a constant"), stash

    def _constant(self, operand: object, method: str, which: str = "", takes: str = OPERAND) -> object:
        """An immediate broadcast over the stream; `takes` says what the operand's position accepts."""
        if isinstance(operand, Scalar):
            raise VerifyError(
                "runtime-immediate",
                f"{_at(method, which)}: a vector-engine immediate must be a compile-time constant, but `{operand}` "
                "depends on a device loop index",
                notes=("use a VRF operand, or a Python `range` loop so that each pass has its own constant",),
            )
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise VerifyError("vector-operand", f"{_at(method, which)} takes {takes}, got {operand!r}")
        if self.dtype == dtypes.i32 and not isinstance(operand, int):
            raise VerifyError(
                "vector-operand", f"{_at(method, which)}: an i32 stream takes an int constant, got {operand!r}"
            )
        return active().constant(operand, self.dtype.storage, self.stream.layout.size)

    def _enter(self, method: str) -> str:
        """Check that `method` may come next in the intra-slice chain; its slot (the stage table's)."""
        slot = STAGES[method].slot
        rules.check_stage(self.stage, self.way, method, slot, self.inter_first)
        return slot

    def _op(self, op, method: str, scalar: DType | None = None):
        """Check the op's scalar, that upstream defines it, and that its ALU is free; its ALU."""
        rules.check_scalar(self.dtype, scalar or scalar_dtype(op), method)
        if op in UNDEFINED_UPSTREAM:
            raise VerifyError(
                "upstream-undefined", f"`{method}`: upstream does not define {op!r} yet (its body is `todo!()`)"
            )
        alu = alu_of(op)
        rules.check_alu(alu, self.used, method)
        return alu

    def _binary(self, method: str, op, operand: object, mode) -> Self:
        """A two-operand op computed with the stage's arithmetic (`STAGES[method].arithmetic`)."""
        stage = self._enter(method)
        alu = self._op(op, method)
        compute = STAGES[method].arithmetic
        combine = lambda x, o: compute(op, *ops.apply_arg_mode(mode, x, o))  # noqa: E731
        if isinstance(operand, Branched):
            data, stash = self._branched(operand, method, combine)
        else:
            values, stash = self._operand(operand, method)
            data = active().elementwise(combine, self.stream.data, values)
        result = self._with(stage, data, alu=alu, stash=stash)
        self._record_operand(method, operand, result, op=op, mode=mode)
        return result

    def _branched(self, operand: Branched, method: str, combine) -> tuple[object, object]:
        """Each element through the first slot whose guard admits its tag (upstream's `apply_slots`); a
        ternary slot's payload is a pair, its second part a constant."""
        guards, values, stash, ternary = [], [], self.stash, False
        for guard, payload in operand.slots:
            if isinstance(payload, tuple):
                ternary = True
                held, constant, stash = self._ternary(payload, method)
                values.append((held, constant))
            else:
                held, stash = self._operand(payload, method)
                values.append(held)
            guards.append(guard)
        flat = [v for pair_ in values for v in pair_] if ternary else values

        def apply(stream, tags, *bufs):
            payloads = list(zip(bufs[::2], bufs[1::2], strict=True)) if ternary else list(bufs)
            return ops.apply_branched(list(zip(guards, payloads, strict=True)), tags, stream, combine)

        return active().elementwise(apply, self.stream.data, self.tags, *flat), stash

    def _record_operand(self, method: str, operand: object, result: VectorCore, **attrs) -> None:
        """Record the op; a VRF operand (plain, or a branched port) is an operand of the vISA op, and the
        printed `Branched` names it `RF`."""
        tensor = register_file(operand)
        if isinstance(operand, Branched) and tensor is not None:
            payload = operand.port[1]
            shown = operand.with_port((RF, payload[1]) if isinstance(payload, tuple) else RF)
        elif isinstance(operand, tuple) and isinstance(operand[0], VrfTensor):
            shown = (None, operand[1])
        else:
            shown = None if isinstance(operand, VrfTensor) else operand
        operands = (self, tensor) if tensor is not None else (self,)
        attrs = {"op": attrs["op"], "operand": shown, **{k: v for k, v in attrs.items() if k != "op"}}
        active().record(method, operands, (result,), **attrs)

    def _recorded(self, result: object, name: str, **attrs) -> object:
        active().record(name, (self,), (result,), **attrs)
        return result

    def _relaid(self, stage: str, time: Mapping, packet: Mapping, way: int) -> Self:
        s = self.stream
        source, target = s.layout.factors, pair(*s.spatial, time, packet).factors
        data = active().relayout(s.data, source, target, False)
        tags = active().relayout(self.tags, source, target, False)
        return self._with(stage, data, way=way, time=time, packet=packet, tags=tags)
