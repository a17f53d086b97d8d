"""The config fields stage 2 derives for the engines that need more than their stage's attributes, and the
register-file port: each declared once, like the layouts (`layouts.py`) and the codes (`vector.py`).

* `switch`: the ring size, the input's time steps and flits per packet and, for `CustomBroadcast`, the
  routing (upstream's snoop bitmap): for each output slice, the input slice it reads at each of the
  innermost `moved` output time steps, row by row, -1 where the output is padding.
* `transpose`: the Transpose Engine's sizes (`verify.transpose.TransposeParams`).
* `vector_inter_slice_reduce`: the input's time steps and the slices folded into one.
* every stage that reads a register file (`Stage.rf`): which of the command's inputs it reads.
"""

from __future__ import annotations

from furiosa_opt.arch import RNGD
from furiosa_opt.configs.fields import Field, Record
from furiosa_opt.stages import STAGES

_COUNT_BITS = RNGD.max_entry_iterations.bit_length()  # a count from 0 to max_entry_iterations
_SLICES = RNGD.clusters_per_chip * RNGD.slices_per_cluster


def _count(name: str, meaning: str) -> Field:
    return Field(name, _COUNT_BITS, meaning)


_IN_STEPS = _count("in_steps", "the input's time steps")
RF = Field("rf", 4, "the register-file operand: its index among the command's inputs (-1: the op reads none)", True)

RECORDS: dict[str, Record] = {
    "switch": Record(
        "switch",
        (
            _count("ring", "slices per ring the topology moves data across"),
            _IN_STEPS,
            _count("flits", "flits per input packet"),
            _count("moved", "CustomBroadcast: the innermost output time steps the routing covers (else 0)"),
            Field(
                "sources",
                10,
                "CustomBroadcast: the input slice per output slice and moved step, -1 at padding (else empty)",
                True,
                _SLICES * RNGD.max_entry_iterations,
            ),
        ),
    ),
    "transpose": Record(
        "transpose",
        (
            _count("in_rows", "time steps stacked into the input matrix"),
            _count("in_cols", "elements per input row: packets_per_col × valid_size"),
            _count("out_rows", "rows kept after the transpose"),
            _count("packets_per_col", "packets gathered into one input row"),
            _count("valid_size", "the valid elements of each input packet"),
            _count("iterations", "matrices transposed, one per remaining time step"),
        ),
    ),
    "vector_inter_slice_reduce": Record(
        "vector_inter_slice_reduce", (_IN_STEPS, _count("ratio", "slices folded into one"))
    ),
    **{s.name: Record(s.name, (RF,)) for s in STAGES.values() if s.rf is not None},
}
