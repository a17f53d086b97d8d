"""The steps of stage 2 on their own (compiler/lower/): the buffer table (buffers.py), the kept loops' state
(kept.py), the command list (ops.py) and the filling of a command once placed (fill.py). Each test starts
from a small kernel's vISA, as tracing prints it (written here rather than traced from `@device` functions,
which the differential harness would pick up as kernels of its own), replayed as stage 2 replays it, and
checks numbers worked out by hand: byte counts, strides, and runtime programs (`[1, 0]` is the loop's index,
`[0, n]` the constant n, then 3 sub, 4 mul, 6 mod, 7 eq, 9 lt: docs/edf.md, "Runtime programs")."""

import pytest

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.lir import DM_BASE, SLICE_STRIDE, Command, DmaWalk, Loop
from furiosa_opt.compiler.lower.addresses import dma_loops, dram_layout, sram_layout
from furiosa_opt.compiler.lower.buffers import BufferTable
from furiosa_opt.compiler.lower.fill import Filler
from furiosa_opt.compiler.lower.kept import KeptLoops, Unkeepable
from furiosa_opt.compiler.lower.loops import plan_loops
from furiosa_opt.compiler.lower.opcodes import VIEW_OPS
from furiosa_opt.compiler.lower.ops import OpLowering
from furiosa_opt.compiler.replay import replay_objects

# `dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"]); return dm.to_hbm(ctx.tdma, m["R, E"])`: one row of E
# i32 (32 bytes) per slice, R slices.
COPY = """kernel steps.copy chip=1 pe=8
axes R=256 E=8
arg x %0: hbm<i32, [1], [R, E]>
%1: view<i32, [1], [R, E]> = view %0  // steps.py:1
%2: dm<i32, [1], [1 # 2], [R], [E]> = to_dm %1 ctx=tdma cluster=[1 # 2] slice=[R] element=[E]  // steps.py:1
%3: view<i32, [1], [1 # 2], [R], [E]> = view %2  // steps.py:2
%4: hbm<i32, [1], [R, E]> = to_hbm %3 ctx=tdma element=[R, E]  // steps.py:2
return %4
"""

# The copy with `for _ in device_range(3): dm = add_one(ctx, dm)` between (a pipeline adding 1 to each
# cell): the loop's index is %3, %4 the carried value (from %2), the commit %15 its back edge.
CARRIED = """kernel steps.carried chip=1 pe=8
axes R=256 E=8
arg x %0: hbm<i32, [1], [R, E]>
%1: view<i32, [1], [R, E]> = view %0
%2: dm<i32, [1], [1 # 2], [R], [E]> = to_dm %1 ctx=tdma cluster=[1 # 2] slice=[R] element=[E]
%3: scalar<i32> = loop count=3
%4: dm<i32, [1], [1 # 2], [R], [E]> = carried %2
%5: view<i32, [1], [1 # 2], [R], [E]> = view %4
%6: stream<i32, [1], [1 # 2], [R], [1], [E]> = begin %5 ctx=main
%7: stream<i32, [1], [1 # 2], [R], [1], [E]> = fetch %6 time=[1] packet=[E]
%8: stream<i32, [1], [1 # 2], [R], [1], [E]> = fetch_cast %7 dtype=i32
%9: stream<i32, [1], [1 # 2], [R], [1], [E]> = collect %8 time=[1] packet=[E]
%10: vector<i32, [1], [1 # 2], [R], [1], [E]> = vector_init %9
%11: vector<i32, [1], [1 # 2], [R], [1], [E]> = vector_intra_slice_tag %10 mode=TagMode.Zero
%12: vector<i32, [1], [1 # 2], [R], [1], [E]> = vector_fxp %11 op=FxpBinaryOp.AddFxp operand=1 mode=BinaryArgMode.Mode01
%13: stream<i32, [1], [1 # 2], [R], [1], [E]> = vector_final %12
%14: stream<i32, [1], [1 # 2], [R], [1], [E]> = commit_trim %13 packet=[E]
%15: dm<i32, [1], [1 # 2], [R], [E]> = commit %14 element=[E]
end_loop %15
%16: view<i32, [1], [1 # 2], [R], [E]> = view %15
%17: hbm<i32, [1], [R, E]> = to_hbm %16 ctx=tdma element=[R, E]
return %17
"""

