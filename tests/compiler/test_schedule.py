"""Stage 3: the cost model against the book's DMA examples, and the scheduler's rules on small LIRs."""

import pytest

from furiosa_opt import *
from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler.lir import DM_BASE, Buffer, Command, DmaWalk, Entry, Lir, Loop, Sequencer
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.resource import cost
from furiosa_opt.compiler.schedule import schedule
from furiosa_opt.configs.records import EngineConfig

# ---- the book's DMA examples (moving-tensors/dma-engine.md) ---------------------------------------

A, B, C = axes(A=8, B=8, C=256)
TA, TB, TC = axes(TA=256, TB=256, TC=256)


@device
def hbm_transpose(ctx: Context, x: HbmTensor[i8, m["1"], m["A, B, C"]]) -> HbmTensor[i8, m["1"], m["B, A, C"]]:
    return x.to_hbm(ctx.tdma, m["B, A, C"])


@device
def hbm_to_dm(ctx: Context, x: HbmTensor[i8, m["1"], m["TB, TA, TC"]]) -> None:
    x.to_dm(ctx.tdma, m["1 # 2"], m["TA / 4"], m["TA % 4, TB, TC"])


@device
def dm_to_dm(ctx: Context, x: HbmTensor[i8, m["1"], m["TB, TA, TC"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["TA / 4"], m["TA % 4, TB, TC"])
    dm.to_dm(ctx.tdma, m["TA / 4"], m["TB, TA % 4, TC"])


def dma_cycles(kernel) -> list[int]:
    return [c.cycles for c in cost(lower(trace(kernel)[0])) if c.command.kind == "dma"]


def test_book_dma_examples():
    assert dma_cycles(hbm_transpose) == [64 + 64 + 500]  # 64 packets of 256 B, reads and writes in series
    assert dma_cycles(hbm_to_dm) == [65_536 + 500]  # pipelined: max(reads, writes)
    assert dma_cycles(dm_to_dm) == [65_536 + 500, 131_072 + 500]  # DM → DM: reads + writes


# ---- scheduler rules on hand-made LIRs ---------------------------------------------------------------


def buffer(name, memory="sram", address=0, size=1024, region=""):
    return Buffer(name, f"%{name}", memory, "i32", ["1"], address, size, 0, 0, region)


def dma(index, context, src, dst, packets=8):
    return Command(
        index,
        context,
        "dma",
        index,
        "to_dm",
        f"k.py:{index}",
        [src],
        [dst],
        dma=DmaWalk(0, DM_BASE, 256, [Loop(packets, 256, 256)]),  # HBM → DM
    )


def exec_(index, context, inputs, outputs, steps=16, vector=False, stride=32):
    fetch = Sequencer(inputs[0], 0, [Entry(steps, stride, 1)], [Entry(8, 4, 1)], 32)
    engines = [EngineConfig("vector_fxp" if vector else "collect")]  # the cost model reads the stage only
    return Command(
        index,
        context,
        "exec",
        index,
        "commit",
        f"k.py:{index}",
        list(inputs),
        list(outputs),
        fetch=fetch,
        engines=engines,
    )


def plan(buffers, commands):
    result = schedule(Lir("k", 1, 8, buffers, commands, [], []))
    return {s.costed.command.index: (s.start, s.end) for s in result.slots}


def test_raw_waits_for_the_writer():
    slots = plan([buffer("H", "dram"), buffer("D")], [dma(0, "tdma", "H", "D"), exec_(1, "main", ["D"], ["D"])])
    assert slots[1][0] == slots[0][1]


def test_war_a_writer_waits_for_earlier_readers():
    bufs = [buffer("D"), buffer("E", address=4096), buffer("H", "dram")]
    slots = plan(bufs, [exec_(0, "main", ["D"], ["E"], steps=400), dma(1, "tdma", "H", "D")])
    assert slots[1][0] == slots[0][1]


def test_waw_keeps_program_order_across_contexts():
    bufs = [buffer("H", "dram"), buffer("G", "dram", address=1 << 20), buffer("D")]
    slots = plan(bufs, [dma(0, "tdma", "H", "D", packets=64), dma(1, "pdma", "G", "D")])
    assert slots[1][0] >= slots[0][1]


def test_independent_work_overlaps_across_contexts():
    bufs = [buffer("H", "dram"), buffer("D"), buffer("E", address=4096), buffer("F", address=8192)]
    slots = plan(bufs, [exec_(0, "main", ["E"], ["F"], steps=400), dma(1, "tdma", "H", "D")])
    assert slots[1][0] < slots[0][1]


def test_main_and_sub_share_the_vector_engine():
    bufs = [buffer(n, address=i * 4096) for i, n in enumerate("DEFG")]
    shared = plan(bufs, [exec_(0, "main", ["D"], ["E"], vector=True), exec_(1, "sub", ["F"], ["G"], vector=True)])
    assert shared[1][0] >= shared[0][1]
    apart = plan(bufs, [exec_(0, "main", ["D"], ["E"], vector=True), exec_(1, "sub", ["F"], ["G"])])
    assert apart[1][0] < apart[0][1]


def test_64_same_bank_accesses_occupy_dma():
    bufs = [buffer("D", size=1 << 16), buffer("E", address=1 << 16), buffer("H", "dram"), buffer("X", address=1 << 17)]
    starving = exec_(0, "main", ["D"], ["E"], steps=100, stride=128)  # every access in bank 0
    slots = plan(bufs, [starving, dma(1, "tdma", "H", "X")])
    assert slots[1][0] >= slots[0][1] or slots[0][0] >= slots[1][1]  # never side by side
    assert "DmaEngine" in cost(Lir("k", 1, 8, bufs, [starving], [], []))[0].contexts
    spread = exec_(0, "main", ["D"], ["E"], steps=100, stride=32)  # walks the banks
    slots = plan(bufs, [spread, dma(1, "tdma", "H", "X")])
    assert slots[1][0] < slots[0][1]


def test_trf_halves_let_a_load_overlap_a_contraction():
    half = 32768
    bufs = [
        buffer("W0", "trf", 0, half, "first_half"),
        buffer("W1", "trf", half, half, "second_half"),
        buffer("D"),
        buffer("E", address=4096),
        buffer("F", address=8192),
    ]
    loading_other_half = plan(bufs, [exec_(0, "main", ["D", "W0"], ["E"], steps=400), exec_(1, "sub", ["F"], ["W1"])])
    assert loading_other_half[1][0] < loading_other_half[0][1]
    same = [buffer("W0", "trf", 0, half, "first_half"), *bufs[1:]]
    loading_same_half = plan(same, [exec_(0, "main", ["D", "W0"], ["E"], steps=400), exec_(1, "sub", ["F"], ["W0"])])
    assert loading_same_half[1][0] >= loading_same_half[0][1]


@pytest.mark.parametrize("strategy", ["list", "inorder"])
def test_schedules_respect_every_dependency(strategy):
    from base_template.kernel.gemm_kernel import gemm_kernel
    from furiosa_opt.compiler.schedule import dependencies

    program = lower(trace(gemm_kernel)[0])
    result = schedule(program, strategy)
    slots = {s.costed.command.index: s for s in result.slots}
    costed = [s.costed for s in result.slots]
    for i, before in enumerate(dependencies(program, costed)):
        for j in before:
            assert slots[i].start >= slots[j].end
    assert result.makespan >= result.lower_bound
