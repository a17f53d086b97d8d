"""Stage 2 on the base-template kernels: every fetch, commit and DMA of the dumped LIR has a placed
address and a sequencer, and walking each sequencer visits exactly the byte addresses stage 1's
relayout index map predicts — same order, same count."""

import json

import numpy as np
import pytest
from example_kernels import KERNELS

from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler import lir as lir_format
from furiosa_opt.compiler.lir import Entry, Sequencer, walk_dma, walk_sequencer
from furiosa_opt.compiler.lower import Lowering
from furiosa_opt.compiler.lower.fill import Filler
from furiosa_opt.mapping import m
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.relayout import relayout_index


def lowered(kernel):
    ir, errors = trace(kernel)
    assert not errors
    lowering = Lowering(ir)
    return lowering, lowering.run()


def placed(lowering):
    """(the replayed objects, where an object lies once placed) of a lowering that has run."""
    return lowering.table.objects, Filler(lowering.table, lowering.kept).layout


def live(mapping) -> np.ndarray:
    return evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64)).live


def sequencer(record: dict) -> Sequencer:
    entries = lambda side: [Entry(**e) for e in record[side]]  # noqa: E731
    return Sequencer(record["buffer"], record["base"], entries("time"), entries("packet"), record["access"])


@pytest.mark.parametrize("name", KERNELS)
def test_dumped_lir_has_addresses_and_sequencers(name):
    _, program = lowered(KERNELS[name])
    decoded = lir_format.load(lir_format.dump(program))
    assert decoded["format"] == "furiosa-opt-lir" and decoded["kernel"] == KERNELS[name].identity
    by_name = {b["name"]: b for b in decoded["buffers"]}
    kinds = {c["kind"] for c in decoded["commands"]}
    assert {"dma", "exec"} <= kinds
    for command in decoded["commands"]:
        if command["kind"] == "dma":
            assert command["dma"]["packet"] > 0 and command["dma"]["loops"] is not None
            assert command["context"] in ("tdma", "pdma")
        if command["kind"] == "exec":
            assert command["fetch"]["time"] is not None and command["context"] in ("main", "sub")
            assert command["fetch"]["access"] in (1, 2, 4, 8, 16, 32)
            assert command["loc"].endswith(f"{name}_kernel.py:" + command["loc"].rsplit(":", 1)[1])
        for buffer in command["inputs"] + command["outputs"]:
            assert buffer in by_name
    for buffer in decoded["buffers"]:
        if buffer["memory"] == "sram":
            assert buffer["address"] >= 0 and buffer["address"] + buffer["bytes"] <= 512 * 1024


@pytest.mark.parametrize("name", KERNELS)
def test_every_dma_visits_the_addresses_the_relayout_predicts(name):
    lowering, program = lowered(KERNELS[name])
    objects, layout = placed(lowering)
    dmas = [c for c in program.commands if c.kind == "dma"]
    assert dmas
    for command in dmas:
        op = lowering.ir.ops[command.op]
        source = objects[op.operands[0]]
        target = objects[op.operands[1]] if op.opcode.endswith("_view") else objects[op.results[0].name]
        src, dst = layout(source), layout(target)
        src_map, dst_map = pair(*src.levels), pair(*dst.levels)
        index = relayout_index(src_map.factors, dst_map.factors, True)
        positions = np.flatnonzero(index >= 0)
        expected = (src.addresses(index[positions]), dst.addresses(positions))
        unit = src.dtype.bits // 8
        walked = walk_dma(command.dma.src_base, command.dma.dst_base, command.dma.packet, command.dma.loops, unit)
        assert len(walked[0]) == len(positions)
        # the same (source, destination) pairs; the order is the descriptor's own (slices innermost)
        walked_order, expected_order = np.argsort(walked[1]), np.argsort(expected[1])
        assert np.array_equal(walked[1][walked_order], expected[1][expected_order])  # each destination cell once
        assert np.array_equal(walked[0][walked_order], expected[0][expected_order])


@pytest.mark.parametrize("name", KERNELS)
def test_every_fetch_and_commit_visits_the_addresses_the_relayout_predicts(name):
    lowering, program = lowered(KERNELS[name])
    objects, layout = placed(lowering)
    execs = [c for c in program.commands if c.kind == "exec"]
    assert execs
    for command in execs:
        chain_end = lowering.ir.ops[command.op]
        ops = {v.name: o for o in lowering.ir.ops for v in o.results}
        fetch = next(o for o in _chain(chain_end, ops) if o.opcode == "fetch")
        begin = next(o for o in _chain(chain_end, ops) if o.opcode == "begin")
        view = objects[begin.operands[0]]
        unit = view.dtype.bits // 8
        stream = pair(fetch.attr("time"), fetch.attr("packet"))
        index = relayout_index(pair(m["1"], view.element).factors, stream.factors, True)
        walked = walk_sequencer(command.fetch, 1)
        alive = live(stream)
        assert len(walked) == stream.size
        base = layout(view).base
        assert np.array_equal(walked[alive], base + index[alive] * unit)
        if command.commit is not None:
            streamed = objects[chain_end.operands[0]]
            target = objects[chain_end.operands[-1] if chain_end.opcode == "commit_view" else chain_end.results[0].name]
            element = target.element if hasattr(target, "window") else target.params[3]
            flow = pair(streamed.time, streamed.packet)
            index = relayout_index(element.factors, flow.factors, False)
            walked = walk_sequencer(command.commit, 0)
            alive = live(flow)
            step = streamed.dtype.bits // 8
            assert np.array_equal(walked[alive], layout(target).base + index[alive] * step)


def _chain(op, ops):
    while True:
        yield op
        if op.opcode == "begin":
            return
        op = ops[op.operands[0]]


def test_dm_is_reused_once_a_tensor_is_dead():
    _, program = lowered(KERNELS["gemm"])
    sram = [b for b in program.buffers if b.memory == "sram"]
    by_address: dict[int, list] = {}
    for b in sram:
        by_address.setdefault(b.address, []).append(b)
    reused = [group for group in by_address.values() if len(group) > 1]
    assert reused, [(b.name, b.address, b.first, b.last) for b in sram]
    for group in reused:
        for a in group:
            for b in group:
                assert a is b or a.last < b.first or b.last < a.first


def test_syncs_order_work_across_contexts():
    _, program = lowered(KERNELS["gemm"])
    syncs = [c for c in program.commands if c.kind == "sync"]
    assert syncs
    for sync in syncs:
        following = program.commands[sync.index + 1]
        assert following.context == sync.context
        for waited in sync.waits:
            assert program.commands[waited].context != sync.context and waited < sync.index


def test_graph_nodes_are_lir_commands_with_source_lines():
    _, program = lowered(KERNELS["gemm"])
    graph = json.loads(json.dumps(lir_format.graph(program)))
    commands = [n for n in graph["nodes"] if n["kind"] == "command"]
    assert len(commands) == len(program.commands)
    assert all(n["loc"] and "gemm_kernel.py:" in n["loc"] for n in commands)
    tensors = {n["id"] for n in graph["nodes"] if n["kind"] == "tensor"}
    assert all(n.get("address") is not None for n in graph["nodes"] if n["kind"] == "tensor")
    ids = tensors | {n["id"] for n in commands}
    assert all(e["from"] in ids and e["to"] in ids for e in graph["edges"])
