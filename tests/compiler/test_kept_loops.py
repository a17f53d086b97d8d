"""Device loops stage 2 keeps (the body lowered once, run `count` times) and the ones it unrolls, with the
reason recorded: each kernel runs on both backends and must agree with the CPU backend and a numpy oracle;
a kept loop's static and simulated makespans agree (one pass timed per set of commands its passes run)."""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.lir import DM_BASE
from furiosa_opt.sim.timing import simulate

R, E, W = axes(R=256, E=8, W=48)
PASSES = 4000


def add_one(ctx: Context, dm: DmTensor) -> DmTensor:
    return (
        ctx.main.begin(dm.view()).fetch(m["1"], m["E"]).fetch_cast(i32).collect(m["1"], m["E"])
        .vector_init().vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final().commit_trim(m["E"]).commit(m["E"])
    )  # fmt: skip


@device(chip=1)
def long_chain(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    for _ in device_range(PASSES):
        dm = add_one(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["R, E"])


@device(chip=1)
def nested_chain(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    for _ in device_range(2):  # unrolled: it holds a loop; each copy of the inner loop is kept
        for _ in device_range(3):
            dm = add_one(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["R, E"])


@device(chip=1)
def uneven_views(ctx: Context, x: HbmTensor[i8, m["1"], m["R, W"]]) -> HbmTensor[i8, m["1"], m["R, W"]]:
    """Pass 0 copies W 0..15, passes 1 and 2 both W 16..31 (0, 16, 16: not one step apart); W 32.. stay 0."""
    source = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["W"])
    out = DmTensor.new(i8, m["1"], m["1 # 2"], m["R"], m["W"])
    out.view_mut().memset(0, ctx.sub)
    for i in device_range(3):
        start = select(i == 0, 0, 16)
        part = source.view().tile(start, m["W"], 16, m["W = 16 # 48"])
        part.to_dm_view(ctx.tdma, out.view_mut().tile(start, m["W"], 16, m["W = 16 #{!} 48"]))
    return out.to_hbm(ctx.tdma, m["R, W"])


@device(chip=1)
def read_twice(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    first = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    dm = first
    for _ in device_range(3):
        dm = add_one(ctx, dm)
    return add_one(ctx, first).to_hbm(ctx.tdma, m["R, E"])  # the value the loop started from, read again


def run_both(kernel, x: np.ndarray, dtype, mapping) -> np.ndarray:
    results = []
    for on in ("cpu", "npu"):
        with backend(on) as launch_, Context.acquire() as ctx:
            out = launch_(kernel, ctx, HostTensor.from_numpy(x, dtype, mapping).to_hbm(ctx.pdma))
            results.append(out.to_host(ctx.pdma).to_numpy())
    np.testing.assert_array_equal(results[1], results[0])  # the simulator equals the CPU backend
    return results[0]


def test_a_long_chain_keeps_its_loop_and_runs_every_pass():
    result = compile_kernel(long_chain)
    assert result.ok, result.diagnostics
    (loop,) = result.lir.loops
    assert loop.count == PASSES and result.lir.unrolled == []
    assert sum(c.kind == "exec" for c in result.lir.commands) == 1  # the body once
    body = next(c for c in result.lir.commands if c.kind == "exec")
    store = result.plan.slots[-1]  # after every pass: the loop starts when the load ends, each pass one add
    load_end = max(s.end for s in result.plan.slots if s.costed.command.index < loop.first)
    assert store.start == load_end + PASSES * result.plan.slots[body.index].costed.cycles
    assert simulate(read_edf(result.edf)).makespan == result.plan.makespan
    x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
    np.testing.assert_array_equal(run_both(long_chain, x, i32, m["R, E"]), x + PASSES)


def test_an_outer_loop_holding_a_loop_is_unrolled_and_each_inner_copy_kept():
    result = compile_kernel(nested_chain)
    assert result.ok, result.diagnostics
    (outer,) = [i for i, op in enumerate(result.visa.ops) if op.opcode == "loop"][:1]
    assert result.lir.unrolled == [[outer, 2, "its body holds a device loop"]]
    assert [loop.count for loop in result.lir.loops] == [3, 3]
    assert simulate(read_edf(result.edf)).makespan == result.plan.makespan
    x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
    np.testing.assert_array_equal(run_both(nested_chain, x, i32, m["R, E"]), x + 6)


def test_a_view_that_moves_unevenly_makes_its_loop_unrolled():
    result = compile_kernel(uneven_views)
    assert result.ok, result.diagnostics
    assert result.lir.loops == []
    ((op, count, why),) = result.lir.unrolled
    assert result.visa.ops[op].opcode == "loop" and count == 3
    assert why.startswith("a view moves by unequal steps from pass to pass")
    x = np.random.default_rng(1).integers(-128, 128, (R.size, W.size), dtype=np.int8)
    expected = np.zeros_like(x)
    expected[:, :32] = x[:, :32]
    np.testing.assert_array_equal(run_both(uneven_views, x, i8, m["R, W"]), expected)


def test_a_carried_value_read_elsewhere_makes_its_loop_unrolled():
    result = compile_kernel(read_twice)
    assert result.ok, result.diagnostics
    ((_, count, why),) = result.lir.unrolled
    assert count == 3 and why.endswith("is read elsewhere too") and result.lir.loops == []
    x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
    np.testing.assert_array_equal(run_both(read_twice, x, i32, m["R, E"]), x + 1)


def chain_of(ctx: Context, x: HbmTensor, count: int) -> HbmTensor:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    for _ in device_range(count):
        dm = add_one(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["R, E"])


@device(chip=1)
def chain_of_one(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    return chain_of(ctx, x, 1)


@device(chip=1)
def chain_of_five(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    return chain_of(ctx, x, 5)


@pytest.mark.parametrize(("kernel", "count"), [(chain_of_one, 1), (chain_of_five, 5), (long_chain, PASSES)])
def test_the_carried_value_ends_in_the_slot_the_last_pass_wrote(kernel, count):
    lir = compile_kernel(kernel).lir
    store = lir.commands[-1]
    (carried,) = [b for b in lir.buffers if b.slots == 2]
    assert store.opcode == "to_hbm" and store.dma.src_base == DM_BASE + carried.address + (count % 2) * carried.bytes
    if kernel is not long_chain:
        x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
        np.testing.assert_array_equal(run_both(kernel, x, i32, m["R, E"]), x + count)


@device(chip=1)
def read_after_its_loop(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    """A second kept loop reads the value the first one carried: every pass reads the slot the first
    loop's last pass wrote."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    for _ in device_range(3):
        dm = add_one(ctx, dm)
    out = DmTensor.new(i32, m["1"], m["1 # 2"], m["R"], m["E"])
    for _ in device_range(2):
        dm.view().to_dm_view(ctx.tdma, out.view_mut())
    return out.to_hbm(ctx.tdma, m["R, E"])


def test_a_later_loop_reads_a_carried_value_where_its_loop_left_it():
    result = compile_kernel(read_after_its_loop)
    assert result.ok, result.diagnostics
    assert [loop.count for loop in result.lir.loops] == [3, 2] and result.lir.unrolled == []
    (carried,) = [b for b in result.lir.buffers if b.slots == 2]
    second = result.lir.loops[1]
    (copy,) = [c for c in result.lir.commands[second.first : second.last + 1] if c.kind == "dma"]
    assert copy.dma.src_base == DM_BASE + carried.address + 1 * carried.bytes and copy.offsets == []  # 3 passes: slot 1
    x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
    np.testing.assert_array_equal(run_both(read_after_its_loop, x, i32, m["R, E"]), x + 3)
