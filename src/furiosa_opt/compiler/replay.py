"""Replay vISA through the kernel language under the tracer: how hand-written vISA is verified.

Each opcode calls the language method that records it, so a parsed program meets exactly the checks a
traced one does, and the types it writes are compared with the types the ops produce. A stage's replay is
registered with the stage table (`stages.register`): most stages replay as they are called, their method
with the attributes the table declares in order; the others (the Vector Engine's operand ops, `begin`) are
written out here. The ops that are not stages are `MEMORY_REPLAY`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from itertools import takewhile

from furiosa_opt.backend import using
from furiosa_opt.backend.trace import Tracer, symbolic_argument, traced_axes
from furiosa_opt.compiler import visa
from furiosa_opt.diagnostics import FuriosaOptError, Location, VerifyError
from furiosa_opt.dtypes import dtype_by_name, from_code
from furiosa_opt.lang import loops
from furiosa_opt.lang.pair import VectorPair
from furiosa_opt.lang.tensors import DmTensor, HbmTensor, HbmTensorView, HbmTensorViewMut
from furiosa_opt.mapping import Axis
from furiosa_opt.mapping.factors import SymAtom
from furiosa_opt.scalar import Scalar
from furiosa_opt.stages import STAGES, register, registered
from furiosa_opt.vector.ops import RF, Branched, TagGuard

A = dict[str, object]
ARGUMENT_KINDS = {"hbm": HbmTensor, "view": HbmTensorView, "view_mut": HbmTensorViewMut}


def _axis(selector) -> Axis:
    """The axis of a one-axis mapping attribute (`[I]`)."""
    (factor,) = selector.factors
    assert isinstance(factor.atom, SymAtom)
    return Axis(factor.atom.name, factor.atom.n)


def _vector_operand(o: list, value: object) -> object:
    """An operand as the op's text gives it, with the VRF tensor the text lists as an operand in place of
    its marker (`None`, or `RF` inside a pair or a `Branched`)."""
    if len(o) < 2:
        return value
    if value is None:
        return o[1]
    if isinstance(value, tuple):
        return (o[1], value[1])
    if isinstance(value, Branched) and value.port:
        payload = value.port[1]
        return value.with_port((o[1], payload[1]) if isinstance(payload, tuple) else o[1])
    return value


def _groups(o: list, operand: object) -> tuple:
    """A pair op's per-group operands from its `Branched` (guarded by the group bit); `None` skips."""
    found = [None, None]
    for guard, value in operand.slots if operand is not None else ():
        tensor = o[1] if len(o) > 1 else None
        if value is RF:
            value = tensor
        elif isinstance(value, tuple) and value[0] is RF:
            value = (tensor, value[1])
        found[0 if guard == TagGuard.group(0) else 1] = value
    return tuple(found)


@register("replay", "vector_logic", "vector_fxp", "vector_fp_binary", "vector_clip")
def _vector_binary(name: str, o: list, a: A) -> object:
    if isinstance(o[0], VectorPair):
        return getattr(o[0], f"{name}_with_mode")(a["op"], a["mode"], *_groups(o, a["operand"]))
    return getattr(o[0], name)(a["op"], _vector_operand(o, a["operand"]), a["mode"])


@register("replay", "vector_fp_unary")
def _fp_unary(name: str, o: list, a: A) -> object:
    if isinstance(o[0], VectorPair):
        guard = a["guard"]
        return o[0].vector_fp_unary(a["op"], guard in (None, TagGuard.group(0)), guard in (None, TagGuard.group(1)))
    return o[0].vector_fp_unary(a["op"] if a["guard"] is None else (a["guard"], a["op"]))


@register("replay", "vector_fp_ternary")
def _fp_ternary(name: str, o: list, a: A) -> object:
    if isinstance(o[0], VectorPair):
        return o[0].vector_fp_ternary_with_mode(a["op"], a["mode"], *_groups(o, a["operand"]))
    return o[0].vector_fp_ternary_with_mode(a["op"], a["mode"], _vector_operand(o, a["operand"]))


