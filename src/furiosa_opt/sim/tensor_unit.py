"""One Tensor Unit command: the fetch sequencer reads DM, the engines transform the stream, the commit
sequencer (or a register-file store) writes it back — in every slice at once.

The stream is a [slices, positions] array in the wire order of its `[Time, Packet]` mapping, padding
zero. Each engine config names its stage and prints its mappings as vISA does; the engine's effect is a
relayout by logical index, an elementwise conversion or op (`dtypes`, `vector.arithmetic`), or the
contraction fold (`fold`) — the arithmetic the CPU backend also uses, reached here from the binary's
configs instead of from the kernel language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.compiler.lir import DM_BASE, Sequencer, walk_sequencer
from furiosa_opt.dtypes import DType, dtype_by_name
from furiosa_opt.fold import contraction_plan, fold, widener
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.factors import size
from furiosa_opt.mapping.parse import parse
from furiosa_opt.mapping.relayout import relayout_index
from furiosa_opt.sim.memory import Fault, Memories
from furiosa_opt.vector import arithmetic
from furiosa_opt.vector.ops import parse_op
from furiosa_opt.verify.contraction import accumulator

ONE = "[1]"


class Unsupported(Exception):
    """A stage this simulator does not execute."""


@dataclass(frozen=True)
class Stream:
    values: np.ndarray  # [slices, positions] in `layout` wire order, dtype.storage
    dtype: DType
    time: Mapping
    packet: Mapping

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


class TensorUnit:
    def __init__(self, memories: Memories, buffers: dict[str, dict], axes: dict[str, object]):
        self.memories, self.buffers, self.axes = memories, buffers, axes

    def mapping(self, text: str) -> Mapping:
        return parse(text[1:-1] if text.startswith("[") else text, self.axes)

    def run(self, command: dict) -> None:
        fetch, *stages = command["engines"]
        stream = self.fetch(command, fetch)
        pending: dict = {}
        for config in stages:
            stage = config["stage"]
            if stage in ("commit", "commit_view"):
                self.commit(stream, command)
            elif stage == "to_trf":
                self.store(stream, command, pair(self.mapping(config["lane"]), self.mapping(config["element"])))
            elif stage == "to_vrf":
                self.store(stream, command, self.mapping(config["element"]))
            elif stage.startswith("contract_"):
                stream = self.contract(stream, stage, config, command, pending)
            elif stage in _STAGES:
                stream = _STAGES[stage](self, stream, config, command)
            else:
                raise Unsupported(f"the simulator does not execute the `{stage}` stage yet")

    # ---- memory side ----

    def fetch(self, command: dict, config: dict) -> Stream:
        buffer = self.buffers[command["fetch"]["buffer"]]
        dtype = dtype_by_name(buffer["dtype"])
        time, packet = self.mapping(config["time"]), self.mapping(config["packet"])
        element = self.mapping(config["element"])
        layout = pair(time, packet)
        source = relayout_index(pair(self.mapping(ONE), element).factors, layout.factors, True)
        addresses = walk_sequencer(Sequencer.from_dict(command["fetch"]), 1)
        if len(addresses) != layout.size:
            raise Fault(f"the fetch sequencer visits {len(addresses)} positions, the stream has {layout.size}")
        read = np.flatnonzero(source >= 0)
        values = np.zeros((self.memories.files["sram"].shape[0], layout.size), dtype=dtype.storage)
        values[:, read] = self._load("sram", addresses[read] - DM_BASE, dtype)
        return Stream(values, dtype, time, packet)

    def commit(self, stream: Stream, command: dict) -> None:
        addresses = walk_sequencer(Sequencer.from_dict(command["commit"]), 0)
        if len(addresses) != stream.layout.size:
            raise Fault(f"the commit sequencer visits {len(addresses)} positions, the stream has {stream.layout.size}")
        live = evaluate(stream.layout.factors, np.arange(stream.layout.size)).live
        self._save("sram", addresses[live] - DM_BASE, stream.values[:, live], stream.dtype)

    def store(self, stream: Stream, command: dict, target: Mapping) -> None:
        """A register-file store: the stream relaid into the file's layout at the buffer's address."""
        buffer = self.buffers[command["outputs"][0]]
        values = _relayout(stream.values, stream.layout, target, broadcast=False)
        offsets = buffer["address"] + np.arange(target.size, dtype=np.int64) * stream.dtype.nbytes(1)
        self._save(buffer["memory"], offsets, values, stream.dtype)

    def operand(self, command: dict, config: dict, memory: str) -> Operand:
        """The register-file tensor an engine reads (the buffer its config names in `rf`), from the
        buffer's levels."""
        name = config.get("rf")
        if name not in command["inputs"] or self.buffers[name]["memory"] != memory:
            raise Fault(
                f"`{config['stage']}` needs a {memory.upper()} tensor the command reads, its config names {name}"
            )
        buffer = self.buffers[name]
        dtype = dtype_by_name(buffer["dtype"])
        levels = tuple(self.mapping(level) for level in buffer["levels"][3:])
        offsets = buffer["address"] + np.arange(pair(*levels).size, dtype=np.int64) * dtype.nbytes(1)
        return Operand(self._load(memory, offsets, dtype), dtype, levels)

    def _load(self, memory: str, offsets: np.ndarray, dtype: DType) -> np.ndarray:
        raw = self.memories.gather(memory, offsets, dtype.nbytes(1))
        return np.ascontiguousarray(raw).view(dtype.storage)

    def _save(self, memory: str, offsets: np.ndarray, values: np.ndarray, dtype: DType) -> None:
        raw = np.ascontiguousarray(values.astype(dtype.storage, copy=False)).view(np.uint8)
        self.memories.scatter(memory, offsets, dtype.nbytes(1), raw)

    # ---- the Contraction Engine ----

    def contract(self, stream: Stream, stage: str, config: dict, command: dict, pending: dict) -> Stream:
        """outer/packet/time only record their mappings; lane runs the fused fold (as upstream's CPU does)."""
        if stage == "contract_outer":
            pending.update(lhs=stream, trf=self.operand(command, config, "trf"))
            pending.update(time=self.mapping(config["time"]), packet=self.mapping(config["packet"]))
            return stream
        if "lhs" not in pending:
            raise Fault(f"`{stage}` comes before any `contract_outer` in the command's engine configs")
        if stage == "contract_packet":
            pending["packet2"] = self.mapping(config["packet"])
            return stream
        if stage == "contract_time":
            pending["time2"] = self.mapping(config["time"])
            return stream
        lhs, trf = pending["lhs"], pending["trf"]
        lane = trf.levels[0]
        reduced = pair(lane, pending["time2"], pending["packet2"])
        pre_reduce = pair(lane, pending["time"], pending["packet"])
        plan = contraction_plan(lhs.layout.factors, trf.layout.factors, pre_reduce.factors, reduced.factors)
        acc = accumulator(lhs.dtype, trf.dtype)
        widen = widener(acc, lhs.dtype)
        values = fold(_with_zero(widen(lhs.values)), plan.lhs, _with_zero(widen(trf.values)), plan.rhs, plan,
                      size(reduced.factors), acc.storage)  # fmt: skip
        time, packet = self.mapping(config["time"]), self.mapping(config["packet"])
        return Stream(_relayout(values, reduced, pair(time, packet), broadcast=False), acc, time, packet)


