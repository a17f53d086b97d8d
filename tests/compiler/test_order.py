"""Placement in another order of the commands when the written one does not fit (compiler/lower/order.py).

The kernels here are module level, so the differential harness also runs each on both backends; the
tests below check the order stage 2 chose, the results against numpy, and the search against brute force.
"""

import itertools

import numpy as np
import pytest
from backends import backend
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.lower.order import Charge, NoOrder, Unit, fitting_orders, predecessors

B, C = axes(B=16, C=2048)  # i32: a 64-byte and an 8192-byte VRF tensor (the VRF holds 8192 bytes per slice)
E = axes(E=75_000)  # i32: 300,000 bytes, more than half a slice's 512 KiB of DM
Chip, Cluster, Slice = m["1"], m["1"], m["1 # 64"]


def _to_vrf(ctx: Context, dm: DmTensor, n: str) -> VrfTensor:
    return ctx.sub.begin(dm.view()).fetch(m["1"], m[n]).collect(m[f"{n} / 8"], m[f"{n} % 8"]).to_vrf(m[n])


def _plus(ctx: Context, dm: DmTensor, vrf: VrfTensor, n: str) -> DmTensor:
    """`dm + vrf`, elementwise on the Vector Engine."""
    return (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m[n])
        .collect(m[f"{n} / 8"], m[f"{n} % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, vrf)
        .vector_final()
        .commit_trim(m[f"{n} % 8"])
        .commit(m[n])
    )


Small, Big = HbmTensor[i32, Chip, m["B"]], HbmTensor[i32, Chip, m["C"]]


@device(chip=1, pe=1)
def small_then_big(ctx: Context, s: Small, b: Big) -> tuple[Small, Big]:
    """Both loads before both uses: 64 + 8192 bytes of VRF live at once in the written order."""
    s_dm, b_dm = s.to_dm(ctx.tdma, Cluster, Slice, m["B"]), b.to_dm(ctx.tdma, Cluster, Slice, m["C"])
    s_vrf = _to_vrf(ctx, s_dm, "B")
    b_vrf = _to_vrf(ctx, b_dm, "C")
    s_out = _plus(ctx, s_dm, s_vrf, "B")
    b_out = _plus(ctx, b_dm, b_vrf, "C")
    return s_out.to_hbm(ctx.tdma, m["B"]), b_out.to_hbm(ctx.tdma, m["C"])


@device(chip=1, pe=1)
def small_used_first(ctx: Context, s: Small, b: Big) -> tuple[Small, Big]:
    """`small_then_big` with the two independent middle statements swapped: fits as written."""
    s_dm, b_dm = s.to_dm(ctx.tdma, Cluster, Slice, m["B"]), b.to_dm(ctx.tdma, Cluster, Slice, m["C"])
    s_vrf = _to_vrf(ctx, s_dm, "B")
    s_out = _plus(ctx, s_dm, s_vrf, "B")
    b_vrf = _to_vrf(ctx, b_dm, "C")
    b_out = _plus(ctx, b_dm, b_vrf, "C")
    return s_out.to_hbm(ctx.tdma, m["B"]), b_out.to_hbm(ctx.tdma, m["C"])


Wide = HbmTensor[i32, Chip, m["E"]]


@device(chip=1, pe=1)
def dm_loads_first(ctx: Context, x: Wide, y: Wide) -> tuple[Wide, Wide]:
    """Two DM tensors of 300,000 bytes loaded before either is stored: they fit one after the other
    (tests/negative/dm_overflow.py is this kernel with a copy that keeps both live)."""
    first = x.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    second = y.to_dm(ctx.tdma, Cluster, Slice, m["E"])
    return first.to_hbm(ctx.tdma, m["E"]), second.to_hbm(ctx.tdma, m["E"])


def _vrf_buffers(kernel) -> tuple:
    lir = compile_kernel(kernel).lir
    return lir, sorted((b for b in lir.buffers if b.memory == "vrf"), key=lambda b: b.bytes)


def test_written_order_that_overflows_is_placed_in_one_that_fits():
    lir, (small, big) = _vrf_buffers(small_then_big)
    assert (small.bytes, big.bytes) == (64, 8192)
    assert small.last < big.first and big.address == small.address == 0  # the big one reuses the small one's
    uses = {b.name: [c for c in lir.commands if b.name in c.inputs and c.kind == "exec"] for b in (small, big)}
    assert uses[small.name][-1].index < big.first  # the small one's use moved before the big one's load
    load = lir.commands[big.first]
    waits = [c for c in lir.commands if c.kind == "sync" and c.index == load.index - 1]
    assert waits and uses[small.name][-1].index in waits[0].waits  # the load waits for that use (WAR)


def test_written_order_that_fits_is_kept():
    lir = compile_kernel(small_used_first).lir
    ops = [c.op for c in lir.commands if c.kind not in ("sync",)]
    assert ops == sorted(ops)


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize("kernel", [small_then_big, small_used_first])
def test_vrf_kernels_against_numpy(kernel, on):
    rng = np.random.default_rng(3)
    s = rng.integers(-(2**31), 2**31, B.size, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, C.size, dtype=np.int64).astype(np.int32)
    with backend(on) as launch_, Context.acquire() as ctx:
        hbm = [HostTensor.from_numpy(v, i32, m[n]).to_hbm(ctx.pdma) for v, n in ((s, "B"), (b, "C"))]
        got = [t.to_host(ctx.pdma).to_numpy() for t in launch_(kernel, ctx, *hbm)]
    # AddFxp wraps: each value doubled in i64, the low 32 bits kept
    np.testing.assert_array_equal(got[0], (s.astype(np.int64) * 2).astype(np.int32))
    np.testing.assert_array_equal(got[1], (b.astype(np.int64) * 2).astype(np.int32))


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_dm_tensors_placed_one_after_the_other(on):
    lir = compile_kernel(dm_loads_first).lir
    first, second = sorted((b for b in lir.buffers if b.memory == "sram"), key=lambda b: b.first)
    assert first.last < second.first and first.address == second.address
    x, y = np.arange(E.size, dtype=np.int32), -np.arange(E.size, dtype=np.int32)
    with backend(on) as launch_, Context.acquire() as ctx:
        hx, hy = (HostTensor.from_numpy(v, i32, m["E"]).to_hbm(ctx.pdma) for v in (x, y))
        got = [t.to_host(ctx.pdma).to_numpy() for t in launch_(dm_loads_first, ctx, hx, hy)]
    np.testing.assert_array_equal(got[0], x)
    np.testing.assert_array_equal(got[1], y)


def test_refusal_says_no_order_fits():
    """tests/negative/vrf_overflow.py pins the rule and line; the note says the search found no order."""
    from test_negative import HERE, diagnostics_of

    (found,) = diagnostics_of(HERE / "vrf_overflow.py")
    assert found.code == "vrf-overflow"
    assert "fit in no order that keeps their data dependences, the written one included" in found.rendered()


# ---- the search on its own, against brute force ----------------------------------------------------------


def _unit(reads: str = "", writes: str = "") -> Unit:
    return Unit(frozenset(reads.split()), frozenset(writes.split()))


def test_predecessors_follow_reads_and_writes():
    units = [_unit(writes="a"), _unit(writes="b"), _unit("a", "c"), _unit("b", "a"), _unit("a c")]
    # 2 reads a (RAW on 0); 3 reads b (RAW on 1) and writes a (WAW on 0, WAR on 2); 4 reads a after 3, c after 2
    assert predecessors(units) == [0, 0, 0b001, 0b111, 0b1100]


VRF = {"s": Charge("vrf", 64, 8192), "b": Charge("vrf", 8192, 8192)}


def test_search_moves_a_use_before_a_load():
    units = [_unit(writes="s"), _unit(writes="b"), _unit("s", "x"), _unit("b", "y")]
    assert next(fitting_orders(units, VRF, set(), set())) == [0, 2, 1, 3]


def test_search_proves_that_nothing_fits():
    units = [_unit(writes="s"), _unit(writes="b"), _unit("s b", "x")]
    with pytest.raises(NoOrder) as none:
        next(fitting_orders(units, VRF, set(), set()))
    assert not none.value.exhausted


def test_search_stops_at_its_budget():
    units = [_unit(writes="s"), _unit(writes="b"), _unit("s b", "x")]
    with pytest.raises(NoOrder) as none:
        next(fitting_orders(units, VRF, set(), set(), budget=2))
    assert none.value.exhausted and none.value.steps == 3


def _fits(units: list[Unit], order: tuple[int, ...], charges: dict[str, Charge]) -> bool:
    """The oracle: walk `order`, a buffer live from its first to its last touching unit."""
    first = {n: min(k for k, i in enumerate(order) if n in units[i].touches) for n in charges}
    last = {n: max(k for k, i in enumerate(order) if n in units[i].touches) for n in charges}
    for k in range(len(order)):
        for memory in {c.memory for c in charges.values()}:
            live = sum(c.bytes for n, c in charges.items() if c.memory == memory and first[n] <= k <= last[n])
            if live > next(c.capacity for c in charges.values() if c.memory == memory):
                return False
    return True


def _legal(units: list[Unit], order: tuple[int, ...]) -> bool:
    done = 0
    for i in order:
        if predecessors(units)[i] & ~done:
            return False
        done |= 1 << i
    return True


@st.composite
def _programs(draw):
    """Up to 7 units over 4 buffers of 1–5 bytes in a memory of 6, each unit touching 1–3 of them."""
    names = "abcd"
    charges = {n: Charge("vrf", draw(st.integers(1, 5)), 6) for n in names}
    units = []
    for _ in range(draw(st.integers(1, 7))):
        touched = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        writes = draw(st.lists(st.sampled_from(touched), max_size=len(touched), unique=True))
        units.append(Unit(frozenset(set(touched) - set(writes)), frozenset(writes)))
    used = {n for u in units for n in u.touches}
    return units, {n: c for n, c in charges.items() if n in used}


@settings(max_examples=examples(300), deadline=None)
@given(_programs())
def test_search_finds_an_order_exactly_when_one_exists(program):
    units, charges = program
    exists = any(_fits(units, o, charges) for o in itertools.permutations(range(len(units))) if _legal(units, o))
    try:
        order = next(fitting_orders(units, charges, set(), set()))
    except NoOrder as none:
        assert not exists and not none.exhausted
    else:
        assert exists and _legal(units, tuple(order)) and _fits(units, tuple(order), charges)
