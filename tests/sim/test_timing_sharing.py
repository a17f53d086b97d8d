"""Commands that run at once share DM banks (and DMA engines, HBM channels) in the simulator's timing.

The book (scheduling/schedule.md, "Main/sub-context contention") gives the two ends: a main and a sub
command on different banks take the longer of their times, on the same bank the sum; a DMA, served last and
holding all 16 banks of a slice for each request, waits while a fetch keeps one of them busy. These tests
give `_run` commands with those loads and check the times it gives, then look at a real kernel.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.resource import Costed
from furiosa_opt.sim.timing import _run, simulate

BANKS = 16


def command(index: int, context: str, work: int, banks: dict[int, float], latency: int = 0) -> Costed:
    """A command of `work` cycles after `latency` that holds DM bank b for `banks[b]` of them."""
    load = np.zeros(BANKS)
    for bank, cycles in banks.items():
        load[bank] = cycles
    fake = SimpleNamespace(index=index, context=context)
    return Costed(fake, latency + work, (), (), context, latency=latency, shared={"dm bank": load})


def run(*commands: Costed) -> dict[int, tuple[int, int]]:
    queues = {"main": [], "sub": [], "tdma": [], "pdma": []}
    for c in commands:
        queues[c.command.context].append(c.command.index)
    start, end = _run("k", queues, {c.command.index: [] for c in commands}, {c.command.index: c for c in commands})
    return {i: (start[i], end[i]) for i in start}


def test_main_and_sub_on_different_banks_take_the_longer_time():
    times = run(
        command(0, "main", 1000, {b: 1000 for b in range(8)}), command(1, "sub", 600, {b: 600 for b in range(8, 16)})
    )
    assert times == {0: (0, 1000), 1: (0, 600)}


def test_main_and_sub_on_the_same_bank_take_the_sum():
    times = run(command(0, "main", 1000, {3: 1000}), command(1, "sub", 600, {3: 600}))
    assert times == {0: (0, 1000), 1: (0, 1600)}  # main is served first; sub waits for the bank


def test_a_fetch_holding_a_bank_half_the_time_halves_the_dma_beside_it():
    main = command(0, "main", 2000, {5: 1000})  # bank 5 busy every other cycle
    dma = command(1, "tdma", 1000, {b: 1000 for b in range(BANKS)}, latency=500)  # every request holds all 16
    times = run(main, dma)
    # from cycle 500 to 2000 the DMA gets half of bank 5: 750 of its 1000 cycles of work; the rest alone
    assert times == {0: (0, 2000), 1: (0, 2250)}


def test_a_dma_that_needs_no_bank_of_the_fetch_runs_at_full_speed():
    main = command(0, "main", 2000, {5: 2000})
    dma = command(1, "tdma", 1000, {}, latency=500)  # HBM → HBM: no DM bank
    dma.shared = {"hbm channel": np.full(32, 1000.0)}
    assert run(main, dma) == {0: (0, 2000), 1: (0, 1500)}


def test_alone_every_command_takes_its_estimate():
    """Where nothing runs beside a command that needs what it needs, the simulation and the estimate agree:
    gemm's commands each take their cycles alone, and the makespan is the static one."""
    from base_template.kernel.gemm_kernel import gemm_kernel

    result = compile_kernel(gemm_kernel)
    timing = simulate(read_edf(result.edf))
    assert timing.makespan == result.plan.makespan
    for index, item in timing.costed.items():
        if item.cycles:
            assert timing.end[index] - timing.start[index] == item.cycles


def test_the_decoder_s_weight_load_waits_for_the_banks_of_the_commands_beside_it():
    """In the transformer's decoder, the load at kernel.py:480 runs while main and sub commands hold DM
    banks it needs: it takes longer than alone, and the simulated makespan exceeds the static one."""
    from transformer.kernel import decoder

    result = compile_kernel(decoder)
    timing = simulate(read_edf(result.edf))
    loads = [c for c in timing.costed.values() if c.price and c.command.loc.endswith("kernel.py:480")]
    assert any(timing.end[c.command.index] - timing.start[c.command.index] > c.cycles for c in loads)
    assert timing.makespan > result.plan.makespan
    assert timing.makespan == pytest.approx(result.plan.makespan, rel=0.01)
