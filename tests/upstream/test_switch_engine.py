"""Port of upstream `furiosa-opt-examples/src/switch_engine.rs`: seven kernels that move bf16 data across
slices with `SwitchConfig.CustomBroadcast`, the config whose routing (upstream's snoop bitmap) the compiler
derives from the input and output Slice/Time mappings.

Each kernel is HBM → DM → fetch → switch → collect → commit → HBM. Upstream checks them bit-exact between
its VISA and LIR executors; here each test launches the kernel on the CPU backend and compares the result
with a numpy oracle (the switch only moves values, so equality is exact, compared bit for bit), and the
differential harness compares the CPU backend with the simulator. A second test per kernel compiles it and
checks that the switch engine config in the LIR carries the ring size the kernel states, and that the
schedule labels the exec command with it.

Upstream scopes most axes to the example that uses them; Python resolves `m[...]` names in the module, so
every axis keeps upstream's (already distinct) name at module level.
"""

import ml_dtypes
import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.resource import switch_cycles
from furiosa_opt.compiler.schedule import schedule

Chip, Cluster = m["1"], m["1 # 2"]
B, V = axes(B=8, V=16)  # time and packet axes shared by every example

# ── custom_broadcast (ring 4): the padding slot `1 # 4` becomes the fresh broadcast tile `Y`
A, Y = axes(A=64, Y=4)
Slice = m["A, 1 # 4"]
OutSlice = m["A, Y"]


