"""The Vector Engine's stages from their configs' numbers: the op and mode decoded from their codes
(`vector.codes`), the operand from its kinds, raw bits and guards, the tag mode from its comparisons —
then the stage's arithmetic from the stage table (`STAGES[stage].arithmetic`), the function the CPU backend
runs. The stages that relay the stream out by a config's
walks (unzip, the narrow and widen stages, the reduces) stay in `tensor_unit.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.compiler.lir import Command
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.dtypes import DTYPE_CODES
from furiosa_opt.sim.memory import Fault
from furiosa_opt.sim.stream import Stream, Unit, Unsupported
from furiosa_opt.stages import STAGES, register
from furiosa_opt.vector import arithmetic
from furiosa_opt.vector.codes import MODES, OPS, decode_guard, decode_operand, decode_tag, scalar_kind
from furiosa_opt.vector.ops import RF, Stash


def _payload(unit: Unit, stream: Stream, config: EngineConfig, command: Command, value: object) -> object:
    """One operand value in the stream's layout: the VRF tensor the config names (`RF`), what the
    command's `vector_stash` wrote (`Stash`), or an immediate of the stream's scalar; a ternary pair part
    by part."""
    if isinstance(value, tuple):
        return tuple(_payload(unit, stream, config, command, part) for part in value)
    if value is RF:
        return unit.rf_values(stream, config, command)
    if value is Stash:
        return unit.stash_values(stream, config)
    if value.dtype != stream.dtype.storage:
        raise Fault(f"`{config.stage}` has an {scalar_kind(value.dtype)} immediate on a {stream.dtype} stream")
    return np.full(stream.values.shape, value, dtype=stream.dtype.storage)


def _branched(unit: Unit, stream: Stream, config: EngineConfig, command: Command, combine: Callable) -> Stream:
    """The op through the operand's branch slots `[(guard, values)]` (a plain operand is one slot that
    admits every element)."""
    slots = [
        (guard, _payload(unit, stream, config, command, v))
        for guard, v in decode_operand(config.operand, config.operand_bits, config.operand_guard)
    ]
    tags = stream.tags if stream.tags is not None else np.zeros(stream.values.shape, dtype=np.uint8)
    with np.errstate(all="ignore"):
        values = arithmetic.apply_branched(slots, tags, stream.values, combine)
    return replace(stream, values=values)


@register("simulator", "vector_logic", "vector_fxp", "vector_fp_binary", "vector_fp_div", "vector_clip")
def _binary(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """A two-operand op: the stage's arithmetic on the stream and its operand, in the config's mode."""
    compute, op, mode = _arithmetic(config), OPS.value(config.op), MODES.value(config.mode)
    return _branched(unit, stream, config, command, lambda x, o: compute(op, *arithmetic.apply_arg_mode(mode, x, o)))


@register("simulator", "vector_fp_ternary")
def _ternary(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    compute, op, mode = _arithmetic(config), OPS.value(config.op), MODES.value(config.mode)
    return _branched(
        unit, stream, config, command, lambda x, pair_: compute(op, *arithmetic.apply_arg_mode(mode, x, *pair_))
    )


@register("simulator", "vector_fp_unary")
def _fp_unary(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    op, guard = OPS.value(config.op), decode_guard(config.guard)
    with np.errstate(all="ignore"):
        values = _arithmetic(config)(op, stream.values)
        if not guard.unconditional:
            values = np.where(guard.admits(stream.tags), values, stream.values)
    return replace(stream, values=values)


@register("simulator", "vector_logic_zip", "vector_fxp_zip", "vector_fp_zip", "vector_clip_zip")
def _zip(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """`op(group 0, group 1)`: the two halves of the pair-mode stream, one stream out."""
    compute, op, mode = _arithmetic(config), OPS.value(config.op), MODES.value(config.mode)
    halves = stream.values.reshape(stream.values.shape[0], 2, -1)
    with np.errstate(all="ignore"):
        values = compute(op, *arithmetic.apply_arg_mode(mode, halves[:, 0], halves[:, 1]))
    tags = np.zeros(values.shape, dtype=np.uint8)
    return replace(stream.reshaped(config), values=values, tags=tags)


@register("simulator", "vector_init")
def _vector_init(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    return replace(stream, tags=np.zeros(stream.values.shape, dtype=np.uint8))


@register("simulator", "vector_intra_slice_tag")
def _tag(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """The tag unit: each element's comparisons, one bit each (TagMode.Zero: no bit)."""
    mode = decode_tag(config.mode, config.cmp, config.cmp_kind, config.cmp_bits)
    if mode.kind == "AxisToggle":
        raise Unsupported("TagMode.AxisToggle: upstream's compiler rejects it, and the simulator does not run it")
    return replace(stream, tags=_arithmetic(config)(mode, stream.values))


@register("simulator", "vector_stash")
def _stash(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    unit.pending["stash"] = stream.values
    return stream


@register("simulator", "vector_reinterpret")
def _reinterpret(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    dtype = DTYPE_CODES.value(config.dtype)
    return replace(stream, values=stream.values.view(dtype.storage), dtype=dtype)


@register("simulator", "vector_fxp_to_fp", "vector_fp_to_fxp")
def _fixed_point(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Every element converted at the config's `int_width`: fixed point to f32, or f32 to fixed point."""
    with np.errstate(all="ignore"):
        values = _arithmetic(config)(stream.values, config.int_width)
    return replace(stream, values=values, dtype=dtypes.f32 if config.stage == "vector_fxp_to_fp" else dtypes.i32)


@register("simulator", "vector_final")
def _final(unit: Unit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Leaving the Vector Engine: the elements' tags stay behind (the stages after relay values only)."""
    return replace(stream, tags=None)


def _arithmetic(config: EngineConfig) -> Callable:
    """The element-wise function of the config's stage: the one the CPU backend computes it with."""
    return STAGES[config.stage].arithmetic
