"""A launch plan's steps made fewer (`lang/fusion.py`): a chain of relayouts replayed as views becomes one
view, and a relayout or elementwise step whose result nothing reads is dropped. What these tests hold it
to: the fused plan has fewer steps than the plan as recorded, and its replay gives the bytes the unfused
plan's replay and numpy give, through the view and through the chain's own calls (when the view cannot be
taken); no kept step's result is dropped unread."""

import numpy as np
import pytest

from furiosa_opt import (
    Context,
    HbmTensor,
    HostTensor,
    axes,
    bf16,
    device,
    i32,
    launch,
    m,
)
from furiosa_opt.backend import cpu
from furiosa_opt.lang import plan
from furiosa_opt.lang.fusion import Relayouts
from transformer.kernel import H, residual

E, T = axes(E=2, T=4)


@device
def copy_pair(ctx: Context, x: HbmTensor[i32, m["1"], m["E"]]) -> HbmTensor[i32, m["1"], m["E"]]:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["1 # 256"], m["E"])
    out = ctx.main.begin(dm.view()).fetch(m["1"], m["E"]).collect(m["1"], m["E # 8"]).commit_trim(m["E"]).commit(m["E"])
    return out.to_hbm(ctx.tdma, m["E"])


@device(chip=1)
def add_rows(
    ctx: Context, x: HbmTensor[bf16, m["1"], m["T, H"]], r: HbmTensor[bf16, m["1"], m["T, H"]]
) -> HbmTensor[bf16, m["1"], m["T, H"]]:
    """The transformer's residual add (its tag step is a result nothing reads) on T tokens."""
    x_dm = x.to_dm(ctx.tdma, m["1 # 2"], m["T # 64"], m["H"])
    r_dm = r.to_dm(ctx.tdma, m["1 # 2"], m["T # 64"], m["H"])
    return residual(ctx, x_dm, r_dm).to_hbm(ctx.tdma, m["T, H"])


@pytest.fixture(autouse=True)
def fresh_cache():
    plan.clear()
    yield
    plan.clear()


def _recorded(kernel, ctx: Context, args: tuple, monkeypatch, fuse: bool) -> plan.Plan:
    """The plan `kernel`'s first launch records, fused or as recorded."""
    plan.clear()
    with monkeypatch.context() as patch:
        if not fuse:
            patch.setattr(plan, "fused", lambda steps, kept: steps)
        launch(kernel, ctx, *args)
    (plans,) = plan._PLANS.values()
    return plans[0]


def _replayed(kernel, ctx: Context, args: tuple, kept: plan.Plan) -> np.ndarray:
    """The output of a launch that replays `kept` (the only plan of the cache)."""
    key = next(iter(plan._PLANS))
    plan._PLANS[key] = [kept]
    before = plan.COUNTS["replayed"]
    out = launch(kernel, ctx, *args)
    assert plan.COUNTS["replayed"] == before + 1
    return out.to_host(ctx.pdma).to_numpy()


def _bf16_rows(rng: np.random.Generator, ctx: Context) -> tuple[np.ndarray, HbmTensor]:
    values = rng.uniform(-1, 1, (T.size, H.size)).astype(np.float32)
    host = HostTensor.from_numpy(values, bf16, m["T, H"])
    return host.to_numpy(), host.to_hbm(ctx.pdma)


def test_a_chain_of_views_is_one_step_and_gives_the_same_bytes(monkeypatch):
    with Context.acquire() as ctx:
        first = HostTensor.from_numpy(np.array([1, 2], dtype=np.int32), i32, m[E]).to_hbm(ctx.pdma)
        recorded = _recorded(copy_pair, ctx, (first,), monkeypatch, fuse=False)
        fused = _recorded(copy_pair, ctx, (first,), monkeypatch, fuse=True)
        assert len(recorded.steps) == 6  # fetch, collect, commits, to_hbm: six relayouts
        assert len(fused.steps) == 1 and isinstance(fused.steps[0].fn, Relayouts)
        assert len(fused.steps[0].fn.calls) == 6
        second = HostTensor.from_numpy(np.array([42, -7], dtype=np.int32), i32, m[E]).to_hbm(ctx.pdma)
        assert _replayed(copy_pair, ctx, (second,), fused).tolist() == [42, -7]
        assert _replayed(copy_pair, ctx, (second,), recorded).tolist() == [42, -7]


def test_a_fused_chain_whose_view_cannot_be_taken_runs_its_calls(monkeypatch):
    """The view needs the input read as recorded; when it is not, the chain's relayouts run in turn."""
    with Context.acquire() as ctx:
        first = HostTensor.from_numpy(np.array([1, 2], dtype=np.int32), i32, m[E]).to_hbm(ctx.pdma)
        fused = _recorded(copy_pair, ctx, (first,), monkeypatch, fuse=True)
        (step,) = fused.steps
        calls = []
        real = cpu.relayout

        def counted(*args):
            calls.append(args)
            return real(*args)

        chain = Relayouts(tuple((counted, rest) for _, rest in step.fn.calls))
        fused.steps[0] = plan.dataclasses.replace(step, view=None, fn=chain)
        second = HostTensor.from_numpy(np.array([5, 6], dtype=np.int32), i32, m[E]).to_hbm(ctx.pdma)
        assert _replayed(copy_pair, ctx, (second,), fused).tolist() == [5, 6]
        assert len(calls) == 6


def test_unread_results_are_dropped_and_the_sum_is_numpys(monkeypatch):
    rng = np.random.default_rng(3)
    with Context.acquire() as ctx:
        args = tuple(_bf16_rows(rng, ctx)[1] for _ in range(2))
        recorded = _recorded(add_rows, ctx, args, monkeypatch, fuse=False)
        fused = _recorded(add_rows, ctx, args, monkeypatch, fuse=True)
        unread = [s for s in recorded.steps if s.out in s.release]  # released as soon as made
        assert any(s.fn is cpu.elementwise for s in unread)  # the tags the add never reads
        assert not any(s.out in s.release for s in fused.steps)
        assert len(fused.steps) < len(recorded.steps) - len(unread)  # chains fused as well
        (x, xs), (r, rs) = _bf16_rows(rng, ctx), _bf16_rows(rng, ctx)
        want = (x.astype(np.float32) + r.astype(np.float32)).astype(x.dtype)
        for kept in (fused, recorded):
            got = _replayed(add_rows, ctx, (xs, rs), kept)
            assert got.tobytes() == want.tobytes()
