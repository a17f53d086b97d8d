"""The one table of Tensor Unit stages: every method of a pipeline (`fetch`, `collect`, `contract_outer`,
`vector_fxp`, `cast`, `commit`, …) declared once, with what may precede it, what it records and the
element-wise arithmetic it computes, and the registry through which every layer finds its handler.

A stage's entry says everything the layers share: its engine; the stages it may follow or, inside the
Vector Engine, its slot in the chain (`VECTOR_CHAIN`, the order the language checks in `verify/vector.py`);
the attributes its vISA op records; the register-file operand it reads (`rf`, which stage 2 writes as the
input the config reads); how its config moves the stream (`layout`: which layout fields its config
holds, `configs/layouts.py`, and what stage 2 writes into them, `compiler/lower/walks.py`); and its
`arithmetic`, the one element-wise function both backends compute the stage with (the CPU backend through
the language, the simulator from the binary's codes). How data is laid out and walked is derived twice, on
purpose: by the CPU backend from the mappings and by the simulator from stage 2's numbers.

Each layer registers its handlers here, by stage name (`register`, checked against this table when the
layer is imported), and dispatches through the entry (`STAGES[name].handler(layer)`): the stage's rule
(`verify/`, which the language calls through `rule(name)`), the vISA replay (`compiler/replay.py`), the
counts stage 2 derives beyond the attributes (`compiler/lower/engines.py`) and the simulator (`sim/`).
The kernel-language method of a stage is the method of that name.

**Adding a stage** is one entry here and one handler per layer: declare the `Stage`; write its rule in
`verify/` (registered) and the language method that calls it; register its replay and its simulator
handler (and its lowering if its engine needs derived counts, declared in `configs/derived.py`). A layer
that registers a stage nobody declared fails at import; `tests/test_stages.py` names the stage and the
layer when a layer lacks one.

    STAGES["fetch_cast"].after   # ("fetch", "fetch_table_lookup")
    following("collect")      # the methods that may come next
    STAGES["cast"].handler("simulator")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from furiosa_opt import dtypes
from furiosa_opt.vector import arithmetic


@dataclass(frozen=True, slots=True)
class Stage:
    """One Tensor Unit stage: `name` is both the method a kernel calls and the vISA opcode."""

    name: str
    engine: str | None  # fetch, switch, collect, contraction, vector, cast, transpose, commit, store; None: `begin`
    after: tuple[str, ...] = ()  # the stream stages it may follow (none inside the Vector Engine)
    attrs: tuple[str, ...] = ()  # the attributes its vISA op records, in order
    slot: str | None = None  # inside the Vector Engine: its place in the intra-slice chain (verify/vector.py)
    rf: str | None = None  # a register-file operand it reads: "trf" or "vrf"
    ends: bool = False  # ends the pipeline: its output is the command's
    layout: str | None = None  # how its config moves the stream (LAYOUTS), None: it keeps the layout
    arithmetic: Callable | None = None  # the element-wise function both backends compute it with

    def handler(self, layer: str) -> Callable:
        """The function `layer` registered for this stage (`register`); KeyError names both."""
        found = _REGISTERED[layer].get(self.name)
        if found is None:
            raise KeyError(f"the {layer} has no handler for the `{self.name}` stage")
        return found


@dataclass(frozen=True, slots=True)
class Slot:
    """A place in the Vector Engine's intra-slice chain: a stage may follow one of a lower rank (or of the
    same rank when it `repeats`), on a stream of `way` elements per flit."""

    rank: int
    way: int
    repeats: bool = False


# The intra-slice chain, in order; `inter_reduce` is entered by its own rules (verify/vector.py).
VECTOR_CHAIN: dict[str, Slot] = {
    "init": Slot(0, 8),
    "tag": Slot(1, 8),
    "logic": Slot(2, 8, True),
    "fxp": Slot(3, 8, True),
    "fxp_to_fp": Slot(4, 8),
    "narrow": Slot(5, 8),
    "fp": Slot(6, 4, True),
    "reduce": Slot(7, 4),
    "fp_div": Slot(8, 4),
    "widen": Slot(9, 4),
    "fp_to_fxp": Slot(10, 8),
    "clip": Slot(11, 8, True),
    "inter_reduce": Slot(12, 8),
}
VECTOR_MODIFIERS = ("stash", "reinterpret")  # slots of stages that keep the chain where it is


# How a stage's config lays the stream out, in numbers stage 2 derives from the mappings (configs/layouts.py):
LAYOUTS = {
    "walk": "walked into a new layout (`walk`, its new shape and live box)",
    "shape": "given a new layout by the engine itself (its new shape and live box)",
    "store": "walked into a register file's layout",
    "fold": "folded: its terms walked into `[outputs, reduced]`, the sums walked into the new layout",
}

_ADAPTED = ("fetch", "fetch_table_lookup", "fetch_cast", "fetch_zero_point_sub")  # a fetch and its adapter
_VE_AFTER = ("collect", "contract_lane")  # what `vector_init` may follow
_AFTER_COMPUTE = ("collect", "contract_lane", "vector_final")  # a finished stream's stages
_ZIP, _BINARY = ("op", "mode"), ("op", "operand", "mode")  # what a pair-mode op and an operand op record

STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("begin", None, attrs=("ctx",)),
        Stage("begin_interleaved", None, attrs=("ctx", "axis")),
        Stage("fetch", "fetch", ("begin", "begin_interleaved"), ("time", "packet"), layout="shape"),
        Stage("fetch_table_lookup", "fetch", ("fetch",), ("dtype",), arithmetic=dtypes.table_lookup),
        Stage("fetch_cast", "fetch", ("fetch", "fetch_table_lookup"), ("dtype",), arithmetic=dtypes.convert),
        Stage("fetch_zero_point_sub", "fetch", _ADAPTED[:3], ("zero_point", "dtype"), arithmetic=dtypes.zero_point_sub),
        Stage("switch", "switch", _ADAPTED, ("config", "slice", "time"), layout="shape"),
        Stage("collect", "collect", (*_ADAPTED, "switch"), ("time", "packet"), layout="walk"),
        Stage("to_trf", "store", ("collect",), ("lane", "element"), ends=True, layout="store"),
        Stage("to_vrf", "store", ("collect", "vector_final"), ("element",), ends=True, layout="store"),
        Stage("contract_outer", "contraction", ("collect",), ("time", "packet"), rf="trf"),
        Stage("contract_packet", "contraction", ("contract_outer",), ("packet",)),
        Stage("contract_time", "contraction", ("contract_packet",), ("time",)),
        Stage("contract_lane", "contraction", ("contract_time",), ("mode", "time", "packet"), layout="fold"),
        Stage("vector_init", "vector", _VE_AFTER, slot="init"),
        Stage("vector_intra_slice_tag", "vector", attrs=("mode",), slot="tag", arithmetic=arithmetic.comparison_tags),
        Stage(
            "vector_intra_slice_unzip", "vector", attrs=("axis", "tile_time", "split_time"), slot="tag", layout="walk"
        ),
        Stage("vector_logic_zip", "vector", attrs=_ZIP, slot="logic", layout="shape", arithmetic=arithmetic.logic),
        Stage("vector_fxp_zip", "vector", attrs=_ZIP, slot="fxp", layout="shape", arithmetic=arithmetic.fxp),
        Stage("vector_fp_zip", "vector", attrs=_ZIP, slot="fp", layout="shape", arithmetic=arithmetic.fp_binary),
        Stage("vector_clip_zip", "vector", attrs=_ZIP, slot="clip", layout="shape", arithmetic=arithmetic.clip),
        Stage("vector_logic", "vector", attrs=_BINARY, slot="logic", rf="vrf", arithmetic=arithmetic.logic),
        Stage("vector_fxp", "vector", attrs=_BINARY, slot="fxp", rf="vrf", arithmetic=arithmetic.fxp),
        Stage("vector_fxp_to_fp", "vector", attrs=("int_width",), slot="fxp_to_fp", arithmetic=dtypes.fxp_to_fp),
        Stage("vector_narrow_split", "vector", attrs=("time", "packet"), slot="narrow", layout="walk"),
        Stage("vector_narrow_trim", "vector", attrs=("packet",), slot="narrow", layout="walk"),
        Stage("vector_fp_unary", "vector", attrs=("op", "guard"), slot="fp", arithmetic=arithmetic.fp_unary),
        Stage("vector_fp_binary", "vector", attrs=_BINARY, slot="fp", rf="vrf", arithmetic=arithmetic.fp_binary),
        Stage("vector_fp_ternary", "vector", attrs=_BINARY, slot="fp", rf="vrf", arithmetic=arithmetic.fp_ternary),
        Stage(
            "vector_intra_slice_reduce",
            "vector",
            attrs=("op", "axis", "time", "packet"),
            slot="reduce",
            layout="fold",
            arithmetic=arithmetic.reducer,
        ),
        Stage("vector_fp_div", "vector", attrs=_BINARY, slot="fp_div", rf="vrf", arithmetic=arithmetic.fp_binary),
        Stage("vector_widen_concat", "vector", attrs=("time", "packet"), slot="widen", layout="walk"),
        Stage("vector_widen_pad", "vector", attrs=("packet",), slot="widen", layout="walk"),
        Stage("vector_fp_to_fxp", "vector", attrs=("int_width",), slot="fp_to_fxp", arithmetic=dtypes.fp_to_fxp),
        Stage("vector_clip", "vector", attrs=_BINARY, slot="clip", rf="vrf", arithmetic=arithmetic.clip),
        Stage("vector_stash", "vector", slot="stash"),
        Stage("vector_reinterpret", "vector", attrs=("dtype",), slot="reinterpret"),
        Stage(
            "vector_inter_slice_reduce",
            "vector",
            attrs=("op", "slice", "time"),
            slot="inter_reduce",
            layout="fold",
            arithmetic=arithmetic.reducer,
        ),
        Stage("vector_final", "vector"),
        Stage("cast", "cast", _AFTER_COMPUTE, ("dtype", "packet"), layout="walk", arithmetic=dtypes.convert),
        Stage("transpose", "transpose", (*_AFTER_COMPUTE, "cast"), ("time", "packet"), layout="shape"),
        Stage("commit_trim", "commit", (*_AFTER_COMPUTE, "cast", "transpose"), ("packet",), layout="walk"),
        Stage("commit_cast", "commit", ("commit_trim",), ("dtype",), arithmetic=dtypes.commit_cast),
        Stage("commit_cast_relu", "commit", ("commit_trim",), ("dtype",), arithmetic=dtypes.commit_cast),
        Stage("commit", "commit", ("commit_trim", "commit_cast", "commit_cast_relu"), ("element",), ends=True),
        Stage("commit_view", "commit", ("commit_trim", "commit_cast", "commit_cast_relu"), ends=True),
    )
}

# The vISA ops that are not Tensor Unit stages: allocations, views, DMA (memory, not pipelines) and the
# device-loop regions (`loop`, `carried` … `end_loop`, `if` … `end_if`).
MEMORY_OPS = (
    "view",
    "view_mut",
    "tile",
    "chip_tile",
    "cluster_tile",
    "slice_tile",
    "pad",
    "unpad",
    "reshape",
    "hbm_new",
    "dm_new",
    "to_dm",
    "to_hbm",
    "hbm_to_hbm",
    "to_dm_view",
    "to_hbm_view",
    "to_dm_pcopy",
    "to_dm_view_pcopy",
    "memset",
    "loop",
    "carried",
    "end_loop",
    "if",
    "end_if",
    "dma_gather_scaled",
    "dma_gather_unscaled",
    "dma_scatter",
    "dma_scatter_unscaled",
)


# Public methods of the stream classes that are not stages, and why (tests/test_stages.py reads this).
_WITH_MODE = "records as the stage without `_with_mode`: the same engine op, its argument mode written first"
HELPERS = {
    "advanced": "Stream: the stream after a stage, how the contraction and the Vector Engine hand one back",
    **{f"vector_{op}_with_mode": _WITH_MODE for op in ("logic", "fxp", "fp_binary", "fp_ternary", "fp_div", "clip")},
    **{f"vector_{op}_zip_with_mode": _WITH_MODE for op in ("logic", "fxp", "fp", "clip")},
    "vector_filter": "upstream's body is `todo!()`: the name exists and refuses (rule upstream-undefined)",
    "fetch_mask": "upstream's body is `todo!()`: the name exists and refuses (rule upstream-undefined)",
    "commit_valid_count_pack": "upstream's body is `todo!()`: the name exists and refuses (rule upstream-undefined)",
    **{
        f"parallel_copy_{level}_slice": "on the sub context but no pipeline: tiles and `to_dm_view_pcopy` moves"
        for level in ("chip", "cluster")
    },
}


def following(stage: str) -> tuple[str, ...]:
    """The stages that may follow the stream stage `stage`, in table order."""
    return tuple(s.name for s in STAGES.values() if stage in s.after)


ENDS = frozenset(s.name for s in STAGES.values() if s.ends)
VECTOR = frozenset(s.name for s in STAGES.values() if s.engine == "vector")


# ---- the registry: each layer's handler of each stage, found through the stage's entry -------------------

LAYERS = {
    "rule": "the stage's own static check (verify/), which the language runs before it records the stage; the "
    "Vector Engine's ops have none beyond their slot, ALU and scalar checks",
    "replay": "the vISA replay (compiler/replay.py): every stage",
    "lowering": "stage 2's derived counts (compiler/lower/engines.py): the stages configs/derived.py gives counts",
    "simulator": "the simulator (sim/): every stage with an engine",
}
_REGISTERED: dict[str, dict[str, Callable]] = {layer: {} for layer in LAYERS}
F = TypeVar("F", bound=Callable)


def register(layer: str, *names: str) -> Callable[[F], F]:
    """Decorate `layer`'s handler of the stages `names`. A name the table does not declare, or a stage
    the layer handles twice, is refused when the layer is imported.

        @register("simulator", "cast")
        def _cast(unit, stream, config, command): ...
    """

    def registered(handler: F) -> F:
        for name in names:
            if name not in STAGES:
                raise KeyError(f"the {layer} registers `{name}`, which the stage table does not declare")
            if name in _REGISTERED[layer]:
                raise KeyError(f"the {layer} registers `{name}` twice")
            _REGISTERED[layer][name] = handler
        return handler

    return registered


def rule(name: str) -> Callable:
    """The static check `verify/` registered as stage `name`'s own rule: what the language calls with the
    stage's operands before it records the stage.

        rule("collect")(dtype, time, packet, out_time, out_packet)
    """
    return STAGES[name].handler("rule")


def registered(layer: str) -> frozenset[str]:
    """The stages `layer` has registered a handler for (what its modules imported so far registered)."""
    return frozenset(_REGISTERED[layer])