# An i8 tensor copied W 16 at a time into a fresh DM tensor %3, pass i (the index %4) from START: the tile
# %6 of %5 into the tile %8 of %7.
TILES = """kernel steps.tiles chip=1 pe=8
axes R=256 W=48
arg x %0: hbm<i8, [1], [R, W]>
%1: view<i8, [1], [R, W]> = view %0
%2: dm<i8, [1], [1 # 2], [R], [W]> = to_dm %1 ctx=tdma cluster=[1 # 2] slice=[R] element=[W]
%3: dm<i8, [1], [1 # 2], [R], [W]> = dm_new dtype=i8 chip=[1] cluster=[1 # 2] slice=[R] element=[W]
%4: scalar<i32> = loop count=3
%5: view<i8, [1], [1 # 2], [R], [W]> = view %2
%6: view<i8, [1], [1 # 2], [R], [W = 16 # 48]> = tile %5 start=START index=[W] length=16 element=[W = 16 # 48]
%7: view_mut<i8, [1], [1 # 2], [R], [W]> = view_mut %3
%8: view_mut<i8, [1], [1 # 2], [R], [W = 16 #{!} 48]> = tile %7 start=START index=[W] length=16 element=[W = 16 #{!} 48]
to_dm_view %6 %8 ctx=tdma
end_loop
%9: view<i8, [1], [1 # 2], [R], [W]> = view %3
%10: hbm<i8, [1], [R, W]> = to_hbm %9 ctx=tdma element=[R, W]
return %10
"""
EVEN = TILES.replace("START", "scalar(mul %4@3 16)")  # W 0, 16, 32: 16 bytes apart
UNEVEN = TILES.replace("START", "scalar(sel (eq %4@3 0) 0 16)")  # W 0, 16, 16

# W 0..15 of a fresh DM tensor %3 (T2) written, then all of it read: W 16.. were never written.
HALF_WRITTEN = """kernel steps.half_written chip=1 pe=8
axes R=256 W=48
arg x %0: hbm<i8, [1], [R, W]>
%1: view<i8, [1], [R, W]> = view %0
%2: dm<i8, [1], [1 # 2], [R], [W]> = to_dm %1 ctx=tdma cluster=[1 # 2] slice=[R] element=[W]
%3: dm<i8, [1], [1 # 2], [R], [W]> = dm_new dtype=i8 chip=[1] cluster=[1 # 2] slice=[R] element=[W]
%4: view<i8, [1], [1 # 2], [R], [W]> = view %2
%5: view<i8, [1], [1 # 2], [R], [W = 16 # 48]> = tile %4 start=0 index=[W] length=16 element=[W = 16 # 48]
%6: view_mut<i8, [1], [1 # 2], [R], [W]> = view_mut %3
%7: view_mut<i8, [1], [1 # 2], [R], [W = 16 #{!} 48]> = tile %6 start=0 index=[W] length=16 element=[W = 16 #{!} 48]
to_dm_view %5 %7 ctx=tdma
%8: view<i8, [1], [1 # 2], [R], [W]> = view %3
%9: hbm<i8, [1], [R, W]> = to_hbm %8 ctx=tdma element=[R, W]
return %9
"""


def replayed(text: str):
    """(replayed vISA, its objects, the kernel's op behind each op), as stage 2 replays the kernel."""
    kernel = visa.parse_kernel(text)
    keep, _ = plan_loops(kernel.ops, {})
    origins: list[int] = []
    ir, objects = replay_objects(kernel, unroll=True, keep=keep, origins=origins)
    return ir, objects, origins


def lowered_ops(text: str):
    """(replayed vISA, buffer table, kept loops, command list) once every op is lowered, before placement."""
    ir, objects, origins = replayed(text)
    table, kept = BufferTable(objects), KeptLoops(origins)
    ops = OpLowering(ir, table, kept, None)
    for value in ir.args:
        ops.buffer(value, None)
    for op in ir.ops:
        ops.lower(op)
    return ir, table, kept, ops


