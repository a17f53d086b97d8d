"""Port of upstream `furiosa-opt-examples/src/vector_engine/reduce.rs` (the Vector Engine's reducers; axes from
`furiosa-opt-examples/src/vector_engine.rs`) and its tests, `furiosa-opt-examples/tests/vector_engine/reduce.rs`.

Twelve kernels: six intra-slice reduces of R out of Time (i32 AddSat / Max / Min, f32 Add / Max / Min), one
with R16 split over Time and Packet collapsing the packet to lane 0 (`[1 # 4]`), three inter-slice reduces of R
out of Slice (the reducer straight after `vector_init`), one inter-slice reduce followed by the intra-slice
chain (`+ 100`), and the promotion of the Time axis T into the Slice slot R leaves. Upstream tests the first
eleven; `ve_inter_slice_reduce_promote_f32` has no upstream test, so its test here is ours.

How the tests differ from upstream's:
* Inputs: `HostTensor.rand` with upstream's distributions (i32 over all codes, f32 in [0, 1)) from numpy's
  seeded generator, not Rust's `SmallRng(42)`, so the values differ.
* Oracles: upstream compares with its host `Tensor::reduce`, which folds each output from the identity in the
  wire order of the reduced axes. Here numpy folds the same way, explicitly (`fold` below): step by step,
  saturating per step for AddSat and rounding to f32 per step for Add. f32 results are compared bit for bit
  (upstream compares by value with NaN == NaN; no NaN arises here, and bits are stricter).
* Each order-sensitive test also checks that its input is order-sensitive (the folded-backwards or
  non-saturating answer differs somewhere), so a reduce in the wrong order would fail it.
* Padding identities: a reduce starts every output cell from the identity, padding included, so where the
  packet collapses to `[1 # 4]` lanes 1..3 hold it, and so do the dummy `1 # 4` Slice slots of the
  inter-slice kernels. Both are asserted on the stream right after the reduce
  (`test_split_time_packet_padding_lanes`: AddSat's 0; `test_inter_slice_max_padding_slices_hold_the_identity`:
  Max's i32::MIN). No kernel here commits a nonzero identity in a way upstream defines: `vector_widen_pad`
  relays the packet into `[1 # 8]`, and a relayout leaves padding 0 (upstream's `transpose` writes into
  `Tensor::zeroed()`), which the split kernel's committed lanes show; and upstream's `commit` is such a
  transpose too, so the DM image of the inter-slice dummy slots is 0 upstream, while our CPU backend passes
  the stream's buffer through unchanged when the layout does not change. That committed padding is left
  unasserted. (f32 Max's `-inf` is shown the same way in `test_book_vector_reduce.py`.)
"""

import numpy as np

from furiosa_opt import *

Chip, Cluster = m["1"], m["1 # 2"]
A, R, R16, T, P, W = axes(A=512, R=4, R16=16, T=4, P=8, W=64)  # upstream's vector_engine.rs values

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


# ---- intra-slice reduce: R in Time (A / 2 over the slices, A % 2 in the packet) --------------------------------


