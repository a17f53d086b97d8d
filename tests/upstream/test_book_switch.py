"""Port of the examples of upstream's book page `docs/src/computing-tensors/switch-engine.md` (the Switch
Engine), with the page's cycle estimates as cost-model tests.

The book writes each example as a fragment from a `FetchTensor` to a `SwitchTensor` (Forwarding: to a
`CollectTensor`, since it skips `.switch`). Each becomes a kernel here: HBM input → `to_dm` with the
fragment's Cluster and Slice and an element its fetch reads → `fetch(Time, Packet)` → the book's `.switch`
call as written → `collect` → `commit_trim` → `commit` → HBM. The switch only moves values, so every numpy
oracle is exact: the output holds, at each logical coordinate, the input value there (broadcast axes repeat
it). The differential harness runs the same kernels on the simulator, whose ring works from the config
numbers alone; for the `CustomBroadcast` examples we also check the derived routing against the book's
bitmap tables. The book's Cluster, Slice, Time and Packet are kept, `C = 63` padded to `C # 64` included
(`broadcast01`, `broadcast1`, `transpose`): that packet is collected into several flits, the last one partly
padding, and the HBM output drops the padding again.

How this differs from the book:
* Every example declares its own `A`, `B`, `C`, ... with different sizes, and `m[...]` resolves names in the
  caller's scope. So each example's axes are bound at module level just before its kernel (the signature is
  read at definition) and unpacked again in the kernel body and the tests (read when they run).
* Routing (`CustomBroadcast`): the book's bitmap table for `arbitrary_permutation` has two rows (4 and 5)
  that contradict their own digit column; we assert the rows the mapping implies (see the test).
* The book prints 96 cycles for `partial_axis_extraction` from the *output* Time (D × C = 24), although its
  Performance section defines Time::SIZE as the input's time steps; our model uses the input Time (D = 8)
  and gives 32.
"""

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.resource import switch_cycles
from furiosa_opt.compiler.schedule import schedule, schedule_json
from furiosa_opt.dtypes import DType

Chip = m["1"]

# ── Forwarding: no exchange, so no `.switch` at all; the fetch goes straight to collect
FORWARDING = axes(A=256, B=64, C=32)
A, B, C = FORWARDING


@device(chip=1)
def forwarding(ctx: Context, input: HbmTensor[f32, Chip, m["A, B, C"]]) -> HbmTensor[f32, Chip, m["A, B, C"]]:
    A, B, C = FORWARDING
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B, C"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C"])
        .collect(m["B, C / 8"], m["C % 8"])
        .commit_trim(m["C % 8"])
        .commit(m["B, C"])
    )
    return result.to_hbm(ctx.tdma, m["A, B, C"])


# ── Broadcast01: both inner Slice sub-dimensions move to Time; X and Y fill their slots
BROADCAST01 = axes(A=256, B=64, C=63, D=2, X=2, Y=2)
A, B, C, D, X, Y = BROADCAST01


@device(chip=1)
def broadcast01(
    ctx: Context, input: HbmTensor[f32, Chip, m["D, A, B, C"]]
) -> HbmTensor[f32, Chip, m["D, A / 4, X, Y, B / 4, A / 2 % 2, B % 4, A % 2, C"]]:
    A, B, C, D, X, Y = BROADCAST01
    dm = input.to_dm(ctx.tdma, m["D"], m["A"], m["B, C # 64"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C # 64"])
        .switch(
            SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4), m["A / 4, X, Y"], m["B / 4, A / 2 % 2, B % 4, A % 2"]
        )
        .collect(m["B / 4, A / 2 % 2, B % 4, A % 2, C # 64 / 8"], m["C # 64 % 8"])  # 8 flits, the last one padded
        .commit_trim(m["C # 64 % 8"])
        .commit(m["B / 4, A / 2 % 2, B % 4, A % 2, C # 64"])
    )
    return result.to_hbm(ctx.tdma, m["D, A / 4, X, Y, B / 4, A / 2 % 2, B % 4, A % 2, C"])


# ── Broadcast1: slice1 moves to Time, X takes its slot, slice0 stays
BROADCAST1 = axes(A=256, B=64, C=63, X=4)
A, B, C, X = BROADCAST1