@register("replay", "vector_logic_zip", "vector_fxp_zip", "vector_fp_zip", "vector_clip_zip")
def _zip(name: str, o: list, a: A) -> object:
    return getattr(o[0], f"{name}_with_mode")(a["op"], a["mode"])


@register("replay", "vector_fp_div")
def _fp_div(name: str, o: list, a: A) -> object:
    if isinstance(o[0], VectorPair):
        return o[0].vector_fp_div_with_mode(a["mode"], *_groups(o, a["operand"]))
    return o[0].vector_fp_div_with_mode(a["mode"], _vector_operand(o, a["operand"]))


@register("replay", "begin")
def _begin(name: str, o: list, a: A) -> object:
    return a["ctx"].begin(o[0])


@register("replay", "begin_interleaved")
def _begin_interleaved(name: str, o: list, a: A) -> object:
    return a["ctx"].begin_interleaved(o[0], o[1], _axis(a["axis"]))


def _as_called(name: str, o: list, a: A) -> object:
    """A stage the language records as it is called: its method on the first operand, with the other
    operands, then the attributes the table declares for it, in order."""
    return getattr(o[0], name)(*o[1:], *(a[key] for key in STAGES[name].attrs))


for _stage in STAGES.keys() - registered("replay"):  # every other stage replays as it is called
    register("replay", _stage)(_as_called)


# The vISA ops that are not stages (memory, DMA, device-loop regions), replayed through the language.
MEMORY_REPLAY: dict[str, Callable[[list, A], object]] = {
    "view": lambda o, a: o[0].view(),
    "view_mut": lambda o, a: o[0].view_mut(),
    "tile": lambda o, a: o[0].tile(a["start"], a["index"], a["length"], a["element"]),
    "chip_tile": lambda o, a: o[0].chip_tile(a["start"], a["index"], a["length"], a["chip"]),
    "cluster_tile": lambda o, a: o[0].cluster_tile(a["start"], a["index"], a["length"], a["cluster"]),
    "slice_tile": lambda o, a: o[0].slice_tile(a["start"], a["index"], a["length"], a["slice"]),
    "pad": lambda o, a: o[0].pad(a["element"]),
    "unpad": lambda o, a: o[0].unpad(a["element"]),
    "reshape": lambda o, a: o[0].reshape(*a.values()),
    "hbm_new": lambda o, a: HbmTensor.new(a["dtype"], a["chip"], a["element"]),
    "dm_new": lambda o, a: DmTensor.new(a["dtype"], a["chip"], a["cluster"], a["slice"], a["element"]),
    "to_dm": lambda o, a: o[0].to_dm(a["ctx"], a["cluster"], a["slice"], a["element"]),
    "to_hbm": lambda o, a: o[0].to_hbm(a["ctx"], a["element"]),
    "hbm_to_hbm": lambda o, a: o[0].to_hbm(a["ctx"], a["element"]),
    "to_dm_view": lambda o, a: o[0].to_dm_view(a["ctx"], o[1]),
    "to_hbm_view": lambda o, a: o[0].to_hbm_view(a["ctx"], o[1]),
    "loop": lambda o, a: loops.begin_loop(a["count"]),
    "carried": lambda o, a: loops.carried(o[0]),
    "end_loop": lambda o, a: loops.end_loop(*o),
    "if": lambda o, a: loops.begin_if(a["cond"]),
    "end_if": lambda o, a: loops.end_if(),
    "to_dm_pcopy": lambda o, a: o[0].to_dm_pcopy(a["ctx"], a["slice"], a["element"]),
    "to_dm_view_pcopy": lambda o, a: o[0].to_dm_view_pcopy(a["ctx"], o[1]),
    "memset": lambda o, a: o[0].memset(from_code(a["code"], o[0].dtype), a["ctx"]),
    "dma_gather_scaled": lambda o, a: o[0].dma_gather_scaled(o[1], a["cluster"], a["slice"], a["element"]),
    "dma_gather_unscaled": lambda o, a: o[0].dma_gather_unscaled(o[1], a["cluster"], a["slice"], a["element"]),
    "dma_scatter": lambda o, a: o[0].dma_scatter(o[1], o[2], a["key"]),
    "dma_scatter_unscaled": lambda o, a: o[0].dma_scatter_unscaled(o[1], o[2], a["key"]),
}


