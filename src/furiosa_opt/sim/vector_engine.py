"""The Vector Engine's stages from their configs' numbers: the op and mode decoded from their codes
(`vector.codes`), the operand from its kinds, raw bits and guards, the tag mode from its comparisons —
then the same `vector.arithmetic` the CPU backend runs. The stages that relay the stream out by a config's
walks (unzip, the narrow and widen stages, the reduces) stay in `tensor_unit.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.compiler.lir import Command
from furiosa_opt.dtypes import DTYPE_CODES
from furiosa_opt.sim.memory import Fault
from furiosa_opt.sim.stream import Stream, Unit, Unsupported
from furiosa_opt.vector import arithmetic
from furiosa_opt.vector.codes import MODES, OPS, decode_guard, decode_operand, decode_tag, scalar_kind
from furiosa_opt.vector.ops import RF, Stash


def _payload(unit: Unit, stream: Stream, config: dict, command: Command, value: object) -> object:
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
        raise Fault(f"`{config['stage']}` has an {scalar_kind(value.dtype)} immediate on a {stream.dtype} stream")
    return np.full(stream.values.shape, value, dtype=stream.dtype.storage)


def _branched(unit: Unit, stream: Stream, config: dict, command: Command, combine: Callable) -> Stream:
    """The op through the operand's branch slots `[(guard, values)]` (a plain operand is one slot that
    admits every element)."""
    slots = [(guard, _payload(unit, stream, config, command, v)) for guard, v in decode_operand(config)]
    tags = stream.tags if stream.tags is not None else np.zeros(stream.values.shape, dtype=np.uint8)
    with np.errstate(all="ignore"):
        values = arithmetic.apply_branched(slots, tags, stream.values, combine)
    return replace(stream, values=values)


def _binary(compute: Callable) -> Callable:
    def stage(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
        op, mode = OPS.value(config["op"]), MODES.value(config["mode"])
        return _branched(
            unit, stream, config, command, lambda x, o: compute(op, *arithmetic.apply_arg_mode(mode, x, o))
        )

    return stage


def _ternary(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    op, mode = OPS.value(config["op"]), MODES.value(config["mode"])
    return _branched(
        unit,
        stream,
        config,
        command,
        lambda x, pair_: arithmetic.fp_ternary(op, *arithmetic.apply_arg_mode(mode, x, *pair_)),
    )


def _fp_unary(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    op, guard = OPS.value(config["op"]), decode_guard(config["guard"])
    with np.errstate(all="ignore"):
        values = arithmetic.fp_unary(op, stream.values)
        if not guard.unconditional:
            values = np.where(guard.admits(stream.tags), values, stream.values)
    return replace(stream, values=values)


def _zip(compute: Callable) -> Callable:
    def stage(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
        """`op(group 0, group 1)`: the two halves of the pair-mode stream, one stream out."""
        op, mode = OPS.value(config["op"]), MODES.value(config["mode"])
        halves = stream.values.reshape(stream.values.shape[0], 2, -1)
        with np.errstate(all="ignore"):
            values = compute(op, *arithmetic.apply_arg_mode(mode, halves[:, 0], halves[:, 1]))
        tags = np.zeros(values.shape, dtype=np.uint8)
        return replace(stream.reshaped(config), values=values, tags=tags)

    return stage


def _vector_init(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    return replace(stream, tags=np.zeros(stream.values.shape, dtype=np.uint8))


def _tag(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    """The tag unit: each element's comparisons, one bit each (TagMode.Zero: no bit)."""
    mode = decode_tag(config)
    if mode.kind == "AxisToggle":
        raise Unsupported("TagMode.AxisToggle: upstream's compiler rejects it, and the simulator does not run it")
    return replace(stream, tags=arithmetic.comparison_tags(mode, stream.values))


def _stash(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    unit.pending["stash"] = stream.values
    return stream


def _reinterpret(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    dtype = DTYPE_CODES.value(config["dtype"])
    return replace(stream, values=stream.values.view(dtype.storage), dtype=dtype)


def _fixed_point(convert: Callable, dtype: dtypes.DType) -> Callable:
    """`vector_fxp_to_fp` and `vector_fp_to_fxp`: every element converted at the config's `int_width`."""

    def stage(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
        with np.errstate(all="ignore"):
            values = convert(stream.values, config["int_width"])
        return replace(stream, values=values, dtype=dtype)

    return stage


def _final(unit: Unit, stream: Stream, config: dict, command: Command) -> Stream:
    """Leaving the Vector Engine: the elements' tags stay behind (the stages after relay values only)."""
    return replace(stream, tags=None)


HANDLERS: dict[str, Callable] = {  # the Vector Engine's stages whose configs hold no mapping
    "vector_init": _vector_init,
    "vector_intra_slice_tag": _tag,
    "vector_logic_zip": _zip(arithmetic.logic),
    "vector_fxp_zip": _zip(arithmetic.fxp),
    "vector_fp_zip": _zip(arithmetic.fp_binary),
    "vector_clip_zip": _zip(arithmetic.clip),
    "vector_final": _final,
    "vector_logic": _binary(arithmetic.logic),
    "vector_fxp": _binary(arithmetic.fxp),
    "vector_fp_binary": _binary(arithmetic.fp_binary),
    "vector_clip": _binary(arithmetic.clip),
    "vector_fp_ternary": _ternary,
    "vector_fp_div": _binary(arithmetic.fp_binary),
    "vector_stash": _stash,
    "vector_reinterpret": _reinterpret,
    "vector_fp_unary": _fp_unary,
    "vector_fxp_to_fp": _fixed_point(dtypes.fxp_to_fp, dtypes.f32),
    "vector_fp_to_fxp": _fixed_point(dtypes.fp_to_fxp, dtypes.i32),
}