@device(chip=1)
def broadcast1(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B, C"]]
) -> HbmTensor[i8, Chip, m["A / 32, X, A % 8, B, A / 8 % 4, C"]]:
    A, B, C, X = BROADCAST1
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B, C # 64"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C # 64"])
        .switch(SwitchConfig.Broadcast1(slice1=4, slice0=8), m["A / 32, X, A % 8"], m["B, A / 8 % 4"])
        .collect(m["B, A / 8 % 4, C # 64 / 32"], m["C # 64 % 32"])  # two flits, the second one padded
        .commit_trim(m["C # 64 % 32"])
        .commit(m["B, A / 8 % 4, C # 64"])
    )
    return result.to_hbm(ctx.tdma, m["A / 32, X, A % 8, B, A / 8 % 4, C"])


# ── Transpose: swap slice1 and slice0 inside Slice; Time unchanged
TRANSPOSE = axes(A=256, B=64, C=63)
A, B, C = TRANSPOSE


@device(chip=1)
def transpose(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B, C"]]
) -> HbmTensor[i8, Chip, m["A / 64, A % 2, A / 2 % 32, B, C"]]:
    A, B, C = TRANSPOSE
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B, C # 64"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C # 64"])
        .switch(SwitchConfig.Transpose(slice1=32, slice0=2), m["A / 64, A % 2, A / 2 % 32"], m["B"])
        .collect(m["B, C # 64 / 32"], m["C # 64 % 32"])
        .commit_trim(m["C # 64 % 32"])
        .commit(m["B, C # 64"])
    )
    return result.to_hbm(ctx.tdma, m["A / 64, A % 2, A / 2 % 32, B, C"])


# ── InterTranspose: slice1 swaps with the Time sub-dimension time1 of the same size
INTER_TRANSPOSE = axes(A=256, B=8, C=32)
A, B, C = INTER_TRANSPOSE


@device(chip=1)
def inter_transpose(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B, C"]]
) -> HbmTensor[i8, Chip, m["A / 32, B / 2 % 2, A % 16, B / 4, B % 2, A / 16 % 2, C"]]:
    A, B, C = INTER_TRANSPOSE
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B, C # 32"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C # 32"])
        .switch(
            SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2),
            m["A / 32, B / 2 % 2, A % 16"],
            m["B / 4, B % 2, A / 16 % 2"],
        )
        .collect(m["B / 4, B % 2, A / 16 % 2"], m["C # 32"])
        .commit_trim(m["C # 32"])
        .commit(m["B / 4, B % 2, A / 16 % 2, C # 32"])
    )
    return result.to_hbm(ctx.tdma, m["A / 32, B / 2 % 2, A % 16, B / 4, B % 2, A / 16 % 2, C"])


# ── TransposedBroadcast1: slice0 moves to innermost Time, slice1 to innermost Slice, Y fills the middle
TRANSPOSED_BROADCAST1 = axes(A=256, B=16, C=32, Y=8)
A, B, C, Y = TRANSPOSED_BROADCAST1


@device(chip=1)
def transposed_broadcast1(
    ctx: Context, input: HbmTensor[i8, Chip, m["A, B, C"]]
) -> HbmTensor[i8, Chip, m["A / 64, Y, A / 8 % 8, B, A % 8, C"]]:
    A, B, C, Y = TRANSPOSED_BROADCAST1
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B, C # 32"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["C # 32"])
        .switch(SwitchConfig.TransposedBroadcast1(slice1=8, slice0=8), m["A / 64, Y, A / 8 % 8"], m["B, A % 8"])
        .collect(m["B, A % 8"], m["C # 32"])
        .commit_trim(m["C # 32"])
        .commit(m["B, A % 8, C # 32"])
    )
    return result.to_hbm(ctx.tdma, m["A / 64, Y, A / 8 % 8, B, A % 8, C"])


# ── CustomBroadcast, Example 1: reverse the four slice sub-dimensions (A / 4, A % 4, B / 4, B % 4)
ARBITRARY_PERMUTATION = axes(A=16, B=16, C=8, D=8, E=8)
A, B, C, D, E = ARBITRARY_PERMUTATION