def _intra_r_in_time(ctx: Context, input, scalar, op):
    """The six `ve_intra_slice_reduce_*` kernels differ only in scalar and op: HBM `[A, R]` transposed to
    `[R, A]`, R read as Time, A % 2 as the packet (trimmed to Way4), R folded out, the packet padded back."""
    input_transposed = input.to_hbm(ctx.tdma, m["R, A"])
    input_dm = input_transposed.to_dm(ctx.tdma, Cluster, m["A / 2"], m["R, A % 2"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["R"], m["A % 2"])
        .fetch_cast(scalar)
        .collect(m["R"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_intra_slice_reduce(op, R, m["1"], m["A % 2 # 4"])
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_intra_slice_reduce_add_fxp_sat(
    ctx: Context, input: HbmTensor[i32, Chip, m["A, R"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, i32, IntraSliceReduceOpI32.AddSat)


@device(chip=1)
def ve_intra_slice_reduce_max_i32(ctx: Context, input: HbmTensor[i32, Chip, m["A, R"]]) -> HbmTensor[i32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, i32, IntraSliceReduceOpI32.Max)


@device(chip=1)
def ve_intra_slice_reduce_min_i32(ctx: Context, input: HbmTensor[i32, Chip, m["A, R"]]) -> HbmTensor[i32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, i32, IntraSliceReduceOpI32.Min)


@device(chip=1)
def ve_intra_slice_reduce_add_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A, R"]]) -> HbmTensor[f32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, f32, IntraSliceReduceOpF32.Add)


@device(chip=1)
def ve_intra_slice_reduce_max_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A, R"]]) -> HbmTensor[f32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, f32, IntraSliceReduceOpF32.Max)


@device(chip=1)
def ve_intra_slice_reduce_min_f32(ctx: Context, input: HbmTensor[f32, Chip, m["A, R"]]) -> HbmTensor[f32, Chip, m["A"]]:
    return _intra_r_in_time(ctx, input, f32, IntraSliceReduceOpF32.Min)


# ---- intra-slice reduce: R16 split across Time and Packet ------------------------------------------------------


def _split_time_packet_chain(ctx: Context, input_dm):
    """HBM → DM is the kernel's; from the DM tensor on: R16 / 8 in Time and R16 % 8 in the packet, narrowed
    to R16 / 4 in Time and R16 % 4 in the packet, both folded out, the packet collapsing to lane 0."""
    return (
        ctx.main.begin(input_dm.view())
        .fetch(m["A % 2, R16 / 8"], m["R16 % 8"])
        .fetch_cast(i32)
        .collect(m["A % 2, R16 / 8"], m["R16 % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["A % 2, R16 / 4"], m["R16 % 4"])
        .vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, R16, m["A % 2"], m["1 # 4"])
    )


@device(chip=1)
def ve_intra_slice_reduce_split_time_packet(
    ctx: Context, input: HbmTensor[i32, Chip, m["R16, A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    input_transposed = input.to_hbm(ctx.tdma, m["A, R16"])
    input_dm = input_transposed.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2, R16"])
    result = (
        _split_time_packet_chain(ctx, input_dm)
        .vector_widen_pad(m["1 # 8"])
        .vector_final()
        .commit_trim(m["1 # 8"])
        .commit(m["A % 2, 1 # 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


# ---- inter-slice reduce: R in Slice, the reducer straight after vector_init ------------------------------------


def _inter_r_in_slice(ctx: Context, input, scalar, op, then_add: int | None = None):
    """`[R, A]` with R the inner Slice axis: the reducer folds R across each group of 4 slices, whose slot
    becomes the dummy `1 # 4`. `then_add` continues with the intra-slice chain (`ve_vru_then_vau_i32`)."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 8, R"], m["A % 8"])
    stream = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 8"])
        .fetch_cast(scalar)
        .collect(m["1"], m["A % 8"])
        .vector_init()
        .vector_inter_slice_reduce(op, m["A / 8, 1 # 4"], m["1"])
    )
    if then_add is not None:
        stream = stream.vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, then_add)
    result = stream.vector_final().commit_trim(m["A % 8"]).commit(m["A % 8"])
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def ve_inter_slice_reduce_add_sat_i32(
    ctx: Context, input: HbmTensor[i32, Chip, m["R, A"]]
) -> HbmTensor[i32, Chip, m["A"]]:
    return _inter_r_in_slice(ctx, input, i32, InterSliceReduceOpI32.AddSat)


@device(chip=1)
def ve_inter_slice_reduce_max_i32(ctx: Context, input: HbmTensor[i32, Chip, m["R, A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    return _inter_r_in_slice(ctx, input, i32, InterSliceReduceOpI32.Max)


@device(chip=1)
def ve_inter_slice_reduce_add_f32(ctx: Context, input: HbmTensor[f32, Chip, m["R, A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    return _inter_r_in_slice(ctx, input, f32, InterSliceReduceOpF32.Add)


@device(chip=1)
def ve_vru_then_vau_i32(ctx: Context, input: HbmTensor[i32, Chip, m["R, A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    return _inter_r_in_slice(ctx, input, i32, InterSliceReduceOpI32.AddSat, then_add=100)


# ---- inter-slice reduce with promotion: T leaves Time for the slot R frees -------------------------------------


@device(chip=1)
def ve_inter_slice_reduce_promote_f32(
    ctx: Context, input: HbmTensor[f32, Chip, m["W, R, T, P"]]
) -> HbmTensor[f32, Chip, m["W, T, P"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["W, R"], m["T, P"])
    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["T"], m["P"])
        .fetch_cast(f32)
        .collect(m["T"], m["P"])
        .vector_init()
        .vector_inter_slice_reduce(InterSliceReduceOpF32.Add, m["W, T"], m["1"])
        .vector_final()
        .commit_trim(m["P"])
        .commit(m["P"])
    )
    return result.to_hbm(ctx.tdma, m["W, T, P"])


# ---- oracles ------------------------------------------------------------------------------------------------


def add_sat(acc, x):
    return np.clip(acc.astype(np.int64) + x, I32_MIN, I32_MAX).astype(np.int32)


def add_f32(acc, x):
    return (acc + x).astype(np.float32)  # both float32: one IEEE single rounding per step


def fold(values: np.ndarray, axis: int, step, identity) -> np.ndarray:
    """`acc = step(acc, x)` from `identity` over `axis`, in index order (the reduced axis's wire order)."""
    moved = np.moveaxis(values, axis, 0)
    acc = np.full(moved.shape[1:], identity, dtype=values.dtype)
    for x in moved:
        acc = step(acc, x)
    return acc


def run(kernel, dtype, mapping: str, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """(input as numpy, axes in `mapping` order; the kernel's output as numpy), on the CPU backend."""
    with Context.acquire() as ctx:
        host = HostTensor.rand(dtype, m[mapping], np.random.default_rng(seed))
        out = launch(kernel, ctx, host.to_hbm(ctx.pdma))
        return host.to_numpy(), out.to_host(ctx.pdma).to_numpy()


def assert_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual.view(np.uint32), expected.view(np.uint32))


# ---- intra-slice tests ----------------------------------------------------------------------------------------


def test_ve_intra_slice_reduce_add_fxp_sat():
    x, result = run(ve_intra_slice_reduce_add_fxp_sat, i32, "A, R")
    expected = fold(x, 1, add_sat, 0)  # saturating add across R
    assert_bits(result, expected)
    # the input saturates, and where it does the order of the steps matters
    assert (expected == I32_MAX).any() and (expected == I32_MIN).any()
    assert (fold(x[:, ::-1], 1, add_sat, 0) != expected).any()


def test_ve_intra_slice_reduce_max_i32():
    x, result = run(ve_intra_slice_reduce_max_i32, i32, "A, R")
    assert_bits(result, fold(x, 1, np.maximum, I32_MIN))


def test_ve_intra_slice_reduce_min_i32():
    x, result = run(ve_intra_slice_reduce_min_i32, i32, "A, R")
    assert_bits(result, fold(x, 1, np.minimum, I32_MAX))


def test_ve_intra_slice_reduce_add_f32():
    x, result = run(ve_intra_slice_reduce_add_f32, f32, "A, R")
    expected = fold(x, 1, add_f32, np.float32(0))  # sum across R, r = 0, 1, 2, 3
    assert_bits(result, expected)
    assert (fold(x[:, ::-1], 1, add_f32, np.float32(0)) != expected).any()  # the order shows


def test_ve_intra_slice_reduce_max_f32():
    x, result = run(ve_intra_slice_reduce_max_f32, f32, "A, R")
    assert_bits(result, fold(x, 1, np.maximum, np.float32(-np.inf)))


def test_ve_intra_slice_reduce_min_f32():
    x, result = run(ve_intra_slice_reduce_min_f32, f32, "A, R")
    assert_bits(result, fold(x, 1, np.minimum, np.float32(np.inf)))


def test_ve_intra_slice_reduce_split_time_packet():
    # upstream's comment says R = 4, but the kernel reduces R16 = 16: R16 / 4 in Time, R16 % 4 in the packet,
    # folded in wire order (R16 / 4 outer), which is r = 0 … 15.
    x, result = run(ve_intra_slice_reduce_split_time_packet, i32, "R16, A")
    expected = fold(x, 0, add_sat, 0)
    assert_bits(result, expected)
    assert (fold(x[::-1], 0, add_sat, 0) != expected).any()


def test_split_time_packet_padding_lanes():
    """Right after the reduce, lanes 1..3 of each `[1 # 4]` packet hold AddSat's identity 0 and lane 0 the
    sum; committed (after `vector_widen_pad`) lanes 1..7 are 0 as well, the sums in lane 0 of each flit."""
    x = HostTensor.rand(i32, m["A, R16"], np.random.default_rng(5))
    with Context.acquire() as ctx:
        dm = x.to_hbm(ctx.pdma).to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2, R16"])
        reduced = _split_time_packet_chain(ctx, dm)
        committed = (
            reduced.vector_widen_pad(m["1 # 8"]).vector_final().commit_trim(m["1 # 8"]).commit(m["A % 2, 1 # 8"])
        )
        lanes4 = reduced.stream.data.values().reshape(-1, 4)  # [cluster, slice, A % 2] × the packet
        lanes8 = committed.values().reshape(-1, 8)
    sums = fold(x.to_numpy(), 1, add_sat, 0)
    assert lanes4.shape == (2 * 256 * 2, 4) and lanes8.shape == (2 * 256 * 2, 8)
    for lanes in (lanes4, lanes8):
        np.testing.assert_array_equal(lanes[:512, 0], sums)  # cluster 0 holds A; cluster 1 is `1 # 2` padding
        assert (lanes[:512, 1:] == 0).all()


# ---- inter-slice tests ----------------------------------------------------------------------------------------


def test_ve_inter_slice_reduce_add_sat_i32():
    x, result = run(ve_inter_slice_reduce_add_sat_i32, i32, "R, A")
    expected = fold(x, 0, add_sat, 0)
    assert_bits(result, expected)
    assert (fold(x[::-1], 0, add_sat, 0) != expected).any()


def test_ve_inter_slice_reduce_max_i32():
    x, result = run(ve_inter_slice_reduce_max_i32, i32, "R, A")
    assert_bits(result, fold(x, 0, np.maximum, I32_MIN))


def test_ve_inter_slice_reduce_add_f32():
    x, result = run(ve_inter_slice_reduce_add_f32, f32, "R, A")
    expected = fold(x, 0, add_f32, np.float32(0))
    assert_bits(result, expected)
    assert (fold(x[::-1], 0, add_f32, np.float32(0)) != expected).any()


def test_ve_vru_then_vau_i32():
    x, result = run(ve_vru_then_vau_i32, i32, "R, A")
    reduced = fold(x, 0, add_sat, 0)  # saturating add across R, then + 100 wrapping (AddFxp)
    expected = ((reduced.astype(np.int64) + 100 + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert_bits(result, expected)
    assert (reduced > I32_MAX - 100).any()  # a saturated sum wraps past i32::MAX


def test_ve_inter_slice_reduce_promote_f32():
    """Ours (upstream has no test for this kernel): out[w, t, p] = Σ_r in[w, r, t, p], r in order."""
    x, result = run(ve_inter_slice_reduce_promote_f32, f32, "W, R, T, P")
    assert result.shape == (W.size, T.size, P.size)
    expected = fold(x, 1, add_f32, np.float32(0))
    assert_bits(result, expected)
    assert (fold(x[:, ::-1], 1, add_f32, np.float32(0)) != expected).any()


def test_inter_slice_max_padding_slices_hold_the_identity():
    """The reducer leaves its result in slot 0 of each group of 4 slices (`A / 8, 1 # 4`); the three dummy
    slots hold the identity of Max, i32::MIN (upstream's `reduce` starts every output cell, padding included,
    from the identity)."""
    x = HostTensor.rand(i32, m["R, A"], np.random.default_rng(9))
    with Context.acquire() as ctx:
        dm = x.to_hbm(ctx.pdma).to_dm(ctx.tdma, Cluster, m["A / 8, R"], m["A % 8"])
        reduced = (
            ctx.main.begin(dm.view())
            .fetch(m["1"], m["A % 8"])
            .fetch_cast(i32)
            .collect(m["1"], m["A % 8"])
            .vector_init()
            .vector_inter_slice_reduce(InterSliceReduceOpI32.Max, m["A / 8, 1 # 4"], m["1"])
        )
        cells = reduced.stream.data.values().reshape(2, 64, 4, 8)  # [cluster, A / 8, the 1 # 4 slot, A % 8]
    np.testing.assert_array_equal(cells[0, :, 0, :].reshape(-1), fold(x.to_numpy(), 0, np.maximum, I32_MIN))
    assert (cells[0, :, 1:, :] == I32_MIN).all()
