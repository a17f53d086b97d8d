"""Launch plans (`lang/plan.py`): a later CPU launch with the same key replays the numpy steps the first one
took. What these tests hold it to: a plan is never replayed after the kernel's source, an argument's type,
a name its code reads or a tuned choice changes; a replay writes in place only where the language would,
so a tensor sharing the buffer never sees the write; each window an argument view brings is followed
(rows chosen on the host replay one plan), and a window on the other side of a decision the language
took records a plan of its own; a replay that faults reports what the language reports; the cache is
bounded. The oracle is numpy, or the language itself run without plans (`run_on_cpu`)."""

import importlib
import sys
import textwrap

import numpy as np
import pytest
from row_copy_kernels import H, Row, RowMut, V, copy_row, write_row

from furiosa_opt import Context, HbmTensor, HostTensor, VerifyError, i32, launch, m
from furiosa_opt.lang import plan


@pytest.fixture(autouse=True)
def fresh_cache():
    plan.clear()
    yield
    plan.clear()


@pytest.fixture
def table():
    return np.random.default_rng(11).integers(-(2**31), 2**31, (V.size, H.size), dtype=np.int32)


def counts() -> dict[str, int]:
    return dict(plan.COUNTS)


def delta(before: dict[str, int]) -> dict[str, int]:
    return {k: plan.COUNTS[k] - before[k] for k in before}


def test_rows_chosen_on_the_host_replay_one_plan_per_side_of_each_decision(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        before = counts()
        for token in (3, 5, 63, 17):
            write_row(ctx, source, out, token)
        assert delta(before) == {"recorded": 1, "replayed": 3, "unreplayable": 0}
        write_row(ctx, source, out, 0)  # the read takes another path at window 0: a second plan
        write_row(ctx, source, out, 0)
        assert delta(before) == {"recorded": 2, "replayed": 4, "unreplayable": 0}
        expected = np.zeros_like(table)
        expected[[3, 5, 63, 17, 0]] = table[[3, 5, 63, 17, 0]]
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy(), expected)


def test_a_replay_out_of_bounds_reports_what_the_language_reports(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        write_row(ctx, source, out, 1)
        row = source.view().tile(63, m[V], 1, Row)
        row.window = V.size * H.size  # a window past the table, as a hostile caller could set it
        with pytest.raises(VerifyError) as replayed:
            launch(copy_row, ctx, row, out.view_mut().tile(1, m[V], 1, RowMut))
        plan.clear()
        with pytest.raises(VerifyError) as language:
            launch(copy_row, ctx, row, out.view_mut().tile(1, m[V], 1, RowMut))
        assert str(replayed.value) == str(language.value)
        assert replayed.value.rule == "view-bounds"


def test_a_replayed_write_never_changes_a_buffer_another_tensor_shares(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        write_row(ctx, source, out, 1)  # recorded
        alias = HbmTensor(out.dtype, out.params, out.data)  # a second tensor on the same buffer
        kept = alias.to_host(ctx.pdma).to_numpy().copy()
        before = counts()
        write_row(ctx, source, out, 2)
        assert delta(before)["replayed"] == 1
        assert alias.data.base is not out.data.base
        assert np.array_equal(alias.to_host(ctx.pdma).to_numpy(), kept)
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy()[[1, 2]], table[[1, 2]])
        del alias
        array = out.data.base
        address = array.__array_interface__["data"][0]
        del array  # the tensor alone holds it again: the next replay writes into it
        write_row(ctx, source, out, 4)
        assert out.data.base.__array_interface__["data"][0] == address
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy()[4], table[4])


def test_an_argument_of_another_type_is_refused_not_replayed(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        write_row(ctx, source, out, 1)
        padded = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma, m["1"], m["V, H # 64"])
        before = counts()
        with pytest.raises(VerifyError) as refused:
            launch(copy_row, ctx, padded.view(), out.view_mut().tile(6, m[V], 1, RowMut))
        assert refused.value.rule == "launch-argument"
        assert delta(before) == {"recorded": 0, "replayed": 0, "unreplayable": 0}


MODULE = """
import numpy as np
from furiosa_opt import *
from furiosa_opt.tune import space

A = axes(A=2048)
choices = space(step=[1, 7])
STEP = choices.step


@device
def bump(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
    out = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["A % 8"])
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, STEP * {scale})
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return out.to_hbm(ctx.tdma, m["A"])
"""


@pytest.fixture
def kernel_module(tmp_path, monkeypatch):
    """A kernel module in a temporary directory, importable as `plan_probe`; `write(scale)` rewrites it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "plan_probe.py"

    def write(scale: int) -> None:
        path.write_text(textwrap.dedent(MODULE).replace("{scale}", str(scale)))
        importlib.invalidate_caches()

    write(1)
    yield path, write
    sys.modules.pop("plan_probe", None)


def bumped(ctx: Context, kernel, values: np.ndarray) -> np.ndarray:
    x = HostTensor.from_numpy(values, i32, m[sys.modules["plan_probe"].A]).to_hbm(ctx.pdma)
    return launch(kernel, ctx, x).to_host(ctx.pdma).to_numpy()


def test_a_changed_source_or_tuned_choice_is_never_replayed_stale(kernel_module):
    path, write = kernel_module
    values = np.arange(2048, dtype=np.int32)
    probe = importlib.import_module("plan_probe")
    with Context.acquire() as ctx:
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 1)
        before = counts()
        assert np.array_equal(bumped(ctx, probe.bump, values * 2), values * 2 + 1)
        assert delta(before)["replayed"] == 1

        old = probe.bump
        write(3)  # the source changes: step * 3
        probe = importlib.reload(probe)
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 3)
        # the old kernel object runs its old code, with the names its module now binds
        assert np.array_equal(bumped(ctx, old, values), values + 1)

        path.with_name("plan_probe.tuned.json").write_text('{"choices": {"step": 7}}')
        probe = importlib.reload(probe)  # the tuned choice is read at import: step = 7
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 21)

        before = counts()
        probe.STEP = 2  # a name the kernel reads, rebound: not the recorded plan
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 6)
        assert delta(before)["recorded"] == 1


def test_the_cache_is_bounded(kernel_module, monkeypatch):
    monkeypatch.setattr(plan, "LIMIT", 3)
    probe = importlib.import_module("plan_probe")
    values = np.arange(2048, dtype=np.int32)
    with Context.acquire() as ctx:
        for step in range(6):  # six keys: the names the kernel reads differ each time
            probe.STEP = step
            assert np.array_equal(bumped(ctx, probe.bump, values), values + step)
            assert plan.cached() <= 3
        assert plan.cached() == 3


def test_a_module_name_equal_to_an_attribute_the_kernel_reads_is_not_in_the_key(kernel_module):
    """`ctx.main`, `.fetch(...)`: attribute names, not globals; a module-level `main` may change freely."""
    probe = importlib.import_module("plan_probe")
    values = np.arange(2048, dtype=np.int32)
    with Context.acquire() as ctx:
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 1)
        before = counts()
        probe.main, probe.fetch = object(), object()
        assert np.array_equal(bumped(ctx, probe.bump, values * 3), values * 3 + 1)
        assert delta(before) == {"recorded": 0, "replayed": 1, "unreplayable": 0}
        probe.TagMode = probe.TagMode  # a global it reads, rebound to the same object: the same key
        probe.STEP = 5  # rebound to another: recorded again
        assert np.array_equal(bumped(ctx, probe.bump, values), values + 5)
        assert delta(before) == {"recorded": 1, "replayed": 1, "unreplayable": 0}