# ---- the other stages: (unit, stream, config, command) -> stream ----


def _relaid(unit: TensorUnit, stream: Stream, config: dict, command: dict | None = None, drop: bool = False) -> Stream:
    """The stream relaid out over the config's time (if it names one) and packet."""
    time = unit.mapping(config["time"]) if "time" in config else stream.time
    packet = unit.mapping(config["packet"])
    values = _relayout(stream.values, stream.layout, pair(time, packet), broadcast=False, drop=drop)
    return replace(stream, values=values, time=time, packet=packet)


def _cast(unit: TensorUnit, stream: Stream, config: dict, command: dict) -> Stream:
    target = dtype_by_name(config["dtype"])
    converted = replace(stream, values=dtypes.convert(stream.values, stream.dtype, target), dtype=target)
    return _relaid(unit, converted, config) if "packet" in config else converted


def _commit_cast(relu: bool) -> Callable:
    convert = dtypes.bf16_from_f32_relu_hw if relu else dtypes.bf16_from_f32_hw

    def stage(unit: TensorUnit, stream: Stream, config: dict, command: dict) -> Stream:
        return replace(stream, values=convert(stream.values), dtype=dtype_by_name(config["dtype"]))

    return stage


def _binary(compute: Callable) -> Callable:
    def stage(unit: TensorUnit, stream: Stream, config: dict, command: dict) -> Stream:
        op, mode = parse_op(config["op"]), parse_op(config["mode"])
        if "rf" in config:  # a VRF tensor, broadcast into the stream's layout
            vrf = unit.operand(command, config, "vrf")
            operand = _relayout(vrf.values, vrf.layout, stream.layout, broadcast=True)
        else:
            constant = float(config["operand"]) if stream.dtype.is_float else int(config["operand"])
            operand = np.full(stream.values.shape, constant, dtype=stream.dtype.storage)
        with np.errstate(all="ignore"):
            values = compute(op, *arithmetic.apply_arg_mode(mode, stream.values, operand))
        return replace(stream, values=values)

    return stage


