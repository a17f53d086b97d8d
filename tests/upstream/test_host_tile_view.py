"""Port of upstream `host_tile_view.rs` and `host_tile_view_tests.rs`: views tiled on the host and
passed to a kernel.

Upstream's defect: on the NPU a view reached the kernel as its buffer address alone, so a tile offset
recorded only in the mapping arrived as tile 0. Both ends of `tile_move` are tiled by the caller.
"""

import ml_dtypes
import numpy as np

from furiosa_opt import *

C, H = axes(C=64, H=64)
assert C.size == 64

Chip = m["1"]
SmallRow = m["1 # 64, H"]  # one row of `[C, H]`: a single live `C` position, 63 of padding
SmallRowMut = m["1 #{!} 64, H"]  # as a write destination: out-of-tile cells are Bottom padding, never written


@device(chip=1)
def tile_move(
    ctx: Context, input: HbmTensorView[bf16, Chip, SmallRow], out: HbmTensorViewMut[bf16, Chip, SmallRowMut]
) -> None:
    """Move one row between two tables; the caller chooses both rows."""
    input.to_hbm_view(ctx.tdma, out)


def tables(ctx: Context) -> tuple[HbmTensor, HbmTensor]:
    """Row r of the table holds r; every cell of the output holds -1.0, which no source row holds."""
    table = np.repeat(np.arange(C.size, dtype=np.float32)[:, None], H.size, axis=1).astype(ml_dtypes.bfloat16)
    blank = np.full((C.size, H.size), -1.0, dtype=ml_dtypes.bfloat16)
    return (
        HostTensor.from_numpy(table, bf16, m["C, H"]).to_hbm(ctx.pdma, Chip, m["C, H"]),
        HostTensor.from_numpy(blank, bf16, m["C, H"]).to_hbm(ctx.pdma, Chip, m["C, H"]),
    )


def differential_inputs(kernel, ctx: Context, rng: np.random.Generator):
    """Row 3 to row 5: nonzero offsets on both ends, the case the NPU once dropped."""
    if kernel is not tile_move:
        return None
    table, out = tables(ctx)
    return table.view().tile(3, m["C"], 1, SmallRow), out.view_mut().tile(5, m["C"], 1, SmallRowMut)


def rows(out: HbmTensor, ctx: Context) -> np.ndarray:
    return out.to_host(ctx.pdma, m["C, H"]).to_numpy().astype(np.float32)


def test_host_tile_moves_the_requested_row_to_the_requested_row():
    # Row 3 to row 5 keeps the two failures apart: a dropped read offset puts row 0 on row 5, a dropped
    # write offset puts row 3 on row 0.
    with Context.acquire() as ctx:
        table, out = tables(ctx)
        src = table.view().tile(3, m["C"], 1, SmallRow)
        dst = out.view_mut().tile(5, m["C"], 1, SmallRowMut)
        launch(tile_move, ctx, src, dst)
        actual = rows(out, ctx)

    for r in range(C.size):
        want = 3.0 if r == 5 else -1.0
        assert actual[r].tolist() == [want] * H.size, f"row {r} after moving row 3 to row 5"


def test_host_tile_offsets_may_be_runtime_values():
    # The first, middle and last rows on both the source and the destination view.
    moves = [(0, C.size - 1), (C.size // 2, C.size // 2), (C.size - 1, 0), (3, 5)]
    with Context.acquire() as ctx:
        table, out = tables(ctx)
        for src_row, dst_row in moves:
            src = table.view().tile(src_row, m["C"], 1, SmallRow)
            dst = out.view_mut().tile(dst_row, m["C"], 1, SmallRowMut)
            launch(tile_move, ctx, src, dst)
        actual = rows(out, ctx)

    for r in range(C.size):
        want = next((float(src) for src, dst in moves if dst == r), -1.0)
        assert actual[r].tolist() == [want] * H.size, f"row {r} after the loop"