def loop_at(ir) -> int:
    (at,) = [i for i, op in enumerate(ir.ops) if op.opcode == "loop"]
    return at


def commands(count: int) -> list[Command]:
    return [Command(i, "tdma", "dma", i, "to_dm", None) for i in range(count)]


# ---- the buffer table -----------------------------------------------------------------------------------


def test_each_value_that_makes_memory_gets_a_fresh_buffer_named_in_turn():
    ir, objects, _ = replayed(COPY)
    table = BufferTable(objects)
    to_dm = ir.ops[1]
    assert table.fresh(ir.args[0], None, 0) == "T0"
    assert table.fresh(to_dm.results[0], to_dm, 1) == "T1"
    argument, dm = table.buffers["T0"], table.buffers["T1"]
    assert (argument.value, argument.memory, argument.bytes, argument.first) == ("%0", "dram", 256 * 8 * 4, -1)
    assert (dm.value, dm.memory, dm.bytes, dm.first) == ("%2", "sram", 8 * 4, 1)  # per slice: E i32
    assert dm.levels == ["1", "1 # 2", "R", "E"] and dm.slots == 1
    assert table.where["T0"] is None and table.where["T1"].line == to_dm.loc.line


def test_a_view_takes_the_buffer_of_its_base():
    ir, objects, _ = replayed(COPY)
    table = BufferTable(objects)
    table.fresh(ir.args[0], None, 0)
    assert ir.ops[0].opcode == "view" and ir.ops[0].operands == ("%0",)
    assert table.alias("%1", "%0") == "T0" and table.base_of("%1") == "T0"
    assert list(table.buffers) == ["T0"]  # no buffer of its own
    assert table.value_of(objects["%1"]) == "%1" and table.buffer_of(objects["%0"]) is table.buffers["T0"]


def test_a_carried_value_takes_the_buffer_of_its_first_value_in_two_slots():
    ir, objects, _ = replayed(CARRIED)
    table = BufferTable(objects)
    table.fresh(ir.args[0], None, 0)
    table.fresh(ir.ops[1].results[0], ir.ops[1], 1)  # %2 = to_dm
    assert table.carry("%4", "%2") == "T1" and table.buffers["T1"].slots == 2
    assert table.alias("%15", "%4") == "T1"  # the back edge: the next pass's place of %4
    assert list(table.buffers) == ["T0", "T1"]


# ---- the kept loops ---------------------------------------------------------------------------------------


def test_a_kept_loop_is_recorded_with_its_first_and_last_command_count_and_index():
    ir, _, _ = replayed(EVEN)
    origins = [100 + k for k in range(len(ir.ops))]  # made up: the kernel's op behind each replayed op
    kept, made = KeptLoops(origins), commands(7)
    kept.start(ir.ops, loop_at(ir), 2)
    kept.close(made)
    assert kept.loops == [(made[2], made[6], 3, "%4")]
    assert kept.kernel_op == {"%4": 103}  # the loop is replayed op 3
    assert [kept.enclosing(c) for c in made] == ["", "", "%4", "%4", "%4", "%4", "%4"]


def test_a_loop_whose_body_makes_no_command_is_not_kept():
    ir, _, origins = replayed(EVEN)
    kept, made = KeptLoops(origins), commands(7)
    kept.start(ir.ops, loop_at(ir), 7)
    kept.close(made)
    assert kept.loops == [] and kept.open is None


def test_a_carried_value_takes_one_slot_per_pass_and_the_back_edge_the_other():
    ir, _, origins = replayed(CARRIED)
    kept = KeptLoops(origins)
    kept.start(ir.ops, loop_at(ir), 2)
    kept.carry("%4", "%2")
    assert kept.back_edge("%2") is None  # not a back edge
    assert kept.back_edge("%15") == "%4"
    assert kept.slot("%4", "%3").program(["%3"]) == [1, 0, 0, 2, 6]  # index % 2
    assert kept.slot("%15", "%3").program(["%3"]) == [0, 1, 1, 0, 0, 2, 6, 3]  # 1 - index % 2
    assert (kept.slot("%4", ""), kept.slot("%15", "")) == (0, 1)  # after 3 passes the last write is in slot 1
    assert kept.slot("%2", "%3") == 0  # a value no loop carries


