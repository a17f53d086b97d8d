"""The layout fields of the engine configs: live boxes and walks (`sim/walk.py` says how they are read,
`compiler/lower/walks.py` how stage 2 derives them from the mappings).

Every stage that gives the stream a new layout holds its `steps`, `lanes` and `live` box; a stage that moves
the stream into it holds the walk (`walk`, or `table` where a layout is not a mixed-radix split); a
register-file store holds the walk into the file and the file's `target` box; a Vector Engine stage with
a register-file port holds the walks of the VRF tensor (`rf_*`) and of the stash (`stash_*`) into the
stream (empty when its operand reads neither); the contraction's and the reducers' folds hold the walks
of their terms into `[outputs, reduced]` and the count of reduced terms.
"""

from __future__ import annotations

import math

from furiosa_opt.arch import RNGD
from furiosa_opt.configs.fields import Field, Record
from furiosa_opt.stages import STAGES

MAX_DIGITS = 32  # digits a box or loops a walk may hold: the format's bound, far above any layout's
MAX_TABLE = 1 << 24  # positions a table may list

_BOX = 2 * MAX_DIGITS


def _box(name: str, meaning: str) -> Field:
    """A box field: `extent, live` pairs, one per digit."""
    return Field(name, 32, meaning, repeat=_BOX, group=2)


STEPS = Field("steps", 32, "the stream's Time positions after the stage (pair mode: both groups')")
LANES = Field("lanes", 32, "the stream's Packet positions after the stage")
LIVE = _box("live", "the box of the stream's layout `[Time, Packet]` after the stage: `extent, live` per "
             "digit, outermost first")  # fmt: skip
_SHAPE = (STEPS, LANES, LIVE)


def walk_fields(prefix: str, what: str) -> tuple[Field, Field]:
    """The walk moving `what` (its loops `size, stride` over the source's positions, outermost first) and
    the table used instead where a layout is not a mixed-radix split (source position per destination
    position, -1 at padding; empty when the walk is given)."""
    return (
        Field(f"{prefix}walk", 32, f"{what}: loops `size, stride` over the source positions", repeat=_BOX, group=2),
        Field(f"{prefix}table", 32, f"{what}: source position per position, -1 at padding", True, MAX_TABLE),
    )


_MOVE = walk_fields("", "the walk of the stream into its new layout")
_PORTS = (
    *walk_fields("rf_", "the VRF tensor walked into the stream (empty: the operand reads none)"),
    *walk_fields("stash_", "the stash walked into the stream (empty: the operand reads none)"),
)
_FOLD = (
    _box("terms", "the box of the fold's terms `[outputs, reduced]`: a term at padding is skipped"),
    Field("reduced", 32, "terms each output folds, in order"),
)


def _records() -> dict[str, Record]:
    walked = [s.name for s in STAGES.values() if s.layout == "walk"]
    records = {stage: Record(stage, (*_MOVE, *_SHAPE)) for stage in walked}
    records.update({s.name: Record(s.name, _SHAPE) for s in STAGES.values() if s.layout == "shape"})
    slices = Field("in_slices", 32, "the input's slices per cluster")
    records["switch"] = Record("switch", (slices, *_SHAPE))
    target = _box("target", "the box of the register file's layout inside a slice")
    records.update({s.name: Record(s.name, (*_MOVE, target)) for s in STAGES.values() if s.layout == "store"})
    records.update({s.name: Record(s.name, _PORTS) for s in STAGES.values() if s.rf == "vrf"})
    lhs = walk_fields("lhs_", "the stream walked into the fold's terms")
    rhs = walk_fields("rhs_", "the TRF tensor walked into the fold's terms")
    acc = Field("acc", 4, "the accumulator's element type: its code in `dtypes.DTYPE_CODES`")
    records["contract_lane"] = Record("contract_lane", (*lhs, *rhs, *_FOLD, acc, *_MOVE, *_SHAPE))
    reducer = (
        *_MOVE,
        *_FOLD,
        slices,
        Field("slices", 32, "the output's slices per cluster"),
        _box("source", "the box of each cluster's input `[Slice, Time, Packet]`"),
        _box("target", "the box of each cluster's output `[Slice, Time, Packet]`"),
        *_SHAPE,
    )
    reducers = [s.name for s in STAGES.values() if s.layout == "fold" and s.engine == "vector"]
    records.update({stage: Record(stage, reducer) for stage in reducers})
    return records


RECORDS: dict[str, Record] = _records()


def box_size(box: list[int]) -> int:
    """Positions of the layout a box describes: the product of its extents."""
    return math.prod(box[::2])


def problem(config: object) -> tuple[str, str] | None:
    """(field, why) for the first layout field of a typed config (`records.EngineConfig`, each field's width
    checked already) whose numbers do not fit one another or the chip: a live box as large as its shape, a
    fold's terms a whole number of outputs, a reducer's slices within a cluster."""
    live, terms = getattr(config, "live", None), getattr(config, "terms", None)
    if live is not None and box_size(live) != config.steps * config.lanes:
        return "live", f"describes {box_size(live)} positions, the stream has {config.steps} × {config.lanes}"
    if terms is not None:
        reduced, count = config.reduced, box_size(terms)
        if reduced < 1 or count % reduced:
            return "reduced", f"{reduced} terms per output do not divide the {count} terms"
        if hasattr(config, "source") and box_size(config.target) * reduced != count:
            return "terms", f"{count} terms for {box_size(config.target)} outputs of {reduced} terms each"
    for key in ("in_slices", "slices"):
        slices = getattr(config, key, None)
        if slices is not None and not 1 <= slices <= RNGD.slices_per_cluster:
            return key, f"{slices} slices, a cluster has 1 to {RNGD.slices_per_cluster}"
    return None
