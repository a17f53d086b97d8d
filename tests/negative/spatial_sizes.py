from furiosa_opt import *

A, B, Big = axes(A=256, B=8, Big=300_000)


@device
def cluster(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 3"], m["A"], m["B"])  # refused[visa]: cluster-size


@device
def slice_(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8, B"])  # refused[visa]: slice-size


@device
def capacity(ctx: Context, x: HbmTensor[i32, m["1"], m["Big"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["Big"])  # refused[visa]: dm-capacity