@device(chip=1)
def arbitrary_permutation(
    ctx: Context, input: HbmTensor[f32, Chip, m["A, B, C, D, E"]]
) -> HbmTensor[f32, Chip, m["B % 4, B / 4, A % 4, A / 4, C, D, E"]]:
    A, B, C, D, E = ARBITRARY_PERMUTATION
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A, B"], m["C, D, E"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["C"], m["D, E"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=256), m["B % 4, B / 4, A % 4, A / 4"], m["C"])
        .collect(m["C, D"], m["E"])
        .commit_trim(m["E"])
        .commit(m["C, D, E"])
    )
    return result.to_hbm(ctx.tdma, m["B % 4, B / 4, A % 4, A / 4, C, D, E"])


# ── CustomBroadcast, Example 2: the non-contiguous A % 2 and B % 2 move to Time; X and Y take their slots
MULTI_AXIS_BROADCAST = axes(A=16, B=16, C=8, D=8, E=8, X=2, Y=2)
A, B, C, D, E, X, Y = MULTI_AXIS_BROADCAST


@device(chip=1)
def multi_axis_broadcast(
    ctx: Context, input: HbmTensor[f32, Chip, m["A, B, C, D, E"]]
) -> HbmTensor[f32, Chip, m["A / 2, X, B / 2, Y, C, A % 2, B % 2, D, E"]]:
    A, B, C, D, E, X, Y = MULTI_AXIS_BROADCAST
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A, B"], m["C, D, E"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["C"], m["D, E"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=32), m["A / 2, X, B / 2, Y"], m["C, A % 2, B % 2"])
        .collect(m["C, A % 2, B % 2, D"], m["E"])
        .commit_trim(m["E"])
        .commit(m["C, A % 2, B % 2, D, E"])
    )
    return result.to_hbm(ctx.tdma, m["A / 2, X, B / 2, Y, C, A % 2, B % 2, D, E"])


# ── CustomBroadcast, Example 3: only the 3 live values of `C # 4` move to Time; X takes the slot
PARTIAL_AXIS_EXTRACTION = axes(A=16, B=4, C=3, D=8, E=8, X=4)
A, B, C, D, E, X = PARTIAL_AXIS_EXTRACTION


@device(chip=1)
def partial_axis_extraction(
    ctx: Context, input: HbmTensor[f32, Chip, m["A, B, C, D, E"]]
) -> HbmTensor[f32, Chip, m["A, B, X, D, C, E"]]:
    A, B, C, D, E, X = PARTIAL_AXIS_EXTRACTION
    dm = input.to_dm(ctx.tdma, m["1 # 2"], m["A, B, C # 4"], m["D, E"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["D"], m["E"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=4), m["A, B, X"], m["D, C"])
        .collect(m["D, C"], m["E"])
        .commit_trim(m["E"])
        .commit(m["D, C, E"])
    )
    return result.to_hbm(ctx.tdma, m["A, B, X, D, C, E"])


# ---- values ---------------------------------------------------------------------------------------------


