"""Port of the book's reducer examples: `docs/src/computing-tensors/vector-engine/inter-slice-reducer.md` (dummy
replacement, broadcast into a fresh Slice axis X, promotion of a Time axis into the freed Slice slot) and
`docs/src/computing-tensors/vector-engine/intra-slice-reduce.md` (R reduced in Time, in the packet, in both, and
per slice with R's Slice portion kept; and the example the book says is rejected for needing 12 accumulator
slots).

The book shows each example as a function from the tensor the fragment starts with (a `CollectTensor`, or the
tagged `VectorBranchTensor`) to the tensor it ends with. Each becomes a kernel here: HBM → DM → begin → fetch →
collect to the fragment's input type → the fragment's Vector Engine chain → (for the intra-slice fragments,
which end in Way4 at the reducer: `vector_widen_pad` back to Way8 and `vector_final`) → commit → HBM. Each test
runs its kernel on the CPU backend against a numpy oracle that folds every output from the identity in the wire
order of the reduced axes (as upstream's `reduce` does: saturating per step for AddSat, one f32 rounding per
step for Add), compared bit for bit; the differential harness runs the kernels on the simulator too.

Differences from the book:
* Axis names: the book redeclares `A` and `R` with different sizes per example; Python resolves `m[...]` in
  the module, so the 256-long A is `A256`, the 16-long R is `R16`, the 13-long R is `R13`, and the rejected
  example's `A = 6`, `B = 16` are `A6`, `B16`. The other names keep the book's (consistent) sizes.
* The per-slice example's Slice `R13 # 32 / 8 # 256` puts 8 R-positions in each slice. A DMA straight from an
  HBM `[R13 # 32]` into that layout is refused here (`dma-tail-alignment`, see
  `test_per_slice_input_cannot_be_dmaed_directly`), so the kernel moves a plain 32-long axis `Q32` into DM with
  the same shape and relabels it (`DmTensor.reshape`) as R13's padded layout. The 19 cells past R = 12 then
  hold real numbers from Q32 that the reduce must skip, which is the book's point (padding holds arbitrary data).
  Both backends skip them: the fold reads the Slice with Time and Packet, since which cells are padding
  differs from slice to slice (`test_reduce_slice_time_packet_on_the_simulator`).
* The book says a packet reduce is a 2-level tree `op(op(a, b), op(c, d))`; upstream's CPU backend (and ours)
  folds the four lanes sequentially from the identity. The oracles follow upstream's backend, and
  `test_reduce_packet_add_f32` shows that the tree order would differ on this input.
* `invalid_too_many_slots` is not a kernel: the book says the call is rejected (12 accumulator slots, 8
  available). Upstream's code does not check that limit; ours does (`vector-reduce-slots`), on a kernel-free
  stream here.

Padding identities: `test_reduce_time_packet_padding_lanes_hold_minus_infinity` shows f32 Max's `-inf` in lanes
1..3 of the `[1 # 4]` packet right after the reducer; the kernel cannot commit them as they are, because
`vector_widen_pad` (needed to reach `vector_final`) relays them to 0, as upstream's does.
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

Chip, Cluster = m["1"], m["1 # 2"]
A, B, R = axes(A=512, B=2, R=4)  # B is the Cluster axis of the inter-slice examples
P, W, X, S, U, V = axes(P=8, W=64, X=4, S=2, U=2, V=4)
A256, R16, R13, Q32 = axes(A256=256, R16=16, R13=13, Q32=32)
A6, B16 = axes(A6=6, B16=16)

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


# ---- inter-slice-reducer.md -----------------------------------------------------------------------------------


@device(chip=1)
def inter_slice_add(ctx: Context, input: HbmTensor[i32, Chip, m["B, R, A"]]) -> HbmTensor[i32, Chip, m["B, A"]]:
    """Dummy replacement, `AR -> A` per cluster: R's Slice slot becomes the dummy `1 # 4`."""
    dm = input.to_dm(ctx.tdma, m["B"], m["A / 8, R"], m["A % 8"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["A % 8"])
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_inter_slice_reduce(InterSliceReduceOpI32.AddSat, m["A / 8, 1 # 4"], m["1"])
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["B, A"])


