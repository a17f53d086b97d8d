"""Launch overhead on the CPU backend: a kernel that copies the smallest HBM tensor a DMA moves (8 bytes,
two i32: one i32 is refused by the DMA's tail alignment) through one fetch and one commit, launched warm
from a tensor already in HBM. Its data work is a few bytes, so the median of 100 launches is what a launch
itself costs (the replay of its plan, `lang/plan.py`, after the first launch). The target is ≤ 100 µs
per launch; the first launch (every check, and the recording) is printed beside it."""

import statistics
import sys
import time

import numpy as np
from common import duration, machine, row

from furiosa_opt import Context, HbmTensor, HostTensor, axes, device, i32, launch, m

TARGET = 100e-6
E = axes(E=2)  # two i32: the 8 bytes a DMA moves at the least


@device
def copy_one(ctx: Context, x: HbmTensor[i32, m["1"], m["E"]]) -> HbmTensor[i32, m["1"], m["E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["E"])
    out = ctx.main.begin(dm.view()).fetch(m["1"], m["E"]).collect(m["1"], m["E # 8"]).commit_trim(m["E"]).commit(m["E"])
    return out.to_hbm(ctx.tdma, m["E"])


def main() -> int:
    print(machine())
    with Context.acquire() as ctx:
        x = HostTensor.from_numpy(np.array([42, 7], dtype=np.int32), i32, m[E]).to_hbm(ctx.pdma)
        start = time.perf_counter()
        first = launch(copy_one, ctx, x)
        cold = time.perf_counter() - start
        if first.to_host(ctx.pdma).to_numpy().tolist() != [42, 7]:
            print("check: the copy DIFFERS from its input")
            return 1
        times = []
        for _ in range(100):
            start = time.perf_counter()
            launch(copy_one, ctx, x)
            times.append(time.perf_counter() - start)
    warm = statistics.median(times)
    print(f"first launch {duration(cold)}")
    row("8-byte copy, warm (median of 100)", f"launch {duration(warm)}", "", f"≤ {duration(TARGET)}", warm <= TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