def test_a_command_under_ifs_runs_where_all_their_conditions_hold():
    ir, _, origins = replayed(CARRIED)
    kept = KeptLoops(origins)
    assert kept.guard() is None
    kept.start(ir.ops, loop_at(ir), 0)
    index = kept.open.index
    kept.guard_on(index == 0)
    assert kept.guard() == [1, 0, 0, 0, 7]  # index == 0
    kept.guard_on(index < 2)
    assert kept.guard() == [1, 0, 0, 0, 7, 1, 0, 0, 2, 9, 4]  # (index == 0) * (index < 2)
    kept.guard_off()
    kept.guard_off()
    assert kept.guard() is None


def follow_body(text: str):
    """The kept loops' state once the views of the loop body of `text` are followed (the loop opened first)."""
    ir, objects, origins = replayed(text)
    kept, at = KeptLoops(origins), loop_at(ir)
    kept.start(ir.ops, at, 0)
    for op in ir.ops[at + 1 :]:
        if op.opcode in VIEW_OPS:
            kept.follow(op, objects)
    kept.close(commands(1))
    return kept


def test_a_view_that_moves_by_a_constant_step_becomes_a_runtime_offset():
    kept = follow_body(EVEN)
    assert sorted(kept.per_pass) == ["%6", "%8"]  # the tiles; `view %2` (%5) and `view_mut %3` stay put
    assert [view.window for view in kept.per_pass["%6"]] == [0, 16, 32]
    at = dict(zip(map(id, kept.per_pass["%6"]), (0x100, 0x110, 0x120), strict=True))
    assert kept.travel("%6", "%4", lambda view: at[id(view)]).program(["%4"]) == [1, 0, 0, 16, 4]  # index * 16
    assert kept.travel("%5", "%4", lambda view: at[id(view)]) == 0
    assert kept.travel("%6", "%4", lambda view: 0x100) == 0  # the same address every pass


def test_a_view_that_moves_by_unequal_steps_makes_its_loop_one_to_unroll():
    kept = follow_body(UNEVEN)
    assert [view.window for view in kept.per_pass["%6"]] == [0, 16, 16]
    with pytest.raises(Unkeepable) as refused:
        kept.travel("%6", "%4", lambda view: 0x100 + view.window)
    assert refused.value.loop == 3
    assert refused.value.why == "a view moves by unequal steps from pass to pass ([256, 272, 272] … bytes)"


# ---- the command list -------------------------------------------------------------------------------------


def test_each_op_becomes_its_command_with_the_buffers_it_reads_and_writes():
    ir, table, _, ops = lowered_ops(COPY)
    listed = [(c.index, c.kind, c.opcode, c.inputs, c.outputs) for c in ops.commands]
    assert listed == [
        (0, "view", "view", ["T0"], []),
        (1, "dma", "to_dm", ["T0"], ["T1"]),
        (2, "view", "view", ["T1"], []),
        (3, "dma", "to_hbm", ["T1"], ["T2"]),
    ]
    to_dm = ops.pending[id(ops.commands[1])]
    assert to_dm.op is ir.ops[1] and to_dm.source is table.objects["%1"] and to_dm.target is table.objects["%2"]
    assert set(ops.pending) == {id(ops.commands[1]), id(ops.commands[3])}  # views need nothing more


def test_a_kept_loop_body_writes_its_carried_value_in_place():
    _, table, kept, ops = lowered_ops(CARRIED)
    body = ops.commands[2:4]
    assert [(c.kind, c.inputs, c.outputs) for c in body] == [("view", ["T1"], []), ("exec", ["T1"], ["T1"])]
    assert kept.loops == [(body[0], body[1], 3, "%3")]
    assert {value: table.base_of(value) for value in ("%2", "%4", "%15")} == {"%2": "T1", "%4": "T1", "%15": "T1"}
    assert list(table.buffers) == ["T0", "T1", "T2"]