@device(chip=1)
def broadcast_into_x(
    ctx: Context, input: HbmTensor[f32, Chip, m["B, W, R, P"]]
) -> HbmTensor[f32, Chip, m["B, W, X, P"]]:
    """Broadcast into a new Slice axis, `PRW -> PWX`: the fresh X takes R's slot, every X holds the sum."""
    dm = input.to_dm(ctx.tdma, m["B"], m["W, R"], m["P"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["P"])
        .collect(m["1"], m["P"])
        .vector_init()
        .vector_inter_slice_reduce(InterSliceReduceOpF32.Add, m["W, X"], m["1"])
        .vector_final()
        .commit_trim(m["P"])
        .commit(m["P"])
    )
    return result.to_hbm(ctx.tdma, m["B, W, X, P"])


@device(chip=1)
def axis_promotion(
    ctx: Context, input: HbmTensor[f32, Chip, m["B, W, R, S, V, U, P"]]
) -> HbmTensor[f32, Chip, m["B, W, V, S, U, P"]]:
    """Promotion from Time, `PRSUVW -> PSUVW`: V, the middle Time axis, fills R's slot; S, U stay in order."""
    dm = input.to_dm(ctx.tdma, m["B"], m["W, R"], m["S, V, U, P"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["S, V, U"], m["P"])
        .collect(m["S, V, U"], m["P"])
        .vector_init()
        .vector_inter_slice_reduce(InterSliceReduceOpF32.Add, m["W, V"], m["S, U"])
        .vector_final()
        .commit_trim(m["P"])
        .commit(m["S, U, P"])
    )
    return result.to_hbm(ctx.tdma, m["B, W, V, S, U, P"])


# ---- intra-slice-reduce.md ------------------------------------------------------------------------------------


