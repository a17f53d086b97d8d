"""A table row copied from one HBM tensor into the same row of another, the row chosen on the host with
`tile` at each call (the embedding's shape on a 64 × 32 i32 table): the kernel the in-place-write and the
launch-plan tests drive."""

from furiosa_opt import Context, HbmTensor, HbmTensorView, HbmTensorViewMut, axes, device, i32, launch, m

V, H = axes(V=64, H=32)
Row, RowMut = m["1 # 64, H"], m["1 #{!} 64, H"]


@device(chip=1)
def copy_row(ctx: Context, row: HbmTensorView[i32, m["1"], Row], out: HbmTensorViewMut[i32, m["1"], RowMut]) -> None:
    row.to_hbm_view(ctx.tdma, out)


def write_row(ctx: Context, table: HbmTensor, out: HbmTensor, token: int) -> None:
    """Launch `copy_row` on row `token` of `table` and of `out`."""
    launch(copy_row, ctx, table.view().tile(token, m[V], 1, Row), out.view_mut().tile(token, m[V], 1, RowMut))
