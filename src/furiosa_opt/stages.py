"""The one table of Tensor Unit stages: every method of a pipeline (`fetch`, `collect`, `contract_outer`,
`vector_fxp`, `cast`, `commit`, …) declared once, with what may precede it and what it records.

Each layer keeps one handler per stage, keyed by the stage's name: the kernel-language method (`lang/`,
which checks the order below and the stage's rule in `verify/`), the vISA replay (`compiler/replay.py`
`REPLAY`), the lowering (`compiler/lower`: an engine config of numbers, its codes from `attrs` and its
layout fields by the stage's `layout`, plus the register-file buffer named in `rf`; a stage that `ends`
the pipeline gives its command's output) and the simulator (`sim/tensor_unit.py` `HANDLERS`). A stage's
`layout` alone decides which layout fields its config holds (`configs/layouts.py`), what stage 2 writes
into them (`compiler/lower/walks.py`) and, for a plain walk, the simulator's handler. The cost model costs
whole commands; it reads `engine` only.

**Adding a stage** is one entry here and one handler per layer: declare the `Stage` (its engine, the
stages it may follow or, inside the Vector Engine, its slot in the chain, and the vISA attributes it
records); write the language method with its rule in `verify/`; add its replay entry and its simulator
handler. `tests/test_stages.py` names the stage and the layer when any layer lacks a handler, handles
a stage nobody declared, or records attributes other than the declared ones.

    STAGES["fetch_cast"].after   # ("fetch", "fetch_table_lookup")
    following("collect")      # the methods that may come next
"""

from __future__ import annotations

from dataclasses import dataclass


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

STAGES: dict[str, Stage] = {
    s.name: s
    for s in (
        Stage("begin", None, attrs=("ctx",)),
        Stage("begin_interleaved", None, attrs=("ctx", "axis")),
        Stage("fetch", "fetch", ("begin", "begin_interleaved"), ("time", "packet"), layout="shape"),
        Stage("fetch_table_lookup", "fetch", ("fetch",), ("dtype",)),
        Stage("fetch_cast", "fetch", ("fetch", "fetch_table_lookup"), ("dtype",)),
        Stage("fetch_zero_point_sub", "fetch", _ADAPTED[:3], ("zero_point", "dtype")),
        Stage("switch", "switch", _ADAPTED, ("config", "slice", "time"), layout="shape"),
        Stage("collect", "collect", (*_ADAPTED, "switch"), ("time", "packet"), layout="walk"),
        Stage("to_trf", "store", ("collect",), ("lane", "element"), ends=True, layout="store"),
        Stage("to_vrf", "store", ("collect", "vector_final"), ("element",), ends=True, layout="store"),
        Stage("contract_outer", "contraction", ("collect",), ("time", "packet"), rf="trf"),
        Stage("contract_packet", "contraction", ("contract_outer",), ("packet",)),
        Stage("contract_time", "contraction", ("contract_packet",), ("time",)),
        Stage("contract_lane", "contraction", ("contract_time",), ("mode", "time", "packet"), layout="fold"),
        Stage("vector_init", "vector", _VE_AFTER, slot="init"),
        Stage("vector_intra_slice_tag", "vector", attrs=("mode",), slot="tag"),
        Stage(
            "vector_intra_slice_unzip", "vector", attrs=("axis", "tile_time", "split_time"), slot="tag", layout="walk"
        ),
        Stage("vector_logic_zip", "vector", attrs=("op", "mode"), slot="logic", layout="shape"),
        Stage("vector_fxp_zip", "vector", attrs=("op", "mode"), slot="fxp", layout="shape"),
        Stage("vector_fp_zip", "vector", attrs=("op", "mode"), slot="fp", layout="shape"),
        Stage("vector_clip_zip", "vector", attrs=("op", "mode"), slot="clip", layout="shape"),
        Stage("vector_logic", "vector", attrs=("op", "operand", "mode"), slot="logic", rf="vrf"),
        Stage("vector_fxp", "vector", attrs=("op", "operand", "mode"), slot="fxp", rf="vrf"),
        Stage("vector_fxp_to_fp", "vector", attrs=("int_width",), slot="fxp_to_fp"),
        Stage("vector_narrow_split", "vector", attrs=("time", "packet"), slot="narrow", layout="walk"),
        Stage("vector_narrow_trim", "vector", attrs=("packet",), slot="narrow", layout="walk"),
        Stage("vector_fp_unary", "vector", attrs=("op", "guard"), slot="fp"),
        Stage("vector_fp_binary", "vector", attrs=("op", "operand", "mode"), slot="fp", rf="vrf"),
        Stage("vector_fp_ternary", "vector", attrs=("op", "operand", "mode"), slot="fp", rf="vrf"),
        Stage(
            "vector_intra_slice_reduce", "vector", attrs=("op", "axis", "time", "packet"), slot="reduce", layout="fold"
        ),
        Stage("vector_fp_div", "vector", attrs=("op", "operand", "mode"), slot="fp_div", rf="vrf"),
        Stage("vector_widen_concat", "vector", attrs=("time", "packet"), slot="widen", layout="walk"),
        Stage("vector_widen_pad", "vector", attrs=("packet",), slot="widen", layout="walk"),
        Stage("vector_fp_to_fxp", "vector", attrs=("int_width",), slot="fp_to_fxp"),
        Stage("vector_clip", "vector", attrs=("op", "operand", "mode"), slot="clip", rf="vrf"),
        Stage("vector_stash", "vector", slot="stash"),
        Stage("vector_reinterpret", "vector", attrs=("dtype",), slot="reinterpret"),
        Stage("vector_inter_slice_reduce", "vector", attrs=("op", "slice", "time"), slot="inter_reduce", layout="fold"),
        Stage("vector_final", "vector"),
        Stage("cast", "cast", _AFTER_COMPUTE, ("dtype", "packet"), layout="walk"),
        Stage("transpose", "transpose", (*_AFTER_COMPUTE, "cast"), ("time", "packet"), layout="shape"),
        Stage("commit_trim", "commit", (*_AFTER_COMPUTE, "cast", "transpose"), ("packet",), layout="walk"),
        Stage("commit_cast", "commit", ("commit_trim",), ("dtype",)),
        Stage("commit_cast_relu", "commit", ("commit_trim",), ("dtype",)),
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