@device(chip=1)
def reduce_time(ctx: Context, input: HbmTensor[i32, Chip, m["A, R16"]]) -> HbmTensor[i32, Chip, m["A"]]:
    """R16 only in Time: accumulated over 16 time steps (AddSat), the packet `A % 2` kept."""
    transposed = input.to_hbm(ctx.tdma, m["R16, A"])
    dm = transposed.to_dm(ctx.tdma, Cluster, m["A / 2"], m["R16, A % 2"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["R16"], m["A % 2"])
        .collect(m["R16"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        # the book's fragment
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, R16, m["1"], m["A % 2 # 4"])
        # back to Way8 and out
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def reduce_packet(ctx: Context, input: HbmTensor[f32, Chip, m["A, R"]]) -> HbmTensor[f32, Chip, m["A"]]:
    """R only in the packet: the four lanes fold into lane 0 (`1 # 4`), A % 2 stays in Time."""
    dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2, R"])
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["A % 2"], m["R"])
        .collect(m["A % 2"], m["R # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["R"])
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, R, m["A % 2"], m["1 # 4"])
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["A % 2, 1 # 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


def _reduce_time_packet_chain(ctx: Context, dm):
    """The book's `reduce_time_packet` up to its reducer: R16 / 4 in Time, R16 % 4 in the packet, f32 Max."""
    return (
        ctx.main.begin(dm.view())
        .fetch(m["R16 / 4"], m["R16 % 4"])
        .collect(m["R16 / 4"], m["R16 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["R16 % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Max, R16, m["1"], m["1 # 4"])
    )


@device(chip=1)
def reduce_time_packet(ctx: Context, input: HbmTensor[f32, Chip, m["A256, R16"]]) -> HbmTensor[f32, Chip, m["A256"]]:
    """R16 in both: R16 % 4 folds across the lanes, R16 / 4 across time steps (Max); one A per slice."""
    dm = input.to_dm(ctx.tdma, Cluster, m["A256"], m["R16"])
    result = (
        _reduce_time_packet_chain(ctx, dm)
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    return result.to_hbm(ctx.tdma, m["A256"])


PER_SLICE_SLICE, PER_SLICE_ELEMENT = m["R13 # 32 / 8 # 256"], m["R13 # 32 % 8"]


@device(chip=1)
def reduce_slice_time_packet(
    ctx: Context, input: HbmTensor[i32, Chip, m["Q32"]]
) -> HbmTensor[i32, Chip, m["R13 # 32 / 8, 1 # 8"]]:
    """R13 (padded to 32) in Slice (groups of 8), Time (pairs of 4) and packet (4): each slice folds only
    its live R positions (Min); the Slice portion stays, so the result is one minimum per group of 8."""
    staged = input.to_dm(ctx.tdma, Cluster, m["Q32 / 8 # 256"], m["Q32 % 8"])
    dm = staged.reshape(Chip, Cluster, PER_SLICE_SLICE, PER_SLICE_ELEMENT)  # Q32's cells 13..31: R13's padding
    result = (
        ctx.main.begin(dm.view())
        .fetch(m["R13 # 32 / 4 % 2"], m["R13 # 32 % 4"])
        .collect(m["R13 # 32 / 4 % 2"], m["R13 # 32 % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["R13 # 32 % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpI32.Min, R13, m["1"], m["1 # 4"])
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["1 # 8"])
    )
    return result.to_hbm(ctx.tdma, m["R13 # 32 / 8, 1 # 8"])


# ---- oracles --------------------------------------------------------------------------------------------------


def add_sat(acc, x):
    return np.clip(acc.astype(np.int64) + x, I32_MIN, I32_MAX).astype(np.int32)


def add_f32(acc, x):
    return (acc + x).astype(np.float32)  # float32 + float32: one IEEE single rounding


def fold(values: np.ndarray, axis: int, step, identity) -> np.ndarray:
    """`acc = step(acc, x)` from `identity` along `axis` in index order (the reduced axis's wire order)."""
    moved = np.moveaxis(values, axis, 0)
    acc = np.full(moved.shape[1:], identity, dtype=values.dtype)
    for x in moved:
        acc = step(acc, x)
    return acc


def run(kernel, host: HostTensor) -> np.ndarray:
    with Context.acquire() as ctx:
        return launch(kernel, ctx, host.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()


def assert_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


def rand(dtype, mapping: str, seed: int) -> tuple[HostTensor, np.ndarray]:
    host = HostTensor.rand(dtype, m[mapping], np.random.default_rng(seed))
    return host, host.to_numpy()


def padded_with_the_identity(rng: np.random.Generator) -> np.ndarray:
    """Q32 for the per-slice kernel with R13's 19 padding cells holding Min's identity, i32::MAX: the book's
    identity-element padding, under which folding a padding cell or not gives the same minimum."""
    q = rng.integers(I32_MIN, I32_MAX, 32, dtype=np.int32, endpoint=True)
    q[13:] = I32_MAX
    return q


# ---- inter-slice tests ----------------------------------------------------------------------------------------


def test_inter_slice_add_dummy_replacement():
    host, x = rand(i32, "B, R, A", 1)  # i32 over all codes: the sums saturate
    expected = fold(x, 1, add_sat, 0)  # [B, A]
    assert_bits(run(inter_slice_add, host), expected)
    assert (expected == I32_MAX).any() and (fold(x[:, ::-1], 1, add_sat, 0) != expected).any()


def test_broadcast_into_x():
    host, x = rand(f32, "B, W, R, P", 2)
    total = fold(x, 2, add_f32, np.float32(0))  # [B, W, P]
    expected = np.repeat(total[:, :, None, :], X.size, axis=2)  # every X holds the sum
    assert_bits(run(broadcast_into_x, host), expected)
    assert (fold(x[:, :, ::-1], 2, add_f32, np.float32(0)) != total).any()  # the fold order shows


def test_axis_promotion():
    host, x = rand(f32, "B, W, R, S, V, U, P", 3)
    total = fold(x, 2, add_f32, np.float32(0))  # [B, W, S, V, U, P]
    expected = total.transpose(0, 1, 3, 2, 4, 5)  # V from Time to the Slice slot: [B, W, V, S, U, P]
    result = run(axis_promotion, host)
    assert result.shape == (B.size, W.size, V.size, S.size, U.size, P.size)
    assert_bits(result, expected)


# ---- intra-slice tests ----------------------------------------------------------------------------------------


def test_reduce_time():
    host, x = rand(i32, "A, R16", 4)
    expected = fold(x, 1, add_sat, 0)
    assert_bits(run(reduce_time, host), expected)
    assert (expected == I32_MIN).any() and (fold(x[:, ::-1], 1, add_sat, 0) != expected).any()


def test_reduce_packet_add_f32():
    host, x = rand(f32, "A, R", 5)
    expected = fold(x, 1, add_f32, np.float32(0))  # ((0 + x0) + x1) + x2) + x3, as upstream's backend folds
    assert_bits(run(reduce_packet, host), expected)
    tree = add_f32(add_f32(x[:, 0], x[:, 1]), add_f32(x[:, 2], x[:, 3]))  # the book's op(op(a, b), op(c, d))
    assert (tree != expected).any()


def test_reduce_time_packet_max_f32():
    host, x = rand(f32, "A256, R16", 6)
    assert_bits(run(reduce_time_packet, host), fold(x, 1, np.maximum, np.float32(-np.inf)))


def test_reduce_time_packet_padding_lanes_hold_minus_infinity():
    """The packet collapses to `[1 # 4]`: lane 0 holds the maximum and lanes 1..3 Max's identity -inf, as
    the reducer leaves them. `vector_widen_pad` relays the packet into `[1 # 8]`, and a relayout writes only
    live cells (upstream's `transpose` into `Tensor::zeroed()`), so what the kernel commits there is 0."""
    host, x = rand(f32, "A256, R16", 7)
    with Context.acquire() as ctx:
        dm = host.to_hbm(ctx.pdma).to_dm(ctx.tdma, Cluster, m["A256"], m["R16"])
        reduced = _reduce_time_packet_chain(ctx, dm)
        lanes4 = reduced.stream.data.values().reshape(2, 256, 4)  # [cluster, slice = A256, lane]
        committed = reduced.vector_widen_pad(m["1 # 8"]).vector_final().commit_trim(m["1 # 8"]).commit(m["1 # 8"])
        lanes8 = committed.values().reshape(2, 256, 8)
    maxima = fold(x, 1, np.maximum, np.float32(-np.inf))
    assert_bits(lanes4[0, :, 0], maxima)
    assert_bits(lanes4[0, :, 1:], np.full((256, 3), -np.inf, dtype=np.float32))
    assert_bits(lanes8[0, :, 0], maxima)
    assert (lanes8[0, :, 1:] == 0).all()


def adversarial_q32() -> np.ndarray:
    """Live R (cells 0..12) positive; the 19 padding cells below every live value."""
    q = np.random.default_rng(8).integers(0, I32_MAX, 32, dtype=np.int32)
    q[13:] = I32_MIN + np.arange(19, dtype=np.int32)
    return q


def per_slice_minima(q: np.ndarray) -> np.ndarray:
    return np.array([fold(q[0:8], 0, np.minimum, I32_MAX), fold(q[8:13], 0, np.minimum, I32_MAX)])


def test_reduce_slice_time_packet_skips_padding():
    """Slice 0 folds R = 0..7, slice 1 the 5 live R = 8..12 (its last 3 cells are padding), slices 2 and 3
    hold no R at all. The 19 cells past R = 12 hold Q32's values 13..31, made smaller than every live value,
    so folding any of them would show."""
    q = adversarial_q32()
    with Context.acquire() as ctx:
        out = launch(reduce_slice_time_packet, ctx, HostTensor.from_numpy(q, i32, m["Q32"]).to_hbm(ctx.pdma))
        image = out.values().reshape(4, 8)  # the HBM buffer, [R13 # 32 / 8, 1 # 8]
    np.testing.assert_array_equal(image[:2, 0], per_slice_minima(q))
    assert (image[:2, 0] >= 0).all()  # no padding cell was folded in
    assert (image[2:] == 0).all() and (image[:, 1:] == 0).all()  # dead slices and lanes: not written


def test_reduce_slice_time_packet_identity_padding():
    """The book's other strategy, identity padding: folding a padding cell or not gives the same minimum."""
    q = padded_with_the_identity(np.random.default_rng(10))
    with Context.acquire() as ctx:
        out = launch(reduce_slice_time_packet, ctx, HostTensor.from_numpy(q, i32, m["Q32"]).to_hbm(ctx.pdma))
        image = out.values().reshape(4, 8)
    np.testing.assert_array_equal(image[:2, 0], per_slice_minima(q))
    np.testing.assert_array_equal(image[:2, 0], [q[0:8].min(), q[8:16].min()])  # padding folded or not


def test_reduce_slice_time_packet_on_the_simulator():
    """Padding that only some slices have (slice 1 holds R = 8..12 and three padding cells) is skipped on the
    simulator too."""
    q = adversarial_q32()
    with backend("npu") as launch_npu, Context.acquire() as ctx:
        out = launch_npu(reduce_slice_time_packet, ctx, HostTensor.from_numpy(q, i32, m["Q32"]).to_hbm(ctx.pdma))
        image = out.values().reshape(4, 8)
    np.testing.assert_array_equal(image[:2, 0], per_slice_minima(q))


def test_per_slice_input_cannot_be_dmaed_directly():
    """Why the per-slice kernel stages through Q32: a DMA from HBM `[R13 # 32]` into the book's layout is
    refused, its innermost shared run taken as 1 element (4 bytes) instead of the 8 (32 bytes) both sides lay
    out alike. Recorded so a fix shows (this test then fails and the kernel can DMA directly)."""
    with Context.acquire() as ctx:
        hbm = HbmTensor.new(i32, Chip, m["R13 # 32"])
        with pytest.raises(VerifyError) as info:
            hbm.to_dm(ctx.tdma, Cluster, PER_SLICE_SLICE, PER_SLICE_ELEMENT)
    assert info.value.rule == "dma-tail-alignment"
    assert "is 1 elements = 4 bytes" in info.value.message


def test_invalid_too_many_slots_is_refused():
    """The book's `invalid_too_many_slots`: Time `[R16, A6 % 3, B16 % 4]` → OutTime `[A6 % 3, B16 % 4]`, so the
    12 cells inside the outermost reduced axis each need their own accumulator slot; the book says it is rejected."""
    with Context.acquire() as ctx:
        dm = DmTensor.new(i32, Chip, Cluster, m["A6 / 3 # 256"], m["R16, A6 % 3, B16"])
        stream = (
            ctx.main.begin(dm.view())
            .fetch(m["R16, A6 % 3, B16 % 4"], m["B16 / 4"])
            .collect(m["R16, A6 % 3, B16 % 4"], m["B16 / 4 # 8"])
            .vector_init()
            .vector_intra_slice_tag(TagMode.Zero)
            .vector_narrow_trim(m["B16 / 4"])
        )
        with pytest.raises(VerifyError) as info:
            stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, R16, m["A6 % 3, B16 % 4"], m["B16 / 4"])
    assert info.value.rule == "vector-reduce-slots"
    assert "12 accumulator slots required" in info.value.message
