"""Port of upstream `furiosa-opt-examples/src/runtime_if.rs`, `src/runtime_if_scalar.rs` and their tests
(`tests/runtime_if_tests.rs`, `tests/runtime_if_scalar_tests.rs`).

Upstream's `for i in 0..2` inside a `#[device]` function is a loop the kernel keeps, so `i == 0` is a runtime
condition: here the loop is `device_range(2)`, the statement-form `if i == 0 { … } else { … }` is two
`when` blocks, and the value-form `if i == 0 { 0 } else { 16 }` is `select(i == 0, 0, 16)`. Each kernel runs
on both backends: the CPU backend runs the loop, the simulator runs what stage 2 unrolled from the vISA's
loop region, and the vISA keeps the region (checked below).
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.visa import parse_kernel, print_kernel
from furiosa_opt.programs import describe, evaluate

W = Axis("W", 1024)  # runtime_if.rs
A, B = axes(A=512, B=32)  # runtime_if_scalar.rs

Chip = m["1"]
Cluster = m["1"]  # a 4-PE device is one cluster of 256 slices


def add_const_view_mut(ctx: Context, input_dm: DmTensor, c: int, output_view_mut: DmTensorViewMut) -> None:
    (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["W % 4"])
        .fetch_cast(i32)
        .collect(m["1"], m["W % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, c)
        .vector_final()
        .commit_trim(m["W % 4"])
        .commit_view(output_view_mut)
    )


@device(chip=1, pe=4)
def runtime_if_two_outputs(
    ctx: Context, input: HbmTensor[i32, Chip, m["W"]]
) -> tuple[HbmTensor[i32, Chip, m["W"]], HbmTensor[i32, Chip, m["W"]]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["W / 4"], m["W % 4"])
    out_then = DmTensor.new(i32, Chip, Cluster, m["W / 4"], m["W % 4"])
    out_else = DmTensor.new(i32, Chip, Cluster, m["W / 4"], m["W % 4"])
    for i in device_range(2):
        for _ in when(i == 0):
            add_const_view_mut(ctx, input_dm, 1, out_then.view_mut())
        for _ in when(i != 0):
            add_const_view_mut(ctx, input_dm, 2, out_else.view_mut())
    return out_then.to_hbm(ctx.tdma, m["W"]), out_else.to_hbm(ctx.tdma, m["W"])


@device(chip=1)
def runtime_if_scalar_index(ctx: Context, input_hbm: HbmTensor[i8, Chip, m["A, B"]]) -> HbmTensor[i8, Chip, m["A, B"]]:
    input = input_hbm.to_dm(ctx.tdma, m["A / 256"], m["A % 256"], m["B"])
    output = DmTensor.new(i8, Chip, m["A / 256"], m["A % 256"], m["B"])
    for i in device_range(2):
        off = select(i == 0, 0, 16)
        src = input.view().tile(off, m["B"], 16, m["B = 16 # 32"])
        dst = output.view_mut().tile(off, m["B"], 16, m["B = 16 #{!} 32"])
        src.to_dm_view(ctx.tdma, dst)
    return output.to_hbm(ctx.tdma, m["A, B"])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_runtime_if_two_outputs(on):
    """Upstream's answer test: the then-arm wrote `input + 1`, the else-arm `input + 2`."""
    x = np.arange(W.size, dtype=np.int32)
    with backend(on) as launch_, Context.acquire() as ctx:
        out_then, out_else = launch_(
            runtime_if_two_outputs, ctx, HostTensor.from_numpy(x, i32, m["W"]).to_hbm(ctx.pdma)
        )
        np.testing.assert_array_equal(out_then.to_host(ctx.pdma).into_vec(), x + 1)
        np.testing.assert_array_equal(out_else.to_host(ctx.pdma).into_vec(), x + 2)


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_runtime_if_scalar_index(on):
    """Iterations 0 and 1 copy the two 16-wide halves of B, together the whole row: `output == input`."""
    x = np.random.default_rng(0).integers(-128, 128, (A.size, B.size), dtype=np.int8)
    with backend(on) as launch_, Context.acquire() as ctx:
        out = launch_(runtime_if_scalar_index, ctx, HostTensor.from_numpy(x, i8, m["A, B"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(out.to_host(ctx.pdma).to_numpy(), x)


@pytest.mark.parametrize("kernel", [runtime_if_two_outputs, runtime_if_scalar_index], ids=lambda k: k.__name__)
def test_the_vISA_keeps_the_loop_and_stage_two_keeps_or_unrolls_it(kernel):
    result = compile_kernel(kernel)
    assert result.ok, result.diagnostics
    opcodes = [op.opcode for op in result.visa.ops]
    assert opcodes.count("loop") == opcodes.count("end_loop") == 1
    body = opcodes[opcodes.index("loop") + 1 : opcodes.index("end_loop")]
    text = print_kernel(result.visa)
    assert print_kernel(parse_kernel(text)) == text  # the region and its runtime scalars round-trip
    (loop,) = [i for i, op in enumerate(result.visa.ops) if op.opcode == "loop"]
    moves = [c for c in result.lir.commands if c.opcode in ("commit_view", "to_dm_view")]
    (region,) = result.lir.loops  # the LIR keeps the loop: its body once, run twice
    assert result.lir.unrolled == [] and region.count == 2
    if kernel is runtime_if_two_outputs:  # each arm once, guarded by the runtime condition
        assert body.count("if") == body.count("end_if") == 2 and body.count("commit_view") == 2
        passes = [np.arange(2)]
        assert [evaluate(c.guard, passes).tolist() for c in moves] == [[1, 0], [0, 1]]  # pass 0, then pass 1
        assert [describe(c.guard, [region.index]) for c in moves] == [f"{region.index} == 0", f"{region.index} != 0"]
        assert all(c.offsets == [] for c in moves)
    else:  # one copy whose two views move 16 bytes per pass: the second half of B on pass 1
        (move,) = moves
        assert move.guard is None
        assert [path for path, _ in move.offsets] == ["dma.src_base", "dma.dst_base"]
        assert [evaluate(program, [np.arange(2)]).tolist() for _, program in move.offsets] == [[0, 16], [0, 16]]
        assert [describe(program, [region.index]) for _, program in move.offsets] == [f"{region.index} * 16"] * 2
