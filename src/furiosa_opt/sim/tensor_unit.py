"""One Tensor Unit command: the fetch sequencer reads DM, the engines transform the stream, the commit
sequencer (or a register-file store) writes it back — in every slice at once.

The stream is a [slices, positions] array in the wire order of its `[Time, Packet]` mapping, padding
zero. The sequencers read and write it as strided views of every slice's file (`Memories.load`,
`Memories.store`). Each engine config is numbers: its layouts as live boxes and walks (`walk.py`, written
by stage 2's `compiler/lower/walks.py`), its ops, modes, dtypes and immediates as codes and raw bits
(`vector.codes`, `switch`, `dtypes.DTYPE_CODES`). The engine's effect is a walk (numpy views), an
elementwise conversion or op (`dtypes`, `vector.arithmetic`; the Vector Engine in `vector_engine.py`, the
Switch Engine in `switch.py`), or a fold (`terms`): the arithmetic the CPU backend also uses, reached here
from the binary's numbers, never from a mapping.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import DM_BASE, Buffer, Command, Sequencer, sequencer_loops
from furiosa_opt.configs.layouts import box_size
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.dtypes import DTYPE_CODES, DType, dtype_by_name
from furiosa_opt.sim import switch, vector_engine  # noqa: F401 (they register their stages)
from furiosa_opt.sim.memory import Fault, Loops, Memories
from furiosa_opt.sim.stream import Operand, Stream, Unsupported
from furiosa_opt.sim.walk import box_mask, gather, inner_axes, refined, walked
from furiosa_opt.stages import STAGES, register
from furiosa_opt.terms import fold_terms, fold_walked, reduce_terms, widener
from furiosa_opt.vector.codes import OPS


class TensorUnit:
    def __init__(self, memories: Memories, buffers: dict[str, Buffer]):
        self.memories, self.buffers = memories, buffers

    def run(self, command: Command) -> None:
        """Each engine config in order through its stage's simulator handler (registered with the stage table,
        furiosa_opt/stages.py); the first is the fetch, the last stores the command's output."""
        self.pending: dict = {}  # what the contraction stages gather for `contract_lane`
        stream = None
        for config in command.engines:
            if stream is not None and config.stage not in _ON_DIGITS:
                stream = stream.flat()
            stream = STAGES[config.stage].handler("simulator")(self, stream, config, command)

    # ---- memory side ----

    def fetch(self, command: Command, config: EngineConfig) -> Stream:
        """The fetch sequencer's walk of DM (memory 1) as the stream; padding positions read zero."""
        sequencer = command.fetch
        dtype = dtype_by_name(self.buffers[sequencer.buffer].dtype)
        shape = Stream(np.empty((0, 0)), dtype, config.steps, config.lanes, config.live)
        loops = _loops(sequencer, 1, shape, "fetch", dtype)
        if sequencer.interleave and dtype.bits < 8:
            raise Unsupported(f"a pair-mode fetch of {dtype} (4-bit) tensors")
        bases = sequencer.interleave or [sequencer.base]
        digits = not sequencer.interleave  # a rereading walk stays a view (`Stream`) unless a pair is chosen
        values = [_read(self.memories, "sram", b - DM_BASE, loops, dtype, shape.live, digits) for b in bases]
        return replace(shape, values=_selected(values, sequencer) if sequencer.interleave else values[0])

    def commit(self, stream: Stream, command: Command) -> None:
        """The stream's live positions written where the commit sequencer's walk of DM (memory 0) puts them."""
        sequencer = command.commit
        loops = _loops(sequencer, 0, stream, "commit", stream.dtype)
        _write(self.memories, "sram", sequencer.base - DM_BASE, loops, stream.dtype, stream.values, stream.live)

    def store(self, stream: Stream, command: Command, config: EngineConfig) -> None:
        """A register-file store: the stream walked into the file's layout (the config's `target` box) at
        the buffer's address."""
        buffer = self.buffers[command.outputs[0]]
        values = gather(stream.values, config.walk, config.table, box_size(config.target), box_mask(config.target))
        loops = _contiguous(box_size(config.target), stream.dtype)
        _write(self.memories, buffer.memory, buffer.address, loops, stream.dtype, values, None)

    def operand(self, command: Command, config: EngineConfig, memory: str) -> Operand:
        """The register-file tensor an engine reads (the command's input its config names in `rf`): every
        element the buffer holds."""
        name = command.inputs[config.rf] if 0 <= config.rf < len(command.inputs) else None
        if name is None or self.buffers[name].memory != memory:
            raise Fault(f"`{config.stage}` needs a {memory.upper()} tensor the command reads, its config names "
                        f"input {config.rf} ({name})")  # fmt: skip
        buffer = self.buffers[name]
        dtype = dtype_by_name(buffer.dtype)
        loops = _contiguous(buffer.bytes * 8 // dtype.bits, dtype)
        return Operand(_read(self.memories, memory, buffer.address, loops, dtype, None), dtype)

    def rf_values(self, stream: Stream, config: EngineConfig, command: Command) -> np.ndarray:
        """The VRF tensor the config names, walked into the stream's layout (`rf_walk`)."""
        vrf = self.operand(command, config, "vrf")
        return gather(vrf.values, config.rf_walk, config.rf_table, stream.positions, stream.live)

    def stash_values(self, stream: Stream, config: EngineConfig) -> np.ndarray:
        """What the command's `vector_stash` wrote, walked into the stream's layout (`stash_walk`)."""
        if "stash" not in self.pending:
            raise Fault(f"`{config.stage}` reads the stash before any `vector_stash` of its command wrote it")
        return gather(self.pending.pop("stash"), config.stash_walk, config.stash_table, stream.positions, stream.live)

    # ---- the Contraction Engine ----

    def contract(self, stream: Stream, stage: str, config: EngineConfig, command: Command, pending: dict) -> Stream:
        """`contract_outer` takes the stream and the TRF tensor; `contract_lane` folds them as its config
        says (`fold_terms`), from zero in the terms' order, as upstream's CPU does."""
        if stage == "contract_outer":
            pending.update(lhs=stream, trf=self.operand(command, config, "trf"))
            return stream
        if "lhs" not in pending:
            raise Fault(f"`{stage}` comes before any `contract_outer` in the command's engine configs")
        if stage != "contract_lane":
            return stream
        lhs, trf = pending["lhs"], pending["trf"]
        acc = DTYPE_CODES.value(config.acc)
        live = _term_live(config)
        operands = (lhs.values, trf.values)
        widen = (widener(acc, lhs.dtype), widener(acc, trf.dtype))
        walks = [config.lhs_walk, config.rhs_walk]
        loops = None if config.lhs_table or config.rhs_table else refined(walks, live.shape[1])
        if loops is not None:  # both sides read as views: nothing the size of the terms is copied
            views = [walked(values, side).view(values.dtype) for values, side in zip(operands, loops, strict=True)]
            sums = fold_walked(*views, widen, live, inner_axes(loops[0], live.shape[1]), acc.storage)
        else:
            count, tables = box_size(config.terms), (config.lhs_table, config.rhs_table)
            widened = [w(values) for w, values in zip(widen, operands, strict=True)]
            terms = [gather(v, w, t, count, None) for v, w, t in zip(widened, walks, tables, strict=True)]
            sums = fold_terms(*terms, live, acc.storage)
        out = replace(stream.reshaped(config), dtype=acc, tags=None)
        return replace(out, values=gather(sums, config.walk, config.table, out.positions, out.live))


# ---- the stage handlers: (unit, stream, config, command) -> the stream after the stage ----


_WALKS = (
    "collect",
    "vector_narrow_split",
    "vector_narrow_trim",
    "vector_widen_concat",
    "vector_widen_pad",
    "commit_trim",
)


# the stages that read a stream's values as its digits (`Stream`): walks and the contraction's
_ON_DIGITS = frozenset({*_WALKS, "contract_outer", "contract_packet", "contract_time", "contract_lane"})


@register("simulator", *_WALKS)  # a walk, and nothing else
def _relaid(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command | None = None) -> Stream:
    """The stream (and its tags) walked into the config's `time` and `packet` layout."""
    moved = stream.reshaped(config)
    live = moved.live
    values = gather(stream.values, config.walk, config.table, moved.positions, live)
    tags = None if stream.tags is None else gather(stream.tags, config.walk, config.table, moved.positions, live)
    return replace(moved, values=values, tags=tags)


@register("simulator", "fetch_cast", "fetch_table_lookup")
def _converted(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """The Fetch Adapter's cast or table lookup: each element converted to the config's dtype, in place."""
    target = DTYPE_CODES.value(config.dtype)
    values = STAGES[config.stage].arithmetic(stream.values, stream.dtype, target)
    return replace(stream, values=values, dtype=target)


@register("simulator", "cast")
def _cast(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """The Cast Engine: each element converted, then the stream walked into its new packet."""
    return _relaid(unit, _converted(unit, stream, config, command), config)


@register("simulator", "fetch_zero_point_sub")
def _zero_point_sub(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    target = DTYPE_CODES.value(config.dtype)
    values = STAGES[config.stage].arithmetic(stream.values, config.zero_point, target)
    return replace(stream, values=values, dtype=target)


@register("simulator", "commit_cast", "commit_cast_relu")
def _commit_cast(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    values = STAGES[config.stage].arithmetic(stream.values, config.stage == "commit_cast_relu")
    return replace(stream, values=values, dtype=DTYPE_CODES.value(config.dtype))


@register("simulator", "vector_intra_slice_unzip")
def _unzip(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Pair mode: the group axis moves outermost in time, and tag bit 3 holds each element's group."""
    paired = _relaid(unit, stream, config)
    group = np.repeat(np.arange(2, dtype=np.uint8), paired.values.shape[1] // 2)
    return replace(paired, tags=np.broadcast_to(group << np.uint8(3), paired.values.shape).copy())


@register("simulator", "vector_intra_slice_reduce")
def _intra_slice_reduce(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Each slice folds the reduced digits out of its time steps and packets; the fold reads the slices'
    layout too, since which cells are padding may differ from slice to slice. Each output keeps its last
    tag."""
    return _cluster_reduce(stream, config, keep_tags=True)


@register("simulator", "vector_inter_slice_reduce")
def _inter_slice_reduce(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Each cluster folds the reduced Slice digits across its slices into the output slices; tags clear."""
    return _cluster_reduce(stream, config, keep_tags=False)


def _cluster_reduce(stream: Stream, config: EngineConfig, keep_tags: bool) -> Stream:
    """Each cluster's slices `[in_slice, time, packet]` walked into `[output, reduced]` and folded one term
    at a time in the terms' order (`reduce_terms`); padding of the output holds the identity, as upstream
    leaves it (a Max-reduce's padding is -inf)."""
    per_cluster = RNGD.slices_per_cluster
    clusters = stream.values.reshape(-1, per_cluster, stream.positions)
    source = clusters[:, : config.in_slices].reshape(clusters.shape[0], -1)
    out = stream.reshaped(config)
    target_live = box_mask(config.target)
    read = _term_live(config) & _terms(_cells(config.source), config)[0].astype(bool)
    step, identity = STAGES[config.stage].arithmetic(OPS.value(config.op))
    reduced = reduce_terms(_terms(source, config), read, target_live, step, identity)

    def placed(cells: np.ndarray) -> np.ndarray:
        held = np.zeros((clusters.shape[0], per_cluster, out.positions), dtype=cells.dtype)
        held[:, : config.slices] = cells.reshape(clusters.shape[0], config.slices, -1)
        return held.reshape(stream.values.shape[0], -1)

    tags = None
    if stream.tags is not None:
        held = stream.tags.reshape(clusters.shape)[:, : config.in_slices].reshape(source.shape)
        last = reduce_terms(_terms(held, config), read, target_live, lambda acc, x: x, np.uint8(0))
        tags = placed(last if keep_tags else np.zeros_like(last))
    return replace(out, values=placed(reduced), tags=tags)


def _terms(values: np.ndarray, config: EngineConfig) -> np.ndarray:
    """[batch, outputs, reduced]: the values each output folds, by the config's walk."""
    moved = gather(values, config.walk, config.table, box_size(config.terms), None)
    return moved.reshape(values.shape[0], -1, config.reduced)


def _cells(box: list[int]) -> np.ndarray:
    """[1, positions]: 1 where the layout `box` holds a value."""
    live = box_mask(box)
    return np.ones((1, box_size(box)), np.uint8) if live is None else live[None].astype(np.uint8)


def _term_live(config: EngineConfig) -> np.ndarray:
    """[outputs, reduced]: the terms of the fold that are values (`terms`; a fold skips padding)."""
    return _cells(config.terms)[0].astype(bool).reshape(-1, config.reduced)


@register("simulator", "fetch")
def _fetch(unit: TensorUnit, stream: None, config: EngineConfig, command: Command) -> Stream:
    return unit.fetch(command, config)


@register("simulator", "commit", "commit_view")
def _commit(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> None:
    unit.commit(stream, command)


@register("simulator", "to_trf", "to_vrf")
def _store(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> None:
    unit.store(stream, command, config)


@register("simulator", "contract_outer", "contract_packet", "contract_time", "contract_lane")
def _contract(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    return unit.contract(stream, config.stage, config, command, unit.pending)


@register("simulator", "transpose")
def _transpose(unit: TensorUnit, stream: Stream, config: EngineConfig, command: Command) -> Stream:
    """Unpack the valid lanes, gather `packets_per_col` packets into a row of `in_cols`, stack `in_rows`
    rows, transpose, keep `out_rows` rows and pad each back to a flit — from the engine's parameters."""
    flit = stream.lanes
    rows, columns, kept = config.in_rows, config.packets_per_col, config.out_rows
    x = stream.values.reshape(stream.values.shape[0], -1, rows, columns, flit)[..., : config.valid_size]
    x = x.reshape(*x.shape[:3], -1).transpose(0, 1, 3, 2)[:, :, :kept]
    out = np.zeros((*x.shape[:3], flit), dtype=stream.values.dtype)
    out[..., :rows] = x
    return replace(stream.reshaped(config), values=out.reshape(out.shape[0], -1))


def _per_byte(dtype: DType) -> int:
    """Stream positions one sequencer step reads: two for a 4-bit type (a byte, low nibble first), else one."""
    return 8 // dtype.bits if dtype.bits < 8 else 1


def _loops(sequencer: Sequencer, memory: int, stream: Stream, which: str, dtype: DType) -> Loops:
    """The sequencer's loops in `memory`, which must visit every position of the stream once."""
    sizes, strides = sequencer_loops(sequencer, memory)
    sizes = tuple(max(0, n) for n in sizes)  # a negative size visits nothing, as the address walk did
    positions = stream.positions
    if math.prod(sizes) * _per_byte(dtype) != positions:
        visits = math.prod(sizes) * _per_byte(dtype)
        raise Fault(f"the {which} sequencer visits {visits} positions, the stream has {positions}")
    return sizes, strides


def _contiguous(count: int, dtype: DType) -> Loops:
    """The loop over `count` packed elements from a register file's start."""
    return (count // _per_byte(dtype),), (max(1, dtype.bits // 8),)


def _byte_live(live: np.ndarray | None, dtype: DType) -> np.ndarray | None:
    """Which bytes a walk touches: those holding a live position."""
    return None if live is None else live.reshape(-1, _per_byte(dtype)).any(axis=1)


def _read(
    memories: Memories,
    memory: str,
    start: int,
    loops: Loops,
    dtype: DType,
    live: np.ndarray | None,
    digits: bool = False,
) -> np.ndarray:
    """[slices, positions] values the loops visit (a 4-bit type: each byte's two nibbles, low first);
    positions not `live` read zero. With `digits`, a walk that rereads may come back as its view
    [slices, loop sizes…] (`Stream`)."""
    if dtype.bits >= 8:
        return _as(memories.load(memory, start, loops, dtype.nbytes(1), live, digits), dtype)
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


def _as(raw: np.ndarray, dtype: DType) -> np.ndarray:
    """[slices, positions] values of `raw` [slices, positions, bytes]; a walk's view [slices, loop sizes…,
    bytes] stays a view, [slices, loop sizes…]."""
    if raw.ndim > 3:
        return raw.view(dtype.storage)[..., 0]
    return np.ascontiguousarray(raw).reshape(raw.shape[0], -1).view(dtype.storage)


def _bytes(values: np.ndarray, dtype: DType) -> np.ndarray:
    """[slices, positions · bytes] wire bytes of `values` [slices, positions]."""
    return np.ascontiguousarray(values.astype(dtype.storage, copy=False)).view(np.uint8)
