"""Device loops and runtime scalars (`furiosa_opt.lang.loops`): expressions, their vISA text, what the CPU
backend does with them, and what tracing refuses."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.replay import replay
from furiosa_opt.compiler.visa import parse_kernel, print_kernel
from furiosa_opt.programs import describe, evaluate
from furiosa_opt.scalar import Scalar, parse_scalar

A, B = axes(A=256, B=32)


def test_expressions_fold_when_their_indices_are_bound():
    i, j = Scalar("index", ("%3", 4)), Scalar("index", ("%7", 2))
    offset = select(i == 0, 0, i * 8 + j)
    assert offset.indices() == {"%3": 4, "%7": 2}
    assert [offset.evaluate({"%3": a, "%7": b}) for a in range(4) for b in range(2)] == [0, 0, 8, 9, 16, 17, 24, 25]
    assert sorted(set(offset.values())) == [0, 8, 9, 16, 17, 24, 25]
    renamed = offset.evaluate({"%3": Scalar("index", ("%9", 4)), "%7": 1})
    assert isinstance(renamed, Scalar) and renamed.indices() == {"%9": 4}


@pytest.mark.parametrize(
    "text",
    ["scalar(%3@7)", "scalar(mul (sub 1 (mod %3@7 2)) 32)", "scalar(div (sub 2 %3@7) 3)", "scalar(mod (sub 1 %3@7) 4)",
     "scalar(sel (eq %3@7 0) 0 16)", "scalar(sel (ge %3@7 5) %3@7 -1)", "scalar(add 5 (ne %3@7 %3@7))"],
)  # fmt: skip
def test_a_scalar_on_every_pass_at_once_is_the_scalar_on_each(text):
    scalar = parse_scalar(text)
    expected = [scalar.evaluate({"%3": k}) for k in range(7)]
    assert scalar.on_passes("%3", 7).tolist() == expected


def test_a_division_by_zero_on_some_pass_is_one_error():
    with pytest.raises(ZeroDivisionError):
        parse_scalar("scalar(div 1 (sub %3@4 2))").on_passes("%3", 4)


def test_the_text_round_trips():
    i = Scalar("index", ("%3", 4))
    for expression in (i, i * 16, (i + 1) % 3 == 2, select(i != 0, 16 - i, 0)):
        text = repr(expression)
        assert text.startswith("scalar(") and repr(parse_scalar(text)) == text
    with pytest.raises(ValueError, match="unknown runtime scalar"):
        parse_scalar("scalar(pow %3@4 2)")


def test_a_runtime_scalar_has_no_truth_value_or_constant():
    i = Scalar("index", ("%3", 4))
    for use in (bool, int, float, lambda s: [0, 1][s]):
        with pytest.raises(VerifyError, match="runtime-scalar"):
            use(i == 0)


def test_the_cpu_backend_runs_the_loop_and_its_branches():
    taken = []
    for i in device_range(4):
        for _ in when(i % 2 == 0):
            taken.append(select(i == 0, "first", i))
    assert taken == ["first", 2]
    with pytest.raises(VerifyError, match="device-loop"):
        list(device_range(0))


def test_the_cpu_backend_meets_a_bad_runtime_view_index_in_its_pass():
    """tests/negative/runtime_view_index.py is refused at compile time for the start its third pass takes;
    the CPU backend runs two passes and refuses the third."""
    path = Path(__file__).parents[1] / "negative" / "runtime_view_index.py"
    spec = importlib.util.spec_from_file_location("negative_runtime_view_index_cpu", path)
    fixture = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fixture  # a kernel's identity needs its module registered
    spec.loader.exec_module(fixture)
    with Context.acquire() as ctx:
        x = HostTensor.from_numpy(np.zeros((fixture.A.size, fixture.B.size), np.int8), i8, m["A, B"]).to_hbm(ctx.pdma)
        with pytest.raises(VerifyError, match=r"tile-start.*start 32"):
            launch(fixture.tile_past_the_axis, ctx, x)


R, E = axes(R=256, E=8)


def _add_one(ctx: Context, dm: DmTensor) -> DmTensor:
    return (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["E"])
        .fetch_cast(i32)
        .collect(m["1"], m["E"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["E"])
        .commit(m["E"])
    )


@device(chip=1)
def carried_chain(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    """`dm = step(dm)` in a device loop: each pass reads what the previous one wrote."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    for _ in device_range(5):
        dm = _add_one(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["R, E"])


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_a_rebound_variable_is_carried_from_pass_to_pass(on):
    x = np.arange(R.size * E.size, dtype=np.int32).reshape(R.size, E.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(carried_chain, ctx, HostTensor.from_numpy(x, i32, m["R, E"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), x + 5)


def test_the_vISA_carries_the_value_and_replays_to_itself():
    result = compile_kernel(carried_chain)
    assert result.ok, result.diagnostics
    ops = result.visa.ops
    (loop,) = [i for i, op in enumerate(ops) if op.opcode == "loop"]
    head, end = ops[loop + 1], next(op for op in ops if op.opcode == "end_loop")
    assert head.opcode == "carried" and head.operands == (ops[loop - 1].results[0].name,)  # the DM before the loop
    commit = next(op for op in ops if op.opcode == "commit")
    assert end.operands == (commit.results[0].name,)  # the next pass reads this pass's commit
    text = print_kernel(result.visa)
    assert print_kernel(replay(parse_kernel(text))) == text
    assert sum(op.opcode == "vector_fxp" for op in ops) == 1  # the body once, and stage 2 keeps it so
    (commit,) = [c for c in result.lir.commands if c.opcode == "commit"]
    (region,) = result.lir.loops
    assert region.first <= commit.index <= region.last and region.count == 5 and result.lir.unrolled == []
    (carried,) = [b for b in result.lir.buffers if b.slots == 2]  # the carried DM: two places, used in turn
    assert commit.inputs == commit.outputs == [carried.name]
    offsets = {path: evaluate(program, [np.arange(5)]).tolist() for path, program in commit.offsets}
    size = carried.bytes  # pass k reads slot k mod 2 and writes the other
    assert offsets == {"fetch.base": [0, size, 0, size, 0], "commit.base": [size, 0, size, 0, size]}
    assert describe(dict(commit.offsets)["fetch.base"], [region.index]) == f"{region.index} % 2 * {size}"


@device(chip=1)
def pass_dependent_body(ctx: Context, x: HbmTensor[i32, m["1"], m["R, E"]]) -> HbmTensor[i32, m["1"], m["R, E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["R"], m["E"])
    passes = []
    for _ in device_range(3):
        passes.append(None)
        for _ in range(len(passes)):  # Python state that grows from pass to pass: not one body
            dm = _add_one(ctx, dm)
    return dm.to_hbm(ctx.tdma, m["R, E"])


def test_a_body_that_traces_differently_per_pass_is_refused():
    result = compile_kernel(pass_dependent_body)
    assert [d.code for d in result.diagnostics] == ["device-loop"]
