"""Device loops and runtime scalars (`furiosa_opt.lang.loops`): expressions, their vISA text, what the CPU
backend does with them, and what tracing refuses."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.lang.loops import Scalar, parse_scalar

A, B = axes(A=256, B=32)


def test_expressions_fold_when_their_indices_are_bound():
    i, j = Scalar("index", ("%3", 4)), Scalar("index", ("%7", 2))
    offset = select(i == 0, 0, i * 8 + j)
    assert offset.indices() == {"%3": 4, "%7": 2}
    assert [offset.evaluate({"%3": a, "%7": b}) for a in range(4) for b in range(2)] == [0, 0, 8, 9, 16, 17, 24, 25]
    assert sorted(set(offset.values())) == [0, 8, 9, 16, 17, 24, 25]
    renamed = offset.evaluate({"%3": Scalar("index", ("%9", 4)), "%7": 1})
    assert isinstance(renamed, Scalar) and renamed.indices() == {"%9": 4}


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