def random_input(dtype: DType, *axes_: Axis, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = tuple(axis.size for axis in axes_)
    if dtype == f32:
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(-128, 128, shape).astype(np.int8)


def run(kernel, dtype: DType, values: np.ndarray, *axes_: Axis) -> np.ndarray:
    """Launch `kernel` on the input `values` laid out as `[axes_]` in HBM; the output as a numpy array."""
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(values, dtype, m[axes_]).to_hbm(ctx.pdma)
        result = launch(kernel, ctx, input).to_host(ctx.pdma).to_numpy()
    assert result.dtype == values.dtype
    return result


def check(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_forwarding():
    A, B, C = FORWARDING
    x = random_input(f32, A, B, C)
    check(run(forwarding, f32, x, A, B, C), x)


def test_broadcast01():
    A, B, C, D, X, Y = BROADCAST01
    x = random_input(f32, D, A, B, C)
    # output axes (D, A, X, Y, B, C): every X, Y cell repeats the input
    check(run(broadcast01, f32, x, D, A, B, C), np.broadcast_to(x[:, :, None, None], (2, 256, 2, 2, 64, 63)))


def test_broadcast1():
    A, B, C, X = BROADCAST1
    x = random_input(i8, A, B, C)
    check(run(broadcast1, i8, x, A, B, C), np.broadcast_to(x[:, None], (256, 4, 64, 63)))  # axes (A, X, B, C)


def test_transpose():
    A, B, C = TRANSPOSE
    x = random_input(i8, A, B, C)
    check(run(transpose, i8, x, A, B, C), x)  # the slices swap places, every value keeps its coordinate


def test_inter_transpose():
    A, B, C = INTER_TRANSPOSE
    x = random_input(i8, A, B, C)
    check(run(inter_transpose, i8, x, A, B, C), x)


def test_transposed_broadcast1():
    A, B, C, Y = TRANSPOSED_BROADCAST1
    x = random_input(i8, A, B, C)
    check(run(transposed_broadcast1, i8, x, A, B, C), np.broadcast_to(x[:, None], (256, 8, 16, 32)))  # (A, Y, B, C)


def test_arbitrary_permutation():
    A, B, C, D, E = ARBITRARY_PERMUTATION
    x = random_input(f32, A, B, C, D, E)
    check(run(arbitrary_permutation, f32, x, A, B, C, D, E), x.transpose(1, 0, 2, 3, 4))  # axes (B, A, C, D, E)


def test_multi_axis_broadcast():
    A, B, C, D, E, X, Y = MULTI_AXIS_BROADCAST
    x = random_input(f32, A, B, C, D, E)
    # axes (A, X, B, Y, C, D, E)
    check(
        run(multi_axis_broadcast, f32, x, A, B, C, D, E), np.broadcast_to(x[:, None, :, None], (16, 2, 16, 2, 8, 8, 8))
    )


def test_partial_axis_extraction():
    A, B, C, D, E, X = PARTIAL_AXIS_EXTRACTION
    x = random_input(f32, A, B, C, D, E)
    # axes (A, B, X, D, C, E): C moved inside D, X repeats
    expected = np.broadcast_to(x.transpose(0, 1, 3, 2, 4)[:, :, None], (16, 4, 4, 8, 3, 8))
    check(run(partial_axis_extraction, f32, x, A, B, C, D, E), expected)


# ---- routing: the book's bitmap tables ----------------------------------------------------------------


def routing(kernel) -> np.ndarray:
    """Per output slice, the input slice it reads at each moved time step (upstream's snoop bitmap)."""
    config = switch_config(kernel)
    return np.array(config.sources).reshape(256, config.moved)


def test_arbitrary_permutation_bitmap():
    sources = routing(arbitrary_permutation)
    # the book's table: bitmap index → ring group (the one input slice read)
    for index, group in {0: 0, 1: 64, 2: 128, 3: 192, 255: 255}.items():
        assert sources[index].tolist() == [group]
    # The book's rows 4 and 5 print `(0, 0, 1, 0)` → (A, B) = (0, 1), group 1 and `(0, 0, 1, 1)` → (4, 1), group 65,
    # which contradicts their own digit column: A % 4 = 1 means A = 1 (and A = 5), B = 0, so groups 16 and 80.
    assert sources[4].tolist() == [16] and sources[5].tolist() == [80]
    # all rows: output (B % 4, B / 4, A % 4, A / 4) reads input (A, B) = A * 16 + B
    out = np.arange(256)
    a, b = (out % 4) * 4 + out // 4 % 4, (out // 16 % 4) * 4 + out // 64
    np.testing.assert_array_equal(sources[:, 0], a * 16 + b)


def test_multi_axis_broadcast_bitmap():
    sources = routing(multi_axis_broadcast)
    for index, groups in {0: [0, 1, 16, 17], 1: [0, 1, 16, 17], 2: [2, 3, 18, 19], 3: [2, 3, 18, 19]}.items():
        assert sources[index].tolist() == groups
    assert sources[255].tolist() == [238, 239, 254, 255]
    # all rows: output (A / 2, X, B / 2, Y) reads (A / 2 · 2 + A % 2, B / 2 · 2 + B % 2) at step (A % 2, B % 2)
    out = np.arange(256)
    a2, b2 = out // 32, out // 2 % 8
    steps = [(i, j) for i in range(2) for j in range(2)]
    expected = np.stack([(a2 * 2 + i) * 16 + b2 * 2 + j for i, j in steps], axis=1)
    np.testing.assert_array_equal(sources, expected)


def test_partial_axis_extraction_bitmap():
    sources = routing(partial_axis_extraction)
    for index in range(4):
        assert sources[index].tolist() == [0, 1, 2]  # the padding cell, 3, is never read
    assert sources[4].tolist() == [4, 5, 6]
    assert sources[255].tolist() == [252, 253, 254]
    out = np.arange(256)
    np.testing.assert_array_equal(sources, (out // 4 * 4)[:, None] + np.arange(3))


# ---- cycle estimates ----------------------------------------------------------------------------------


def switch_config(kernel) -> dict:
    compiled = compile_kernel(kernel)
    assert compiled.ok, compiled.diagnostics
    found = [e for c in compiled.lir.commands for e in c.engines if e.stage == "switch"]
    assert len(found) == 1
    return found[0]


# kernel → (the config as the book writes it, ring_size, the book's cycle estimate)
BOOK_CYCLES = {
    broadcast01: (SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4), 4, 2048),
    broadcast1: (SwitchConfig.Broadcast1(slice1=4, slice0=8), 32, 4096),
    transpose: (SwitchConfig.Transpose(slice1=32, slice0=2), 64, 8192),
    inter_transpose: (SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2), 32, 256),
    transposed_broadcast1: (SwitchConfig.TransposedBroadcast1(slice1=8, slice0=8), 64, 1024),
    arbitrary_permutation: (SwitchConfig.CustomBroadcast(ring_size=256), 256, 16384),
    multi_axis_broadcast: (SwitchConfig.CustomBroadcast(ring_size=32), 32, 2048),
    # The book prints 96 = 4 × 24 × 1, taking Time::SIZE from the output Time (D × C = 8 × 3); its own
    # Performance section defines Time::SIZE as the input's time steps, which our model uses: 4 × 8 × 1.
    partial_axis_extraction: (SwitchConfig.CustomBroadcast(ring_size=4), 4, 32),
}


@pytest.mark.parametrize("kernel", list(BOOK_CYCLES), ids=lambda k: k.__name__)
def test_book_cycle_estimate(kernel):
    _, ring, cycles = BOOK_CYCLES[kernel]
    config = switch_config(kernel)
    assert config.ring == ring
    assert switch_cycles(config) == cycles


def test_cycle_factors():
    """The three factors of each estimate, as the book lists them: (ring_size, Time::SIZE, flits_per_packet)."""
    factors = {k: (c.ring, c.in_steps, c.flits) for k in BOOK_CYCLES for c in [switch_config(k)]}
    assert factors == {
        broadcast01: (4, 64, 8),  # f32 × 64 / 32
        broadcast1: (32, 64, 2),  # i8 × 64 / 32
        transpose: (64, 64, 2),
        inter_transpose: (32, 8, 1),
        transposed_broadcast1: (64, 16, 1),
        arbitrary_permutation: (256, 8, 8),
        multi_axis_broadcast: (32, 8, 8),
        partial_axis_extraction: (4, 8, 1),  # the book: (4, 24, 1), the output Time
    }


@pytest.mark.parametrize("kernel", list(BOOK_CYCLES), ids=lambda k: k.__name__)
def test_schedule_shows_the_switch(kernel):
    config_, ring, cycles = BOOK_CYCLES[kernel]
    compiled = compile_kernel(kernel)
    assert compiled.ok, compiled.diagnostics
    plan = schedule(compiled.lir)
    (index,) = [c.index for c in compiled.lir.commands if any(e.stage == "switch" for e in c.engines)]
    (instruction,) = [i for i in schedule_json(plan)["instructions"] if i["index"] == index]
    assert instruction["tpe"] == "Main"
    assert f"switch[{config_}, ring {ring}: {cycles} cycles]" in instruction["description"]
    lifetime = instruction["lifetime"]
    assert lifetime["end"] - lifetime["begin"] >= cycles


def test_forwarding_has_no_switch_stage():
    compiled = compile_kernel(forwarding)
    assert compiled.ok, compiled.diagnostics
    stages = [e.stage for c in compiled.lir.commands for e in c.engines]
    assert "collect" in stages and "switch" not in stages
