"""What may be written after a stage: the stages the table allows next (`stages.following`, and inside the
Vector Engine the later slots of its chain), the class whose methods they are, and a method's signature.
Reads furiosa_opt's own classes only, never the user's module.

    next_stages("fetch")     # ("fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub", "switch", "collect")
    members_after("fetch")   # the stream methods, the stages allowed next first
"""

from __future__ import annotations

import inspect

from furiosa_opt.lang.contraction import Contraction
from furiosa_opt.lang.pair import VectorPair
from furiosa_opt.lang.stream import Stream
from furiosa_opt.lang.vector import VectorStream
from furiosa_opt.stages import STAGES, VECTOR_CHAIN, following

CLASSES = (Stream, Contraction, VectorStream, VectorPair)


def next_stages(name: str) -> tuple[str, ...]:
    """The stages that may follow the stage `name`: the table's `after`, and for a Vector Engine stage the
    stages of a later slot of the chain (of the same slot when it repeats)."""
    allowed = list(following(name))
    stage = STAGES.get(name)
    slot = VECTOR_CHAIN.get(stage.slot) if stage and stage.slot else None
    if name == "vector_init" or slot is not None:
        rank = slot.rank if slot else -1
        for other in STAGES.values():
            theirs = VECTOR_CHAIN.get(other.slot) if other.slot else None
            if theirs and (theirs.rank > rank or (theirs.rank == rank and theirs.repeats and other.name != name)):
                allowed.append(other.name)
        allowed.append("vector_final")
    return tuple(dict.fromkeys(allowed))


def members_after(name: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The stages allowed after the stage `name`, and the other public members of the class they belong
    to; None if `name` is not a stage."""
    if name not in STAGES:
        return None
    allowed = next_stages(name)
    owner = next((c for c in CLASSES if any(hasattr(c, s) for s in allowed)), Stream)
    others = tuple(n for n in dir(owner) if not n.startswith("_") and n not in allowed)
    return allowed, others


def signature(method: str) -> tuple[str, list[str], str] | None:
    """A stream method's signature as text, its parameters' texts and its docstring.

    signature("collect")[0]  # "collect(time: 'Mapping', packet: 'Mapping')"
    """
    for cls in CLASSES:
        function = getattr(cls, method, None)
        if callable(function):
            sig = inspect.signature(function)
            params = [str(p) for p in sig.parameters.values() if p.name != "self"]
            return f"{method}({', '.join(params)})", params, inspect.getdoc(function) or ""
    return None
