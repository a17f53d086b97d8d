"""The memory model prices each DMA command from its own address streams (memsys.dma): kernels with the
access patterns of the book's examples (moving-tensors/dma-engine.md, Examples 4 and 5; memory-performance.md)
reproduce its figures, and what the book calls a pathology costs what it says and is reported with its fix.

The schedule's estimate is this price (test_schedule.py pins Examples 1–3 there: 628, 66,036, 131,572);
`--dump-summary` and the schedule JSON report what decides it. These tests time the compiled commands;
nothing moves data (Example 4 reads 128 MiB).
"""

import math

import pytest

from furiosa_opt import *
from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.resource import cost
from furiosa_opt.compiler.schedule import schedule, summary
from furiosa_opt.memsys.findings import findings


def dmas(kernel):
    """(command, memory model price) of each Tensor DMA of the kernel, in program order."""
    return [(item.command, item.price) for item in cost(lower(trace(kernel)[0])) if item.price]


def flat_model(command) -> int:
    """The estimate before the memory model: one request (≤ 256 bytes of a packet) a cycle, plus startup."""
    dma = command.dma
    return math.prod(loop.size for loop in dma.loops) * -(-dma.packet // 256) + 500


# ---- Example 4: HBM bank conflicts ----------------------------------------------------------------------
# Source m![A, B, C] in HBM; the destination puts A on the slices (A % 32 within a DMN, A / 32 choosing the
# DMN of a pair), so the DMA, walking slices innermost to take turns between DMNs, steps A fastest: HBM
# stride 2^21, the row bits. Every engine's next request reopens a row in its bank.

A, B, C = axes(A=64, B=2048, C=1024)


@device
def rows_conflict(ctx: Context, x: HbmTensor[i8, m["1"], m["A, B, C"]]) -> None:
    x.to_dm(ctx.tdma, m["B / 1024"], m["B / 256 % 4, A"], m["B % 256, C"])


@device
def rows_kept(ctx: Context, x: HbmTensor[i8, m["1"], m["B % 256, A, B / 256, C"]]) -> None:
    """The same move from an HBM layout where what the engines and the slice walk step (B / 256, A) strides
    1 KiB and 8 KiB: channels, bank groups and banks, never a row. (`m["B, A, C"]` is no fix: B / 256 would
    stride 16 MiB, and the eight engines would meet in the same banks on other rows.)"""
    x.to_dm(ctx.tdma, m["B / 1024"], m["B / 256 % 4, A"], m["B % 256, C"])


def test_the_bank_conflict_example_takes_the_books_655_860_cycles():
    ((_, move),) = dmas(rows_conflict)
    assert move.cycles == pytest.approx(655_860, rel=0.05)
    assert move.bottleneck == "HBM" and move.engines == 8
    read, _ = move.stats()
    assert read.channels_touched == 32 and read.row_switch_share > 0.99


def test_two_layouts_the_flat_model_priced_alike_are_ten_times_apart():
    ((slow_command, slow),), ((fast_command, fast),) = dmas(rows_conflict), dmas(rows_kept)
    assert flat_model(slow_command) == flat_model(fast_command) == 524_288 + 500  # one request a cycle, any rows
    # 128 MiB at the HBM peak: 16,384 units a channel × 16/3 cycles (the row opens of a sequential walk
    # overlap other banks' data). The book's "roughly 10×" sets Example 4 against 65,536 cycles, eight
    # engines at 256 B a cycle, which is 2 TB/s, past its own 1.5 TB/s HBM peak: 40 / (16/3) = 7.5× is the most.
    assert fast.cycles == pytest.approx(16_384 * 16 / 3 + 500, abs=1)
    assert fast.bottleneck == "HBM"
    assert slow.cycles / fast.cycles > 7
    assert [f.rule for f in _findings(slow)] == ["hbm-row-conflicts"]
    assert _findings(fast) == []


# ---- Example 5: the missing stack bit -------------------------------------------------------------------
# Half of D (256 of 512 bytes) of m![A, B, C, D]: C strides 512 bytes, so consecutive units never toggle
# address bit 8 and every request lands in one stack's 16 channels.

A5, B5, C5, D5 = axes(A5=8, B5=64, C5=8, D5=512)


@device
def one_stack(ctx: Context, x: HbmTensor[i8, m["1"], m["A5, B5, C5, D5"]]) -> None:
    half = x.view().tile(0, m["D5"], 256, m["A5, B5, C5, D5 = 256 # 512"])
    half.to_dm(ctx.tdma, m["A5 / 4"], m["A5 % 4, B5"], m["C5, D5 = 256"])


def test_the_missing_stack_bit_example_takes_the_books_1_857_cycles():
    ((_, move),) = dmas(one_stack)
    assert move.cycles == pytest.approx(1_857, rel=0.05)
    read, _ = move.stats()
    assert (read.channels_touched, read.stack_toggles) == (16, False)
    (finding,) = _findings(move)
    assert finding.rule == "hbm-channels" and "bit 8" in finding.shown


# ---- partial writes -------------------------------------------------------------------------------------

R, W = axes(R=256, W=64)


@device
def rows_of_128_bytes(ctx: Context, x: HbmTensor[bf16, m["1"], m["R, W"]]) -> HbmTensor[bf16, m["1"], m["R, W"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["W"])
    return dm.to_hbm(ctx.tdma, m["R, W"])


def test_partial_hbm_writes_pay_the_read_modify_write():
    (_, load), (store_command, store) = dmas(rows_of_128_bytes)
    assert store_command.dma.packet == 128  # one slice's row: half a 256-byte unit
    _, write = store.stats()
    assert write.partial == 256
    assert store.cycles - 500 > 10 * (load.cycles - 500)  # the same bytes, read whole, written half a unit at a time
    assert "hbm-partial-write" in [f.rule for f in _findings(store)]


def test_the_compile_summary_reports_every_dma_with_its_findings():
    plan = schedule(lower(trace(rows_conflict)[0]))
    (dma,) = summary(plan)["dma"]
    assert dma["route"] == "HBM→DM" and dma["bottleneck"] == "HBM" and dma["engines"] == 8
    assert dma["cycles"] == pytest.approx(655_860, rel=0.05)
    (slot,) = [s for s in plan.slots if s.costed.price]
    assert slot.end - slot.start == dma["cycles"]  # the schedule prices the DMA by the same model
    assert dma["read"]["channels"] == 32 and dma["read"]["row_conflict_share"] > 0.99
    assert dma["write"]["memory"] == "dm" and dma["write"]["dmns"] == 16
    assert [f["rule"] for f in dma["findings"]] == ["hbm-row-conflicts"]


def _findings(price):
    return findings(price)


# ---- Fetch packets: one 30-byte tensor in 15, 3 and 1 cycles (fetch-engine.md, "Packet padding") ---------
# A fetch reads a packet in accesses of its `read_size`, which a larger padded packet raises: 15 packets of
# 8 bytes, 3 of 16, 1 of 32. The DM tensor is made in the kernel (as the book's `Tensor::zero()`): 30 bytes
# cannot be a DMA's tail (dma-tail-alignment).

F1, F2, F3 = axes(F1=3, F2=5, F3=2)


@device
def packet_c(ctx: Context) -> None:
    dm = DmTensor.new(f8e4m3, m["1"], m["1 # 2"], m["1 # 256"], m["F1, F2, F3"])
    stream = ctx.main.begin(dm.view()).fetch(m["F1, F2"], m["F3 # 8"]).collect(m["F1, F2"], m["F3 # 32"])
    stream.commit_trim(m["F3 # 8"]).commit(m["F1, F2, F3 # 8"])


@device
def packet_bc(ctx: Context) -> None:
    dm = DmTensor.new(f8e4m3, m["1"], m["1 # 2"], m["1 # 256"], m["F1, F2, F3"])
    stream = ctx.main.begin(dm.view()).fetch(m["F1"], m["[F2, F3] # 16"]).collect(m["F1"], m["[F2, F3] # 32"])
    stream.commit_trim(m["[F2, F3] # 16"]).commit(m["F1, [F2, F3] # 16"])


@device
def packet_abc(ctx: Context) -> None:
    dm = DmTensor.new(f8e4m3, m["1"], m["1 # 2"], m["1 # 256"], m["F1, F2, F3"])
    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["[F1, F2, F3] # 32"]).collect(m["1"], m["[F1, F2, F3] # 32"])
    stream.commit_trim(m["[F1, F2, F3] # 32"]).commit(m["[F1, F2, F3] # 32"])


@pytest.mark.parametrize(
    ("kernel", "accesses", "read_size"), [(packet_c, 15, 8), (packet_bc, 3, 16), (packet_abc, 1, 32)]
)
def test_a_30_byte_fetch_takes_15_3_or_1_cycles_by_packet(kernel, accesses, read_size):
    from furiosa_opt.compiler.driver import compile_kernel
    from furiosa_opt.compiler.edf import read_edf
    from furiosa_opt.sim.timing import simulate

    result = compile_kernel(kernel)
    assert result.ok, [d.rendered() for d in result.diagnostics]
    (slot,) = [s for s in result.plan.slots if s.costed.command.kind == "exec"]
    assert slot.costed.command.fetch.access == read_size
    assert slot.costed.work == accesses  # past the pipeline's fill: one access a cycle
    timing = simulate(read_edf(result.edf))  # the binary's command, timed by the simulator
    index = slot.costed.command.index
    assert timing.end[index] - timing.start[index] - timing.costed[index].latency == accesses


# ---- tune chooses between the two layouts of Example 4 ---------------------------------------------------

TUNABLE_ROWS = """
from furiosa_opt import *
from furiosa_opt.tune import space

A, B, C = axes(A=64, B=2048, C=1024)
choices = space(layout=["A, B, C", "B % 256, A, B / 256, C"])  # rows_conflict's layout first (the default)


@device
def rows(ctx: Context, x: HbmTensor[i8, m["1"], m[choices.layout]]) -> None:
    x.to_dm(ctx.tdma, m["B / 1024"], m["B / 256 % 4, A"], m["B % 256, C"])
"""


def test_tune_over_both_layouts_picks_the_one_that_keeps_its_rows(tmp_path):
    import json
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from furiosa_opt.cli.new import create

    name = f"rw_{uuid.uuid4().hex[:8]}"
    root = create(name, tmp_path)
    (root / "src" / name / "rows.py").write_text(TUNABLE_ROWS)
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(tmp_path / "out")}
    tool = Path(sys.executable).with_name("furiosa-opt")
    done = subprocess.run([str(tool), "tune", "rows", "--workers", "1"], cwd=root, env=environment,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    study = next((tmp_path / "out" / "tune").glob("*rows/study.jsonl")).read_text().splitlines()
    makespans = {r["choices"]["layout"]: r["makespan"] for r in map(json.loads, study) if "choices" in r}
    ((_, conflict),), ((_, kept),) = dmas(rows_conflict), dmas(rows_kept)  # the same moves, this module's kernels
    assert makespans == {"A, B, C": conflict.cycles, "B % 256, A, B / 256, C": kept.cycles}
    tuned = json.loads((root / "src" / name / "rows.tuned.json").read_text())
    assert tuned["choices"] == {"layout": "B % 256, A, B / 256, C"}
