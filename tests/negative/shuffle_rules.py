"""Shuffles and level tiles the compiler refuses: a shuffle dimension (upstream's const `CLUSTER_DIM` /
`CHIP_DIM`) that is not the level's size, a pattern naming a source outside the level (both
`shuffle-pattern`), the cluster shuffle of an HBM tensor upstream leaves as `todo!()` (`upstream-undefined`),
and a `cluster_tile` starting on a padding position of the cluster level (`tile-start`)."""

from furiosa_opt import *

C, S, E, H, W = axes(C=2, S=64, E=32, H=16, W=32)
One = m["1"]


@device(chip=1)
def cluster_dim_not_level_size(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["C"], m["S"], m["E"])
    dm.view().dm_cluster_shuffle(ctx.tdma, [1, 0], 4)  # refused[visa]: shuffle-pattern


@device(chip=4)
def chip_pattern_shorter_than_level(ctx: Context, x: HbmTensor[i32, m["H % 4"], m["H / 4, W"]]) -> None:
    x.view().hbm_chip_shuffle(ctx.tdma, [1, 2, 0])  # refused[visa]: shuffle-pattern


@device(chip=1)
def cluster_source_out_of_range(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["C"], m["S"], m["E"])
    dm.view().dm_cluster_shuffle(ctx.tdma, [2, 0])  # refused[visa]: shuffle-pattern


@device(chip=2)
def chip_source_out_of_range(ctx: Context, x: HbmTensor[i32, m["H / 8"], m["H % 8, W"]]) -> None:
    dm = x.to_dm(ctx.tdma, One, m["1 # 64"], m["H % 8, W"])
    dm.view().dm_chip_shuffle(ctx.tdma, [0, 2], 2)  # refused[visa]: shuffle-pattern


@device(chip=1)
def hbm_cluster(ctx: Context, x: HbmTensor[i8, One, m["C, S, E"]]) -> None:
    x.hbm_cluster_shuffle(ctx.tdma, [1, 0])  # refused[visa]: upstream-undefined


@device(chip=1)
def cluster_tile_in_padding(ctx: Context, x: HbmTensor[i8, One, m["S, E"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["S"], m["E"])
    dm.view().cluster_tile(1, m["1 # 2"], 1)  # refused[visa]: tile-start