def replay(kernel: visa.Kernel) -> visa.Kernel:
    """Re-trace a parsed kernel; a refused op raises with the op's own `// file:line` location."""
    return replay_objects(kernel)[0]


def replay_objects(
    kernel: visa.Kernel, unroll: bool = False, keep: frozenset[int] = frozenset(), origins: list | None = None
) -> tuple[visa.Kernel, dict[str, object]]:
    """`replay`, also giving the language object behind each value (views know their windows). With
    `unroll`, device loops run: each `loop` region is replayed once per index value (bound to an int) and
    each `if` region when its condition holds, so the result is straight-line — except the loops whose
    `loop` op is in `keep` (by `id`), which are re-traced as regions (what stage 2 lowers). `origins`, if
    given, receives the index in `kernel.ops` of the op behind each op of the result."""
    check_regions(kernel.ops)
    tracer = Tracer(collect=False, locate=False)  # every op takes its location from the text
    objects: dict[str, object] = {}
    with using(tracer):
        args = []
        for arg in kernel.args:
            cls = ARGUMENT_KINDS.get(arg.type.kind)
            if cls is None:
                raise VerifyError(
                    "visa-argument", f"kernel arguments are hbm tensors or views, `{arg.name}` is {arg.type}"
                )
            objects[arg.name] = symbolic_argument(cls, dtype_by_name(arg.type.dtype), arg.type.params)
            args.append(tracer.name(objects[arg.name]))
        sources: list[visa.Op] = []  # the text's op behind each recorded op
        _run(kernel.ops, objects, tracer, sources, unroll, keep)
    ops = tuple(replace(new, loc=old.loc) for new, old in zip(tracer.ops, sources, strict=True))
    if origins is not None:
        index = {id(op): i for i, op in enumerate(kernel.ops)}
        origins.extend(index[id(op)] for op in sources)
    returns = tuple(tracer.names[id(objects[name])].name for name in kernel.returns)
    rebuilt = visa.Kernel(
        kernel.identity, kernel.chip, kernel.pe, traced_axes(tracer), tuple(args), ops, returns, paths=kernel.paths
    )
    by_name = {tracer.names[id(obj)].name: obj for obj in tracer.alive}  # every iteration's, when unrolled
    return rebuilt, by_name


REGIONS = {"loop": "end_loop", "if": "end_if"}
CLOSERS = frozenset(REGIONS.values())


def _run(
    ops: tuple[visa.Op, ...], objects: dict, tracer: Tracer, sources: list[visa.Op], unroll: bool, keep: frozenset[int]
) -> None:
    at = 0
    while at < len(ops):
        op = ops[at]
        if unroll and id(op) in keep:  # a kept loop: its region as it is, `if`s included
            end = region_end(ops, at)
            _run(ops[at : end + 1], objects, tracer, sources, False, keep)
            at = end + 1
            continue
        if unroll and op.opcode in REGIONS:
            end = region_end(ops, at)
            body = ops[at + 1 : end]
            if op.opcode == "loop":
                heads = list(takewhile(lambda head: head.opcode == "carried", body))  # at the body's start
                back = ops[end].operands
                for index in range(op.attr("count")):
                    objects[op.results[0].name] = index
                    for head, edge in zip(heads, back, strict=True):  # pass 0 reads the value before the loop
                        objects[head.results[0].name] = objects[edge if index else head.operands[0]]
                    _run(body[len(heads) :], objects, tracer, sources, unroll, keep)
            elif _bound(op.attr("cond"), objects, op):
                _run(body, objects, tracer, sources, unroll, keep)
            at = end + 1
            continue
        _replay(op, objects, tracer)
        sources.append(op)
        at += 1


def region_end(ops: tuple[visa.Op, ...], at: int) -> int:
    """The index of the op that closes the region opened at `at` (in ops `check_regions` accepted)."""
    depth = 0
    for end in range(at, len(ops)):
        depth += (ops[end].opcode in REGIONS) - (ops[end].opcode in CLOSERS)
        if depth == 0:
            return end
    raise VerifyError(
        "visa-region", f"`{ops[at].opcode}` is never closed by `{REGIONS[ops[at].opcode]}`", location=_where(ops[at])
    )


