"""A runtime view index is checked at every value its device loop gives it: the third start of `i * 16`
(32) is past B, on the read view and on the write view alike."""

from furiosa_opt import *

A, B = axes(A=256, B=32)


@device(chip=1)
def tile_past_the_axis(ctx: Context, x: HbmTensor[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["A, B"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    out = DmTensor.new(i8, m["1"], m["1 # 2"], m["A"], m["B"])
    for i in device_range(3):
        piece = dm.view().tile(i * 16, m["B"], 16, m["B = 16 # 32"])  # refused[visa]: tile-start
        slot = out.view_mut().tile(i * 16, m["B"], 16, m["B = 16 #{!} 32"])  # refused[visa]: tile-start
        piece.to_dm_view(ctx.tdma, slot)
    return out.to_hbm(ctx.tdma, m["A, B"])