def _elementwise(convert: Callable, dtype: DType | None = None) -> Callable:
    def stage(unit: TensorUnit, stream: Stream, config: dict, command: dict) -> Stream:
        with np.errstate(all="ignore"):
            values = convert(stream.values, config)
        return replace(stream, values=values, dtype=dtype or stream.dtype)

    return stage


def _unchanged(unit: TensorUnit, stream: Stream, config: dict, command: dict) -> Stream:
    return stream


_STAGES: dict[str, Callable] = {
    "fetch_cast": _cast,
    "collect": _relaid,
    "cast": _cast,
    "commit_trim": partial(_relaid, drop=True),
    "commit_cast": _commit_cast(relu=False),
    "commit_cast_relu": _commit_cast(relu=True),
    "vector_init": _unchanged,  # tags steer no arithmetic the simulator runs
    "vector_intra_slice_tag": _unchanged,
    "vector_final": _unchanged,
    "vector_logic": _binary(arithmetic.logic),
    "vector_fxp": _binary(arithmetic.fxp),
    "vector_fp_binary": _binary(arithmetic.fp_binary),
    "vector_clip": _binary(arithmetic.clip),
    "vector_fp_unary": _elementwise(lambda v, c: arithmetic.fp_unary(parse_op(c["op"]), v)),
    "vector_fxp_to_fp": _elementwise(lambda v, c: dtypes.fxp_to_fp(v, int(c["int_width"])), dtypes.f32),
    "vector_fp_to_fxp": _elementwise(lambda v, c: dtypes.fp_to_fxp(v, int(c["int_width"])), dtypes.i32),
    "vector_narrow_split": _relaid,
    "vector_narrow_trim": _relaid,
    "vector_widen_concat": _relaid,
    "vector_widen_pad": _relaid,
}


def _relayout(values: np.ndarray, src: Mapping, dst: Mapping, broadcast: bool, drop: bool = False) -> np.ndarray:
    index = relayout_index(src.factors, dst.factors, broadcast, drop)
    out = values[:, np.maximum(index, 0)]
    out[:, index < 0] = 0
    return out


def _with_zero(values: np.ndarray) -> np.ndarray:
    """The operand with a trailing zero column: what the plan's padding positions (-1) read."""
    return np.concatenate([values, np.zeros((values.shape[0], 1), dtype=values.dtype)], axis=1)
