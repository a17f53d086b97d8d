"""One Tensor Unit command: the fetch sequencer reads DM, the engines transform the stream, the commit
sequencer (or a register-file store) writes it back — in every slice at once.

The stream is a [slices, positions] array in the wire order of its `[Time, Packet]` mapping, padding
zero. The sequencers read and write it as strided views of every slice's file (`Memories.load`,
`Memories.store`). Each engine config names its stage, prints its mappings as vISA does and gives its
other values as numbers (codes of `vector.codes`, `switch`, `dtypes.DTYPE_CODES`); the engine's effect is
a relayout by logical index (numpy views, `mapping.views`), an elementwise conversion or op (`dtypes`,
`vector.arithmetic`; the Vector Engine's ops in `vector_engine.py`, the Switch Engine in `switch.py`), or
the contraction fold (`fold`) — the arithmetic the CPU backend also uses, reached here from the binary's
configs instead of from the kernel language.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import DM_BASE, Buffer, Command, Sequencer, sequencer_loops
from furiosa_opt.dtypes import DTYPE_CODES, DType, dtype_by_name
from furiosa_opt.fold import contraction_plan, fold, fold_through_views, fold_views, reduce_fold, widener
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.factors import size
from furiosa_opt.mapping.parse import parse
from furiosa_opt.mapping.relayout import check_relayout, live_mask, relaid
from furiosa_opt.sim import vector_engine
from furiosa_opt.sim.memory import Fault, Loops, Memories
from furiosa_opt.sim.stream import Operand, Stream, Unsupported
from furiosa_opt.sim.switch import route
from furiosa_opt.vector import arithmetic
from furiosa_opt.vector.codes import OPS
from furiosa_opt.verify.contraction import accumulator

ONE = "[1]"


def mapping_of(text: str, axes: dict[str, object]) -> Mapping:
    """A mapping as the EDF prints it (in an engine config `[…]`, in a buffer's levels bare)."""
    return parse(text[1:-1] if text.startswith("[") else text, axes)


class TensorUnit:
    def __init__(self, memories: Memories, buffers: dict[str, Buffer], axes: dict[str, object]):
        self.memories, self.buffers, self.axes = memories, buffers, axes

    def mapping(self, text: str) -> Mapping:
        return mapping_of(text, self.axes)

    def run(self, command: Command) -> None:
        """Each engine config in order through its stage's handler (`HANDLERS`, one per stage of the table
        in furiosa_opt/stages.py); the first is the fetch, the last stores the command's output."""
        self.pending: dict = {}  # what the contraction stages gather for `contract_lane`
        stream = None
        for config in command.engines:
            handler = HANDLERS.get(config["stage"])
            if handler is None:
                raise Unsupported(f"the simulator does not execute the `{config['stage']}` stage yet")
            stream = handler(self, stream, config, command)

    # ---- memory side ----

    def fetch(self, command: Command, config: dict) -> Stream:
        """The fetch sequencer's walk of DM (memory 1) as the stream; padding positions read zero."""
        sequencer = command.fetch
        dtype = dtype_by_name(self.buffers[sequencer.buffer].dtype)
        time, packet = self.mapping(config["time"]), self.mapping(config["packet"])
        layout = pair(time, packet)
        check_relayout(pair(self.mapping(ONE), self.mapping(config["element"])).factors, layout.factors, True)
        loops = _loops(sequencer, 1, layout, "fetch", dtype)
        if sequencer.interleave and dtype.bits < 8:
            raise Unsupported(f"a pair-mode fetch of {dtype} (4-bit) tensors")
        bases = sequencer.interleave or [sequencer.base]
        values = [_read(self.memories, "sram", b - DM_BASE, loops, dtype, _live(layout)) for b in bases]
        return Stream(_selected(values, sequencer) if sequencer.interleave else values[0], dtype, time, packet)

    def commit(self, stream: Stream, command: Command) -> None:
        """The stream's live positions written where the commit sequencer's walk of DM (memory 0) puts them."""
        sequencer = command.commit
        loops = _loops(sequencer, 0, stream.layout, "commit", stream.dtype)
        _write(
            self.memories, "sram", sequencer.base - DM_BASE, loops, stream.dtype, stream.values, _live(stream.layout)
        )

    def store(self, stream: Stream, command: Command, target: Mapping) -> None:
        """A register-file store: the stream relaid into the file's layout at the buffer's address."""
        buffer = self.buffers[command.outputs[0]]
        values = relaid(stream.values, stream.layout.factors, target.factors, broadcast=False)
        loops = _contiguous(target.size, stream.dtype)
        _write(self.memories, buffer.memory, buffer.address, loops, stream.dtype, values, None)

    def operand(self, command: Command, config: dict, memory: str) -> Operand:
        """The register-file tensor an engine reads (the buffer its config names in `rf`), from the
        buffer's levels."""
        name = config.get("rf")
        if name not in command.inputs or self.buffers[name].memory != memory:
            raise Fault(
                f"`{config['stage']}` needs a {memory.upper()} tensor the command reads, its config names {name}"
            )
        buffer = self.buffers[name]
        dtype = dtype_by_name(buffer.dtype)
        levels = tuple(self.mapping(level) for level in buffer.levels[3:])
        loops = _contiguous(pair(*levels).size, dtype)
        return Operand(_read(self.memories, memory, buffer.address, loops, dtype, None), dtype, levels)

    # ---- the Contraction Engine ----

    def contract(self, stream: Stream, stage: str, config: dict, command: Command, pending: dict) -> Stream:
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
        acc = accumulator(lhs.dtype, trf.dtype)
        widen = widener(acc, lhs.dtype)
        for operand in (lhs.layout, trf.layout):
            check_relayout(operand.factors, pre_reduce.factors, True, True)
        through_views = fold_views(lhs.layout.factors, trf.layout.factors, pre_reduce.factors, reduced.factors)
        if through_views is not None:
            values = fold_through_views(through_views, widen(lhs.values), widen(trf.values), acc.storage)
        else:  # composites or ragged cuts: the operand positions of every term as index arrays
            plan = contraction_plan(lhs.layout.factors, trf.layout.factors, pre_reduce.factors, reduced.factors)
            values = fold(_with_zero(widen(lhs.values)), plan.lhs, _with_zero(widen(trf.values)), plan.rhs, plan,
                          size(reduced.factors), acc.storage)  # fmt: skip
        time, packet = self.mapping(config["time"]), self.mapping(config["packet"])
        return Stream(relaid(values, reduced.factors, pair(time, packet).factors, False), acc, time, packet)


# ---- the stage handlers: (unit, stream, config, command) -> the stream after the stage ----


def _relaid(
    unit: TensorUnit, stream: Stream, config: dict, command: Command | None = None, drop: bool = False
) -> Stream:
    """The stream relaid out over the config's time (if it names one; in pair mode a group's, under the
    group axis) and packet."""
    time = unit.mapping(config["time"]) if "time" in config else stream.time
    if stream.group_axis is not None and "time" in config:
        time = pair(stream.group_axis, time)
    packet = unit.mapping(config["packet"])
    source, target = stream.layout.factors, pair(time, packet).factors
    values = relaid(stream.values, source, target, False, drop)
    tags = None if stream.tags is None else relaid(stream.tags, source, target, False, drop)
    return replace(stream, values=values, time=time, packet=packet, tags=tags)


def _cast(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    target = DTYPE_CODES.value(config["dtype"])
    converted = replace(stream, values=dtypes.convert(stream.values, stream.dtype, target), dtype=target)
    return _relaid(unit, converted, config) if "packet" in config else converted


def _table_lookup(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    target = DTYPE_CODES.value(config["dtype"])
    return replace(stream, values=dtypes.table_lookup(stream.values, stream.dtype, target), dtype=target)


def _zero_point_sub(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    target = DTYPE_CODES.value(config["dtype"])
    values = (stream.values.astype(np.int32) - config["zero_point"]).astype(target.storage)
    return replace(stream, values=values, dtype=target)


def _commit_cast(relu: bool) -> Callable:
    convert = dtypes.bf16_from_f32_relu_hw if relu else dtypes.bf16_from_f32_hw

    def stage(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
        return replace(stream, values=convert(stream.values), dtype=DTYPE_CODES.value(config["dtype"]))

    return stage


def _unzip(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    """Pair mode: the group axis moves outermost in time, and tag bit 3 holds each element's group."""
    axis, split = unit.mapping(config["axis"]), unit.mapping(config["split_time"])
    time = pair(axis, split)
    values = relaid(stream.values, stream.layout.factors, pair(time, stream.packet).factors, False)
    group = np.repeat(np.arange(2, dtype=np.uint8), values.shape[1] // 2)
    tags = np.broadcast_to(group << np.uint8(3), values.shape).copy()
    return replace(stream, values=values, time=time, tags=tags, group_axis=axis)


def _intra_slice_reduce(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    """Each slice folds the reduced axis out of its time steps and packets (`fold.reduce_fold`). The fold
    reads the slices' layout too: which cells are padding may differ from slice to slice."""
    slices = unit.mapping(config["in_slice"])
    time, packet = unit.mapping(config["time"]), unit.mapping(config["packet"])
    return _cluster_reduce(stream, config, slices, slices, time, packet, broadcast=False)


def _inter_slice_reduce(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    """Each cluster folds the reduced Slice axes across its slices into the output slices."""
    in_slice, out_slice = unit.mapping(config["in_slice"]), unit.mapping(config["slice"])
    return _cluster_reduce(stream, config, in_slice, out_slice, unit.mapping(config["time"]), stream.packet, True)


def _cluster_reduce(
    stream: Stream, config: dict, in_slice: Mapping, out_slice: Mapping, time: Mapping, packet: Mapping, broadcast: bool
) -> Stream:
    """The stream of each cluster's slices `[in_slice, time, packet]` folded into `[out_slice, time, packet]`."""
    per_cluster = RNGD.slices_per_cluster
    clusters = stream.values.reshape(-1, per_cluster, stream.layout.size)
    source = clusters[:, : in_slice.size].reshape(clusters.shape[0], -1)
    target = pair(out_slice, time, packet)
    step, identity = arithmetic.reducer(OPS.value(config["op"]))
    whole = pair(in_slice, stream.time, stream.packet)  # one pair: a composite may span slice and time
    reduced = reduce_fold(source, whole.factors, target.factors, step, identity, broadcast)

    def placed(cells: np.ndarray) -> np.ndarray:
        out = np.zeros((clusters.shape[0], per_cluster, target.size // out_slice.size), dtype=cells.dtype)
        out[:, : out_slice.size] = cells.reshape(clusters.shape[0], out_slice.size, -1)
        return out.reshape(stream.values.shape[0], -1)

    tags = None
    if stream.tags is not None:  # an intra-slice reduce keeps each output's last tag; the inter-slice one clears them
        held = stream.tags.reshape(clusters.shape)[:, : in_slice.size].reshape(clusters.shape[0], -1)
        last = reduce_fold(held, whole.factors, target.factors, lambda acc, x: x, np.uint8(0), broadcast)
        tags = placed(last if not broadcast else np.zeros_like(last))
    return replace(stream, values=placed(reduced), time=time, packet=packet, tags=tags)


def _fetch(unit: TensorUnit, stream: None, config: dict, command: Command) -> Stream:
    return unit.fetch(command, config)


def _commit(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> None:
    unit.commit(stream, command)


def _to_trf(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> None:
    unit.store(stream, command, pair(unit.mapping(config["lane"]), unit.mapping(config["element"])))


def _to_vrf(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> None:
    unit.store(stream, command, unit.mapping(config["element"]))


def _contract(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    return unit.contract(stream, config["stage"], config, command, unit.pending)


def _transpose(unit: TensorUnit, stream: Stream, config: dict, command: Command) -> Stream:
    """Unpack the valid lanes, gather `packets_per_col` packets into a row of `in_cols`, stack `in_rows`
    rows, transpose, keep `out_rows` rows and pad each back to a flit — from the engine's parameters."""
    flit = stream.packet.size
    rows, columns, kept = config["in_rows"], config["packets_per_col"], config["out_rows"]
    x = stream.values.reshape(stream.values.shape[0], -1, rows, columns, flit)[..., : config["valid_size"]]
    x = x.reshape(*x.shape[:3], -1).transpose(0, 1, 3, 2)[:, :, :kept]
    out = np.zeros((*x.shape[:3], flit), dtype=stream.values.dtype)
    out[..., :rows] = x
    time, packet = unit.mapping(config["time"]), unit.mapping(config["packet"])
    return replace(stream, values=out.reshape(out.shape[0], -1), time=time, packet=packet)


HANDLERS: dict[str, Callable] = {  # one per stage with an engine (furiosa_opt/stages.py)
    "fetch": _fetch,
    "fetch_cast": _cast,
    "fetch_table_lookup": _table_lookup,
    "fetch_zero_point_sub": _zero_point_sub,
    "to_trf": _to_trf,
    "to_vrf": _to_vrf,
    "contract_outer": _contract,
    "contract_packet": _contract,
    "contract_time": _contract,
    "contract_lane": _contract,
    "commit": _commit,
    "commit_view": _commit,
    "switch": route,
    "collect": _relaid,
    "transpose": _transpose,
    "cast": _cast,
    "commit_trim": partial(_relaid, drop=True),
    "commit_cast": _commit_cast(relu=False),
    "commit_cast_relu": _commit_cast(relu=True),
    "vector_intra_slice_unzip": _unzip,
    "vector_intra_slice_reduce": _intra_slice_reduce,
    "vector_inter_slice_reduce": _inter_slice_reduce,
    "vector_narrow_split": _relaid,
    "vector_narrow_trim": _relaid,
    "vector_widen_concat": _relaid,
    "vector_widen_pad": _relaid,
    **vector_engine.HANDLERS,
}


def _per_byte(dtype: DType) -> int:
    """Stream positions one sequencer step reads: two for a 4-bit type (a byte, low nibble first), else one."""
    return 8 // dtype.bits if dtype.bits < 8 else 1


def _loops(sequencer: Sequencer, memory: int, layout: Mapping, which: str, dtype: DType) -> Loops:
    """The sequencer's loops in `memory`, which must visit every position of the stream once."""
    sizes, strides = sequencer_loops(sequencer, memory)
    sizes = tuple(max(0, n) for n in sizes)  # a negative size visits nothing, as the address walk did
    if math.prod(sizes) * _per_byte(dtype) != layout.size:
        visits = math.prod(sizes) * _per_byte(dtype)
        raise Fault(f"the {which} sequencer visits {visits} positions, the stream has {layout.size}")
    return sizes, strides


def _contiguous(count: int, dtype: DType) -> Loops:
    """The loop over `count` packed elements from a register file's start."""
    return (count // _per_byte(dtype),), (max(1, dtype.bits // 8),)


def _byte_live(live: np.ndarray | None, dtype: DType) -> np.ndarray | None:
    """Which bytes a walk touches: those holding a live position."""
    return None if live is None else live.reshape(-1, _per_byte(dtype)).any(axis=1)


def _read(memories: Memories, memory: str, start: int, loops: Loops, dtype: DType, live: np.ndarray | None):
    """[slices, positions] values the loops visit (a 4-bit type: each byte's two nibbles, low first);
    positions not `live` read zero."""
    if dtype.bits >= 8:
        return _as(memories.load(memory, start, loops, dtype.nbytes(1), live), dtype)
    raw = memories.load(memory, start, loops, 1, _byte_live(live, dtype))
    values = dtypes.unpack_nibbles(raw.reshape(raw.shape[0], -1), dtype)
    if live is not None:
        values[:, ~live] = 0
    return values


def _write(
    memories: Memories, memory: str, start: int, loops: Loops, dtype: DType, values: np.ndarray, live: np.ndarray | None
) -> None:
    """Store `values` [slices, positions] where the loops put them, only the `live` positions. A byte
    holding one live 4-bit position keeps its other nibble (read, merged, written back)."""
    if dtype.bits >= 8:
        unit = dtype.nbytes(1)
        memories.store(memory, start, loops, unit, _bytes(values, dtype).reshape(values.shape[0], -1, unit), live)
        return
    touched = _byte_live(live, dtype)
    if live is not None:
        values = np.where(
            live,
            values,
            _read(
                memories, memory, start, loops, dtype, None if touched.all() else np.repeat(touched, _per_byte(dtype))
            ),
        )
    packed = dtypes.pack_nibbles(values, dtype)
    memories.store(memory, start, loops, 1, packed.reshape(*packed.shape, 1), touched)


def _selected(values: list[np.ndarray], sequencer: Sequencer) -> np.ndarray:
    """A pair-mode fetch: at each position the value of the tensor its selector loops (memory 0) pick."""
    sizes, strides = sequencer_loops(sequencer, 0)
    pick = np.zeros([1] * len(sizes), dtype=np.int64)
    for i, (n, stride) in enumerate(zip(sizes, strides, strict=True)):
        if stride:  # a selector loop: this axis of the walk picks the tensor
            pick = pick + np.arange(n).reshape([n if j == i else 1 for j in range(len(sizes))]) * stride
    shape = (values[0].shape[0], *sizes)
    chosen = np.choose(np.broadcast_to(pick, sizes), [v.reshape(shape) for v in values])
    return chosen.reshape(values[0].shape)


def _live(layout: Mapping) -> np.ndarray | None:
    """Which positions of the layout hold a value (None: all do)."""
    live = live_mask(layout.factors)
    return None if live.all() else live


def _as(raw: np.ndarray, dtype: DType) -> np.ndarray:
    """[slices, positions] values of `raw` [slices, positions, bytes]."""
    return np.ascontiguousarray(raw).reshape(raw.shape[0], -1).view(dtype.storage)


def _bytes(values: np.ndarray, dtype: DType) -> np.ndarray:
    """[slices, positions · bytes] wire bytes of `values` [slices, positions]."""
    return np.ascontiguousarray(values.astype(dtype.storage, copy=False)).view(np.uint8)


def _with_zero(values: np.ndarray) -> np.ndarray:
    """The operand with a trailing zero column: what the plan's padding positions (-1) read."""
    return np.concatenate([values, np.zeros((values.shape[0], 1), dtype=values.dtype)], axis=1)