@device(chip=1)
def custom_broadcast(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A, B, V"]]
) -> HbmTensor[bf16, Chip, m["A, Y, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=4), OutSlice, m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["A, Y, B, V"])


# ── custom_broadcast_ring2: the same pattern at ring 2 (slice volume 128 × 2)
A2, Y2 = axes(A2=128, Y2=2)


@device(chip=1)
def custom_broadcast_ring2(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A2, B, V"]]
) -> HbmTensor[bf16, Chip, m["A2, Y2, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["A2, 1 # 2"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=2), m["A2, Y2"], m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["A2, Y2, B, V"])


# ── custom_broadcast_ring8: the same pattern at ring 8 (slice volume 32 × 8)
A8, Y8 = axes(A8=32, Y8=8)


@device(chip=1)
def custom_broadcast_ring8(
    ctx: Context, input: HbmTensor[bf16, Chip, m["A8, B, V"]]
) -> HbmTensor[bf16, Chip, m["A8, Y8, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["A8, 1 # 8"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=8), m["A8, Y8"], m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["A8, Y8, B, V"])


# ── custom_broadcast_multi (ring 16): two padding slots become two broadcast tiles `Ym`, `Zm`
Am, Ym, Zm = axes(Am=16, Ym=4, Zm=4)


@device(chip=1)
def custom_broadcast_multi(
    ctx: Context, input: HbmTensor[bf16, Chip, m["Am, B, V"]]
) -> HbmTensor[bf16, Chip, m["Am, Ym, Zm, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["Am, 1 # 4, 1 # 4"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=16), m["Am, Ym, Zm"], m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["Am, Ym, Zm, B, V"])


# ── custom_broadcast_moved_axis: the live slice axis `Q` moves to (innermost) output time, `Yt` takes its slot
P, Q, Yt = axes(P=64, Q=4, Yt=4)


@device(chip=1)
def custom_broadcast_moved_axis(
    ctx: Context, input: HbmTensor[bf16, Chip, m["P, Q, B, V"]]
) -> HbmTensor[bf16, Chip, m["P, Yt, B, Q, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["P, Q"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=4), m["P, Yt"], m["B, Q"])
        .collect(m["B, Q"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, Q, V"])
    )
    return result.to_hbm(ctx.tdma, m["P, Yt, B, Q, V"])


# ── custom_broadcast_transpose: a pure slice permutation `[Pt, Qt]` → `[Qt, Pt]` over the whole ring
Pt, Qt = axes(Pt=32, Qt=8)


@device(chip=1)
def custom_broadcast_transpose(
    ctx: Context, input: HbmTensor[bf16, Chip, m["Pt, Qt, B, V"]]
) -> HbmTensor[bf16, Chip, m["Qt, Pt, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["Pt, Qt"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=256), m["Qt, Pt"], m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["Qt, Pt, B, V"])


# ── custom_broadcast_split_tile (ring 256): the padding slots either side of `Ps` become two digits of `Ls`
Ps, Ls = axes(Ps=64, Ls=4)


@device(chip=1)
def custom_broadcast_split_tile(
    ctx: Context, input: HbmTensor[bf16, Chip, m["Ps, B, V"]]
) -> HbmTensor[bf16, Chip, m["Ls / 2, Ps, Ls % 2, B, V"]]:
    dm = input.to_dm(ctx.tdma, Cluster, m["1 # 2, Ps, 1 # 2"], m["B, V"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["B"], m["V"])
        .switch(SwitchConfig.CustomBroadcast(ring_size=256), m["Ls / 2, Ps, Ls % 2"], m["B"])
        .collect(m["B"], m["V"])
        .commit_trim(m["V"])
        .commit(m["B, V"])
    )
    return result.to_hbm(ctx.tdma, m["Ls / 2, Ps, Ls % 2, B, V"])


# kernel → (input axes, stated ring, oracle from the input array to the output array; the output's axes are
# its mapping's axes in order of first appearance)
CASES = {
    custom_broadcast: ("A, B, V", 4, lambda x: np.broadcast_to(x[:, None], (A.size, Y.size, B.size, V.size))),
    custom_broadcast_ring2: ("A2, B, V", 2, lambda x: np.broadcast_to(x[:, None], (A2.size, Y2.size, B.size, V.size))),
    custom_broadcast_ring8: ("A8, B, V", 8, lambda x: np.broadcast_to(x[:, None], (A8.size, Y8.size, B.size, V.size))),
    custom_broadcast_multi: (
        "Am, B, V",
        16,
        lambda x: np.broadcast_to(x[:, None, None], (Am.size, Ym.size, Zm.size, B.size, V.size)),
    ),
    # [P, Q, B, V] → [P, Yt, B, Q, V]: Q moves inside B, Yt repeats
    custom_broadcast_moved_axis: (
        "P, Q, B, V",
        4,
        lambda x: np.broadcast_to(x.transpose(0, 2, 1, 3)[:, None], (P.size, Yt.size, B.size, Q.size, V.size)),
    ),
    custom_broadcast_transpose: ("Pt, Qt, B, V", 256, lambda x: x.transpose(1, 0, 2, 3)),
    # [Ps, B, V] → axes (Ls, Ps, B, V): both digits of Ls are broadcast tiles, so every Ls holds the input
    custom_broadcast_split_tile: ("Ps, B, V", 256, lambda x: np.broadcast_to(x, (Ls.size, Ps.size, B.size, V.size))),
}


def run(kernel, values: np.ndarray, layout: str) -> np.ndarray:
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(values, bf16, m[layout]).to_hbm(ctx.pdma)
        return launch(kernel, ctx, input).to_host(ctx.pdma).to_numpy()


def random_input(layout: str, seed: int) -> np.ndarray:
    shape = tuple(axis.size for axis in (globals()[name.strip()] for name in layout.split(",")))
    return np.random.default_rng(seed).standard_normal(shape).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("kernel", list(CASES), ids=lambda k: k.__name__)
def test_values_match_numpy(kernel):
    layout, _, oracle = CASES[kernel]
    values = random_input(layout, seed=len(kernel.__name__))
    actual = run(kernel, values, layout)
    expected = oracle(values)
    assert actual.dtype == ml_dtypes.bfloat16
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual.view(np.uint16), expected.view(np.uint16))


OUT = np.arange(256)  # output slice index within the cluster
# kernel → the input slice each output slice reads at each moved time step (upstream's snoop bitmap),
# worked out by hand from the mappings: an output slice's digits name the input slice's digits
ROUTING = {
    custom_broadcast: (OUT // 4 * 4)[:, None],  # (a, y) reads (a, pad 0)
    custom_broadcast_ring2: (OUT // 2 * 2)[:, None],
    custom_broadcast_ring8: (OUT // 8 * 8)[:, None],
    custom_broadcast_multi: (OUT // 16 * 16)[:, None],  # (am, ym, zm) reads (am, 0, 0)
    custom_broadcast_moved_axis: OUT[:, None] // 4 * 4 + np.arange(Q.size),  # (p, yt) reads (p, q) at step q
    custom_broadcast_transpose: (OUT % Pt.size * Qt.size + OUT // Pt.size)[:, None],  # (qt, pt) reads (pt, qt)
    custom_broadcast_split_tile: (OUT % 128 // 2 * 2)[:, None],  # (l1, ps, l0) reads (0, ps, 0)
}


@pytest.mark.parametrize("kernel", list(CASES), ids=lambda k: k.__name__)
def test_routing_matches_the_mappings(kernel):
    config = next(e for c in compile_kernel(kernel).lir.commands for e in c.engines if e.stage == "switch")
    expected = ROUTING[kernel]
    assert config.moved == expected.shape[1]
    np.testing.assert_array_equal(np.array(config.sources).reshape(expected.shape), expected)


@pytest.mark.parametrize("kernel", list(CASES), ids=lambda k: k.__name__)
def test_compiled_switch_carries_the_stated_ring(kernel):
    _, ring, _ = CASES[kernel]
    compiled = compile_kernel(kernel)
    assert compiled.ok, compiled.diagnostics
    switches = [(c, e) for c in compiled.lir.commands for e in c.engines if e.stage == "switch"]
    assert len(switches) == 1
    command, config = switches[0]
    assert config.ring == ring
    # every example fetches `B` (8 steps) of `V` (16 bf16 = 32 bytes, one flit) per step
    assert (config.in_steps, config.flits) == (B.size, 1)
    assert switch_cycles(config) == ring * B.size * 1
    slot = next(s for s in schedule(compiled.lir).slots if s.costed.command is command)
    assert slot.costed.tpe == "Main"
    assert slot.end - slot.start >= switch_cycles(config)