def test_a_fresh_tensor_read_where_nothing_wrote_is_cleared_before_its_first_use():
    ir, table, _, ops = lowered_ops(HALF_WRITTEN)
    write = next(c for c in ops.commands if c.opcode == "to_dm_view")
    at = write.index
    ops.clear_unwritten()
    clear = ops.commands[at]
    assert (clear.kind, clear.context, clear.inputs, clear.outputs) == ("memset", "tdma", [], ["T2"])
    assert ir.ops[clear.op].opcode == "dm_new" and ops.commands[at + 1] is write and write.index == at + 1
    assert ops.pending[id(clear)].target is table.objects["%3"]
    assert [c.index for c in ops.commands] == list(range(len(ops.commands)))


def test_a_fresh_tensor_first_touched_in_a_kept_loop_is_cleared_before_the_loop():
    _, _, kept, ops = lowered_ops(UNEVEN)  # W 32.. of %3 (T2) are never written
    ((first, last, _, _),) = kept.loops
    assert (first.index, last.opcode) == (2, "to_dm_view")
    ops.clear_unwritten()
    assert (ops.commands[2].kind, ops.commands[2].outputs) == ("memset", ["T2"])
    assert ops.commands[3] is first and first.index == 3  # the loop starts after the clear


# ---- filling a command once placed -----------------------------------------------------------------------


def test_a_dma_gets_the_descriptor_dma_loops_computes():
    _, table, kept, ops = lowered_ops(COPY)
    table.buffers["T0"].address, table.buffers["T1"].address = 0x2000, 64  # as placement might put them
    command = ops.commands[1]
    Filler(table, kept).fill(ops.pending[id(command)], command)
    x, dm = table.objects["%0"], table.objects["%2"]
    packet, loops = dma_loops(dram_layout(x.params, x.dtype, 0x2000), sram_layout(dm.params, dm.dtype, 64), "to_dm")
    assert command.dma == DmaWalk(0x2000, DM_BASE + 64, packet, loops)
    assert (packet, loops) == (32, [Loop(256, 32, SLICE_STRIDE)])  # a row of 32 bytes per slice, R slices
    assert command.offsets == []


def test_a_dma_in_a_kept_loop_moves_its_addresses_per_pass():
    _, table, kept, ops = lowered_ops(EVEN)
    table.buffers["T1"].address, table.buffers["T2"].address = 0, 64
    command = next(c for c in ops.commands if c.opcode == "to_dm_view")
    Filler(table, kept, kept.enclosing(command)).fill(ops.pending[id(command)], command)
    assert (command.dma.src_base, command.dma.dst_base) == (DM_BASE, DM_BASE + 64)  # pass 0: W 0
    assert command.offsets == [("dma.src_base", [1, 0, 0, 16, 4]), ("dma.dst_base", [1, 0, 0, 16, 4])]


def test_a_dma_in_a_kept_loop_whose_views_move_unevenly_is_refused():
    _, table, kept, ops = lowered_ops(UNEVEN)
    command = next(c for c in ops.commands if c.opcode == "to_dm_view")
    with pytest.raises(Unkeepable) as refused:
        Filler(table, kept, kept.enclosing(command)).fill(ops.pending[id(command)], command)
    assert refused.value.loop == 3 and refused.value.why.startswith("a view moves by unequal steps")


def test_a_carried_value_is_read_and_written_at_the_slot_of_the_pass():
    _, table, kept, ops = lowered_ops(CARRIED)
    table.buffers["T1"].address = 128
    body, store = ops.commands[3], ops.commands[-1]
    Filler(table, kept, kept.enclosing(body)).fill(ops.pending[id(body)], body)
    assert body.fetch.base == body.commit.base == DM_BASE + 128  # slot 0 …
    assert body.offsets == [
        ("fetch.base", [1, 0, 0, 2, 6, 0, 32, 4]),  # … plus (index % 2) * 32 bytes
        ("commit.base", [0, 1, 1, 0, 0, 2, 6, 3, 0, 32, 4]),  # … plus (1 - index % 2) * 32 bytes
    ]
    Filler(table, kept, kept.enclosing(store)).fill(ops.pending[id(store)], store)
    assert store.dma.src_base == DM_BASE + 128 + 32 and store.offsets == []  # the slot the last pass wrote