def check_regions(ops: tuple[visa.Op, ...]) -> None:
    """Regions nest: each closer closes the innermost open region, of its own kind, and every region is
    closed; an `end_loop` names one value per `carried` op at its loop body's start. Hand-written or
    damaged text that breaks this is `visa-region` at the op, before anything is replayed or lowered."""
    opened: list[int] = []  # the indices of the regions open, innermost last
    for end, op in enumerate(ops):
        if op.opcode in REGIONS:
            opened.append(end)
        elif op.opcode in CLOSERS:
            if not opened:
                raise VerifyError("visa-region", f"`{op.opcode}` closes no open region", location=_where(op))
            _check_closer(ops, opened.pop(), end)
    if opened:
        region_end(ops, opened[-1])  # refuses the innermost region left open


def _check_closer(ops: tuple[visa.Op, ...], start: int, end: int) -> None:
    opener, closer = ops[start], ops[end]
    line = opener.loc.line if opener.loc else "?"
    if closer.opcode != REGIONS[opener.opcode]:
        message = (
            f"`{closer.opcode}` closes the `{opener.opcode}` of line {line}, which `{REGIONS[opener.opcode]}` closes"
        )
        raise VerifyError("visa-region", message, location=_where(closer))
    if opener.opcode == "loop":
        carried = sum(1 for _ in takewhile(lambda op: op.opcode == "carried", ops[start + 1 : end]))
        if len(closer.operands) != carried:
            message = f"`end_loop` names {len(closer.operands)} value(s), the loop of line {line} carries {carried}"
            raise VerifyError("visa-region", message, location=_where(closer))


def _where(op: visa.Op) -> Location | None:
    return Location(op.loc.file, op.loc.line, op.opcode) if op.loc else None


def _bound(value: object, objects: dict, op: visa.Op) -> object:
    """An attribute with its runtime scalars' loop indices bound to what they stand for now: an int
    (unrolling) or the replayed loop's index (re-tracing)."""
    if not isinstance(value, Scalar):
        return value
    try:
        return value.evaluate({name: objects[name] for name in value.indices()})
    except KeyError as error:
        where = Location(op.loc.file, op.loc.line, op.opcode) if op.loc else None
        raise VerifyError(
            "visa-operands", f"`{op.opcode}` reads loop index {error}, not in scope", location=where
        ) from None


def _replay(op: visa.Op, objects: dict[str, object], tracer: Tracer) -> None:
    where = Location(op.loc.file, op.loc.line, op.opcode) if op.loc else None
    if op.opcode in STAGES:
        stage = STAGES[op.opcode].handler("replay")
        rule = lambda o, a: stage(op.opcode, o, a)  # noqa: E731
    elif op.opcode in MEMORY_REPLAY:
        rule = MEMORY_REPLAY[op.opcode]
    else:
        raise VerifyError("visa-opcode", f"unknown vISA op `{op.opcode}`", location=where)
    try:
        attrs = {key: _bound(value, objects, op) for key, value in op.attrs}
        result = rule([objects[name] for name in op.operands], attrs)
    except FuriosaOptError as error:
        error.location = where
        raise
    except AttributeError:  # the op's method is not one of this operand's
        kinds = ", ".join(type(objects[name]).__name__ for name in op.operands if name in objects) or "no operand"
        raise VerifyError("visa-operands", f"`{op.opcode}` does not apply to {kinds}", location=where) from None
    except (KeyError, IndexError, TypeError) as error:
        raise VerifyError(
            "visa-operands", f"`{op.opcode}` is missing an operand or attribute: {error}", location=where
        ) from None
    produced = tracer.ops[-1].results
    if tuple(v.type for v in produced) != tuple(v.type for v in op.results):
        got = ", ".join(str(v.type) for v in produced) or "nothing"
        raise VerifyError(
            "visa-type",
            f"`{op.opcode}` produces {got}, the text says {', '.join(str(v.type) for v in op.results) or 'nothing'}",
            location=where,
        )
    for value in op.results:
        objects[value.name] = result
