"""Kernels whose main and sub commands run at once beside a DMA, each holding DM bank runs under the
64-access limit: `starving` adds up to it (main 40 + sub 24 + the DMA's 1 = 65), `under_the_limit` does not
(40 + 16 + 1 = 57); `tunable` is either, by its tuned choice. Copied into a scaffolded package by the CLI
tests, so it imports nothing of the tests."""

from furiosa_opt import *
from furiosa_opt.tune import space

P, R, I, K, L, X = axes(P=256, R=16, I=40, K=64, L=16, X=1024)
J, J2 = axes(J=192, J2=128)
Cluster, Slice = m["1 # 2"], m["P"]
choices = space(rows=["J", "J2"])  # `tunable`'s B: `J` rows starve a DMA, `J2` rows do not


def _main_and_sub(ctx: Context, a: HbmTensor, b: HbmTensor, c: HbmTensor, rows: str) -> tuple[HbmTensor, HbmTensor]:
    """Main re-reads A's 40 rows of 128 bytes `R` times, a 32-byte column at a time: 40 accesses in a row
    to the same 4 banks. Sub reads B 8 bytes at a time down `rows / 8` rows 256 bytes apart (one bank
    each time). C's DMA, on the DMA lane after A's and B's, runs while both do."""
    a_dm = a.to_dm(ctx.tdma, Cluster, Slice, m["I, K"])
    b_dm = b.to_dm(ctx.tdma, Cluster, Slice, m[f"{rows}, L"])
    c_dm = c.to_dm(ctx.tdma, Cluster, Slice, m["X"])  # the shortest path: scheduled after A's and B's
    out = (
        ctx.main.begin(a_dm.view())
        .fetch(m["R, K / 16, I"], m["K % 16"])
        .collect(m["R, K / 16, I"], m["K % 16"])
        .commit_trim(m["K % 16"])
        .commit(m["R, K / 16, I, K % 16"])
    )
    ctx.sub.begin(b_dm.view()).fetch(m[f"{rows} % 8, L / 4, {rows} / 8"], m["L % 4"]).collect(
        m[f"{rows} % 8, L / 4, {rows} / 8"], m["L % 4 # 16"]
    ).to_trf(m[f"{rows} % 8"], m[f"L / 4, {rows} / 8, L % 4 # 16"])
    # both results leave the chip at the end, so no buffer is reused (and waited for) before then
    return out.to_hbm(ctx.tdma, m["P, R, K / 16, I, K % 16"]), c_dm.to_hbm(ctx.tdma, m["P, X"])


def B(rows: str) -> TensorType:
    """B's type with `rows` rows of 16 bf16 per slice."""
    return HbmTensor[bf16, m["1"], m[f"P, {rows}, L"]]


A = HbmTensor[bf16, m["1"], m["P, I, K"]]
C = HbmTensor[bf16, m["1"], m["P, X"]]
Out = tuple[HbmTensor[bf16, m["1"], m["P, R, K / 16, I, K % 16"]], C]


@device(chip=1)
def starving(ctx: Context, a: A, b: B("J"), c: C) -> Out:
    return _main_and_sub(ctx, a, b, c, "J")


@device(chip=1)
def under_the_limit(ctx: Context, a: A, b: B("J2"), c: C) -> Out:
    return _main_and_sub(ctx, a, b, c, "J2")


@device(chip=1)
def tunable(ctx: Context, a: A, b: B(choices.rows), c: C) -> Out:
    return _main_and_sub(ctx, a, b, c, choices.rows)
