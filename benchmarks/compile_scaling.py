"""Compile time against kernel size: a chain of N Vector Engine passes (fetch → add 1 → commit, each pass
reading the previous one's DM tensor), written as a Python loop (unrolled while tracing) for N = 200, 1000
and 4000, and as a device loop (`device_range`) for N = 4000.

Each compile runs in a fresh interpreter (so no cache or memo of an earlier one helps) and reports its wall
time for the three stages (`compile_kernel`), the interpreter's peak RSS, and the time per vISA op. Targets (issue
"Device loops, runtime conditions, and a compiler linear in kernel size"): N = 1000 in ≤ 5 s, N = 4000 in
≤ 20 s and ≤ 300 MB, time per op within 1.5× from N = 200 to N = 4000; the device loop in about the time
of its body (stage 2 keeps the loop: the body is lowered, scheduled and written once).
"""

from __future__ import annotations

import json
import subprocess
import sys

from common import machine, row

CHILD = r"""
import json, resource, sys, time
from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

A, B = axes(A=256, B=8)
N, DEVICE = int(sys.argv[1]), sys.argv[2] == "device"


def one_pass(ctx, dm):
    return (
        ctx.main.begin(dm.view()).fetch(m["1"], m["B"]).fetch_cast(i32).collect(m["1"], m["B"])
        .vector_init().vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final().commit_trim(m["B"]).commit(m["B"])
    )


@device(chip=1)
def chain(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]]) -> HbmTensor[i32, m["1"], m["A, B"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    for _ in device_range(N) if DEVICE else range(N):
        dm = one_pass(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["A, B"])


start = time.perf_counter()
result = compile_kernel(chain)
seconds = time.perf_counter() - start
assert result.ok, result.diagnostics
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
print(json.dumps({"seconds": seconds, "ops": len(result.visa.ops), "peak": peak}))
"""


def measure(n: int, form: str) -> tuple[float, int, int]:
    """(seconds, vISA ops, peak RSS bytes) of one compile in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), form], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"N = {n} ({form}) failed:\n{done.stderr}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return figures["seconds"], figures["ops"], figures["peak"]


def main() -> int:
    print(machine())
    results = {n: measure(n, "unrolled") for n in (200, 1000, 4000)}
    per_op = {n: seconds / ops for n, (seconds, ops, _) in results.items()}
    for n, (seconds, ops, peak) in results.items():
        print(f"unrolled N = {n:5}: {seconds:6.2f} s, {ops:6} vISA ops, {per_op[n] * 1e6:6.1f} µs/op, {peak >> 20} MB")
    row("N = 1000 unrolled", f"{results[1000][0]:.2f} s", f"{results[1000][0]:.2f} s", "≤ 5 s", results[1000][0] <= 5)
    row("N = 4000 unrolled", f"{results[4000][0]:.2f} s", f"{results[4000][0]:.2f} s", "≤ 20 s", results[4000][0] <= 20)
    row("N = 4000 peak RSS", f"{results[4000][2] >> 20} MB", f"{results[4000][2] >> 20} MB", "≤ 300 MB",
        results[4000][2] <= 300 << 20)  # fmt: skip
    ratio = per_op[4000] / per_op[200]
    row("time per op, N = 4000 / N = 200", f"{per_op[4000] * 1e6:.1f} / {per_op[200] * 1e6:.1f} µs", f"{ratio:.2f}×",
        "≤ 1.5×", ratio <= 1.5)  # fmt: skip
    loop, _, loop_peak = measure(4000, "device")
    body, _, _ = measure(1, "unrolled")
    row("N = 4000 device loop vs its body", f"{loop:.2f} s / {body:.2f} s ({loop_peak >> 20} MB)",
        f"{loop / body:.1f}×", "≈ 1×", loop / body <= 2)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
