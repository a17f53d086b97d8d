"""An engine config's numbers: the non-mapping vISA attributes as codes and raw bits (`ENCODED`, with the
tables of `vector.codes`, `switch` and `dtypes`; `configs/vector.py` declares the fields), and what a config
holds beyond its stage's attributes (each registered as its stage's `lowering`; `configs/derived.py`
declares the fields): the parameters the compiler derives for the switch, the transpose and the
inter-slice reducer, from the same rules that accepted the stage (`verify/`). The layouts every stage
moves its stream by (boxes and walks) come from `walks.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from furiosa_opt import switch
from furiosa_opt.arch import RNGD
from furiosa_opt.compiler import visa
from furiosa_opt.dtypes import DTYPE_CODES
from furiosa_opt.stages import register, rule
from furiosa_opt.vector import codes
from furiosa_opt.vector.ops import TagMode


def _mode(mode: object, stream: object) -> dict:
    """A tag stage's TagMode (its kind and comparisons), or an op's argument mode or the contraction's
    LaneMode (a code)."""
    return codes.encode_tag(mode) if isinstance(mode, TagMode) else {"mode": codes.MODES.code(mode)}


# attribute → its fields, from the attribute's value and the stage's input (the stream an operand fills)
ENCODED: dict[str, Callable[[object, object], dict]] = {
    "op": lambda op, stream: {"op": codes.OPS.code(op)},
    "mode": _mode,
    "operand": lambda operand, stream: codes.encode_operand(operand, stream.dtype.storage),
    "guard": lambda guard, stream: {"guard": codes.encode_guard(guard)},
    "dtype": lambda dtype, stream: {"dtype": DTYPE_CODES.code(dtype)},
    "config": lambda config, stream: switch.fields(config),
    "zero_point": lambda value, stream: {"zero_point": value},
    "int_width": lambda value, stream: {"int_width": value},
}


@register("lowering", "switch")
def _switch(stream, op: visa.Op) -> dict:
    in_slice = stream.spatial[2]
    routing = rule("switch")(op.attr("config"), in_slice, stream.time, op.attr("slice"), op.attr("time"))
    flits = -(-stream.dtype.nbytes(stream.packet.size) // RNGD.flit_bytes)
    custom = routing.sources is not None
    return {
        "ring": routing.ring,
        "in_steps": stream.time.size,
        "flits": flits,
        "moved": routing.sources.shape[1] if custom else 0,
        "sources": routing.sources.ravel().tolist() if custom else [],
    }


@register("lowering", "vector_inter_slice_reduce")
def _inter_slice_reduce(vector, op: visa.Op) -> dict:
    stream = vector.stream
    ratio = rule("vector_inter_slice_reduce")(stream.spatial[2], stream.time, op.attr("slice"), op.attr("time"))
    return {"in_steps": stream.time.size, "ratio": ratio}


@register("lowering", "transpose")
def _transpose(stream, op: visa.Op) -> dict:
    return asdict(rule("transpose")(stream.dtype, stream.time, stream.packet, op.attr("time"), op.attr("packet")))
