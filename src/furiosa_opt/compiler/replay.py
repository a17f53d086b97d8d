"""Replay vISA through the kernel language under the tracer: how hand-written vISA is verified.

Each opcode calls the language method that records it, so a parsed program meets exactly the checks a
traced one does, and the types it writes are compared with the types the ops produce."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from furiosa_opt.backend import using
from furiosa_opt.backend.trace import Tracer, _axes, symbolic_argument
from furiosa_opt.compiler import visa
from furiosa_opt.diagnostics import FuriosaOptError, Location, VerifyError
from furiosa_opt.dtypes import dtype_by_name
from furiosa_opt.lang.tensors import DmTensor, HbmTensor, HbmTensorView, HbmTensorViewMut
from furiosa_opt.vector.ops import Branched

A = dict[str, object]
ARGUMENT_KINDS = {"hbm": HbmTensor, "view": HbmTensorView, "view_mut": HbmTensorViewMut}


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


def _vector_binary(name: str) -> Callable:
    return lambda o, a: getattr(o[0], name)(a["op"], _vector_operand(o, a["operand"]), a["mode"])


REPLAY: dict[str, Callable[[list, A], object]] = {
    "view": lambda o, a: o[0].view(),
    "view_mut": lambda o, a: o[0].view_mut(),
    "tile": lambda o, a: o[0].tile(a["start"], a["index"], a["length"], a["element"]),
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
    "begin": lambda o, a: a["ctx"].begin(o[0]),
    "fetch": lambda o, a: o[0].fetch(a["time"], a["packet"]),
    "fetch_cast": lambda o, a: o[0].fetch_cast(a["dtype"]),
    "switch": lambda o, a: o[0].switch(a["config"], a["slice"], a["time"]),
    "collect": lambda o, a: o[0].collect(a["time"], a["packet"]),
    "to_trf": lambda o, a: o[0].to_trf(a["lane"], a["element"]),
    "to_vrf": lambda o, a: o[0].to_vrf(a["element"]),
    "contract_outer": lambda o, a: o[0].contract_outer(o[1], a["time"], a["packet"]),
    "contract_packet": lambda o, a: o[0].contract_packet(a["packet"]),
    "contract_time": lambda o, a: o[0].contract_time(a["time"]),
    "contract_lane": lambda o, a: o[0].contract_lane(a["mode"], a["time"], a["packet"]),
    "cast": lambda o, a: o[0].cast(a["dtype"], a["packet"]),
    "transpose": lambda o, a: o[0].transpose(a["time"], a["packet"]),
    "commit_trim": lambda o, a: o[0].commit_trim(a["packet"]),
    "commit_cast": lambda o, a: o[0].commit_cast(a["dtype"]),
    "commit_cast_relu": lambda o, a: o[0].commit_cast_relu(a["dtype"]),
    "commit": lambda o, a: o[0].commit(a["element"]),
    "commit_view": lambda o, a: o[0].commit_view(o[1]),
    "vector_init": lambda o, a: o[0].vector_init(),
    "vector_intra_slice_tag": lambda o, a: o[0].vector_intra_slice_tag(a["mode"]),
    "vector_logic": _vector_binary("vector_logic"),
    "vector_fxp": _vector_binary("vector_fxp"),
    "vector_fp_binary": _vector_binary("vector_fp_binary"),
    "vector_clip": _vector_binary("vector_clip"),
    "vector_fxp_to_fp": lambda o, a: o[0].vector_fxp_to_fp(a["int_width"]),
    "vector_fp_to_fxp": lambda o, a: o[0].vector_fp_to_fxp(a["int_width"]),
    "vector_fp_unary": lambda o, a: o[0].vector_fp_unary(a["op"] if a["guard"] is None else (a["guard"], a["op"])),
    "vector_fp_ternary": lambda o, a: o[0].vector_fp_ternary_with_mode(
        a["op"], a["mode"], _vector_operand(o, a["operand"])
    ),
    "vector_intra_slice_reduce": lambda o, a: o[0].vector_intra_slice_reduce(
        a["op"], a["axis"], a["time"], a["packet"]
    ),
    "vector_fp_div": lambda o, a: o[0].vector_fp_div_with_mode(a["mode"], _vector_operand(o, a["operand"])),
    "vector_stash": lambda o, a: o[0].vector_stash(),
    "vector_reinterpret": lambda o, a: o[0].vector_reinterpret(a["dtype"]),
    "vector_inter_slice_reduce": lambda o, a: o[0].vector_inter_slice_reduce(a["op"], a["slice"], a["time"]),
    "vector_narrow_split": lambda o, a: o[0].vector_narrow_split(a["time"], a["packet"]),
    "vector_narrow_trim": lambda o, a: o[0].vector_narrow_trim(a["packet"]),
    "vector_widen_concat": lambda o, a: o[0].vector_widen_concat(a["time"], a["packet"]),
    "vector_widen_pad": lambda o, a: o[0].vector_widen_pad(a["packet"]),
    "vector_final": lambda o, a: o[0].vector_final(),
}


def replay(kernel: visa.Kernel) -> visa.Kernel:
    """Re-trace a parsed kernel; a refused op raises with the op's own `// file:line` location."""
    return replay_objects(kernel)[0]


def replay_objects(kernel: visa.Kernel) -> tuple[visa.Kernel, dict[str, object]]:
    """`replay`, also giving the language object behind each value (views know their windows)."""
    tracer = Tracer(collect=False)
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
        for op in kernel.ops:
            _replay(op, objects, tracer)
    ops = tuple(replace(new, loc=old.loc) for new, old in zip(tracer.ops, kernel.ops, strict=True))
    returns = tuple(tracer.names[id(objects[name])].name for name in kernel.returns)
    rebuilt = visa.Kernel(
        kernel.identity, kernel.chip, kernel.pe, _axes(tracer), tuple(args), ops, returns, paths=kernel.paths
    )
    by_name = {tracer.names[id(obj)].name: obj for obj in objects.values() if id(obj) in tracer.names}
    return rebuilt, by_name


def _replay(op: visa.Op, objects: dict[str, object], tracer: Tracer) -> None:
    where = Location(op.loc.file, op.loc.line, op.opcode) if op.loc else None
    rule = REPLAY.get(op.opcode)
    if rule is None:
        raise VerifyError("visa-opcode", f"unknown vISA op `{op.opcode}`", location=where)
    try:
        result = rule([objects[name] for name in op.operands], dict(op.attrs))
    except FuriosaOptError as error:
        error.location = where
        raise
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
