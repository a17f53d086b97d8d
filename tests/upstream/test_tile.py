"""Port of upstream `furiosa-opt-examples/src/tile.rs` and `tests/tile_tests.rs`: HBM and DM views cut
with `tile` and moved with `to_hbm_view` / `to_dm_view` / `commit_view`, in unrolled Python loops where
upstream has Rust `for` loops.

Every kernel of `tile.rs` is here with upstream's shapes, mappings and dtypes. Differences from upstream:

* Upstream's `tile_packed_inner_digit_to_dm` lives in its own Rust module (`dm_inner_digit`) that redeclares
  `L` with another size; a kernel's `m["..."]` names resolve in this module's globals, so its axes carry a
  `P` prefix here (`PH = 3840`, `PL = 15360`; upstream `H`, `L`), and its `Cluster` is `PCluster`.
* Upstream's tests check only `tile_simple` and `tile_window_commit`; here every kernel that returns a tensor
  is checked against a numpy oracle derived from what it means. `tile_with_larger_than_one_2` and
  `tile_packed_inner_digit_to_dm` return nothing: their DM tiles are dropped at the end of the kernel and no
  value of theirs reaches the host, so the tests assert only that they run, return `None` and leave their
  HBM input unchanged.
* Upstream's `test_tile_view_in_nested_loop` only lowers the kernel because upstream's host backend refuses
  that two-level HBM tile; ours runs it, so its values are checked like the others'.
* Every test runs on the CPU backend and, from the compiled EDF, on the simulator (`tests/backends.py`),
  with the same inputs; all kernels only move data, so each result must equal its oracle bit for bit.
* Upstream draws inputs from `SmallRng::seed_from_u64(42)`; ours come from numpy's `default_rng`.
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.dtypes import DType

A, B, D, L = axes(A=512, B=32, D=64, L=768)
One = axes(One=1)

Chip = m["1"]
Cluster = m["1"]
Slice = m["1 # 256"]


@device(chip=1)
def tile_simple(ctx: Context, input: HbmTensorView[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["B, A"]]:
    """`[A, B]` → `[B, A]`, one `B` column per HBM → HBM move."""
    output = HbmTensor.new(i8, m["1"], m["B, A"])
    for b in range(B.size):  # upstream loops over a literal 32 (a TODO to use `<m![B]>::SIZE`)
        input_slice = input.tile(b, m["B"], 1, m["A, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["B"], 1, m["1 #{!} 32, A"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


@device(chip=1)
def tile_computed_offset(ctx: Context, input_hbm: HbmTensor[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["A, B"]]:
    """A DM copy of the input is returned; 8-wide `B` windows at offsets computed in the loop go to `scratch`."""
    groups, group, window = 2, 16, 8
    input = input_hbm.to_dm(ctx.tdma, m["A / 256"], m["A % 256"], m["B"])
    output = DmTensor.new(i8, m["1"], m["A / 256"], m["A % 256"], m["B"])

    input.view().to_dm_view(ctx.tdma, output.view_mut())

    scratch = DmTensor.new(i8, m["1"], m["A / 256"], m["A % 256"], m["B"])
    for g in range(groups):
        for j in range(group // window):
            b = g * group + j * window
            input_col = input.view().tile(b, m["B"], 8, m["B = 8 # 32"])
            scratch_col = scratch.view_mut().tile(b, m["B"], 8, m["B = 8 #{!} 32"])
            input_col.to_dm_view(ctx.tdma, scratch_col)

    return output.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1, pe=4)
def tile_window_commit(ctx: Context, input: HbmTensor[f32, Chip, m["D"]]) -> HbmTensor[f32, Chip, m["D"]]:
    """Commits `input[0..32]` into `result[32..64]` through a write tile whose other cells are down padding."""
    tensor = input.to_dm(ctx.tdma, Cluster, Slice, m["D"])
    tile_one = tensor.view().tile(0, m["D"], 32, m["D = 32 # 64"])

    result = DmTensor.new(f32, Chip, Cluster, Slice, m["D"])

    (
        ctx.main.begin(tile_one)
        .fetch(m["1"], m["D = 32"])
        .fetch_cast(f32)
        .collect(m["D = 32 / 8"], m["D = 32 % 8"])
        .commit_trim(m["D = 32 % 8"])
        .commit_view(result.view_mut().tile(32, m["D"], 32, m["D = 32 #{!} 64"]))
    )

    return result.to_hbm(ctx.tdma, m["D"])


@device(chip=1)
def tile_view_in_loop(ctx: Context, input: HbmTensor[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["B, A"]]:
    """`tile_simple` with the view taken inside the loop from a tensor parameter."""
    output = HbmTensor.new(i8, m["1"], m["B, A"])
    for b in range(32):
        input_slice = input.view().tile(b, m["B"], 1, m["A, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["B"], 1, m["1 #{!} 32, A"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


@device(chip=1)
def tile_view_in_nested_loop(ctx: Context, input: HbmTensor[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["A, B"]]:
    """Identity copy: the inner loop tiles a view cut by the outer loop's index (16-wide `B` groups)."""
    output = HbmTensor.new(i8, m["1"], m["A, B"])
    for g in range(2):
        in_group = input.view().tile(g, m["B / 16"], 1, m["A, 1 # 2, B % 16"])
        for h in range(16):
            in_col = in_group.tile(h, m["B % 16"], 1, m["A, 1 # 32"])
            out_col = (
                output.view_mut()
                .tile(g, m["B / 16"], 1, m["A, 1 #{!} 2, B % 16"])
                .tile(h, m["B % 16"], 1, m["A, 1 #{!} 32"])
            )
            in_col.to_hbm_view(ctx.tdma, out_col)
    return output


@device(chip=1)
def tile_chunked_output(ctx: Context, input: HbmTensor[i8, m["1"], m["B, D"]]) -> HbmTensor[i8, m["1"], m["B, D"]]:
    """Identity copy, one 16-wide `D` chunk per iteration into a write tile of the returned tensor."""
    output = HbmTensor.new(i8, m["1"], m["B, D"])
    for i in range(4):
        input_slice = input.view().tile(i, m["D / 16"], 1, m["B, 1 # 4, D % 16"])
        output_slice = output.view_mut().tile(i, m["D / 16"], 1, m["B, 1 #{!} 4, D % 16"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


@device(chip=1)
def tile_unit_axis(ctx: Context, input: HbmTensor[i8, m["1"], m["One, B, D"]]) -> HbmTensor[i8, m["1"], m["One, B, D"]]:
    """Identity copy through a tile of the size-1 axis `One`."""
    output = HbmTensor.new(i8, m["1"], m["One, B, D"])
    input_slice = input.view().tile(0, m["One"], 1, m["1, B, D"])
    output_slice = output.view_mut().tile(0, m["One"], 1, m["1, B, D"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


@device(chip=1)
def tile_with_larger_than_one_1(
    ctx: Context, up_weight: HbmTensor[bf16, Chip, m["L, A"]]
) -> HbmTensor[bf16, Chip, m["L, A"]]:
    """Three 256-row windows at raw `L` offsets 0, 1, 2 (they overlap: upstream's PROG-539 reproducer)."""
    output = HbmTensor.new(bf16, Chip, m["L, A"])

    input_slice = up_weight.view().tile(0, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(2, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    input_slice = up_weight.view().tile(1, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(1, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    input_slice = up_weight.view().tile(2, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(0, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    return output


@device(chip=1)
def tile_with_larger_than_one_2(ctx: Context, up_weight: HbmTensor[bf16, Chip, m["L, A"]]) -> None:
    """Only cuts a view (`L / 256` positions 1 and 2): nothing moves and nothing is returned."""
    up_weight = up_weight.view().tile(1, m["L / 256"], 2, m["L / 256 = 2 # 3, L % 256, A"])


@device(chip=1)
def tile_size_gt1_chunk_swap(ctx: Context, input: HbmTensor[bf16, Chip, m["L, A"]]) -> HbmTensor[bf16, Chip, m["L, A"]]:
    """Swaps `L` rows [0, 256) and [256, 512); [512, 768) is copied unchanged. Starts are raw `L` offsets."""
    output = HbmTensor.new(bf16, Chip, m["L, A"])

    input_slice = input.view().tile(0, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(256, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    input_slice = input.view().tile(256, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(0, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    input_slice = input.view().tile(512, m["L"], 256, m["L = 256 # 768, A"])
    output_slice = output.view_mut().tile(512, m["L"], 256, m["L = 256 #{!} 768, A"])
    input_slice.to_hbm_view(ctx.tdma, output_slice)

    return output


@device(chip=1)
def tile_inner_digit(ctx: Context, input: HbmTensor[bf16, Chip, m["L"]]) -> HbmTensor[bf16, Chip, m["L"]]:
    """Cells 0 and 1 of each 96-cell run of `L` (the inner digit `L % 96`) go to cells 4 and 5 of that run."""
    output = HbmTensor.new(bf16, Chip, m["L"])
    input_window = input.view().tile(0, m["L % 96"], 2, m["L / 96, L % 96 = 2 # 96"])
    output_window = output.view_mut().tile(4, m["L % 96"], 2, m["L / 96, L % 96 = 2 #{!} 96"])
    input_window.to_hbm_view(ctx.tdma, output_window)
    return output


@device(chip=1)
def tile_inner_digit_single(ctx: Context, input: HbmTensor[bf16, Chip, m["L"]]) -> HbmTensor[bf16, Chip, m["L"]]:
    """Cell 3 of each 96-cell run of `L` goes to cell 7 of that run (a 1-wide tile of the inner digit)."""
    output = HbmTensor.new(bf16, Chip, m["L"])
    input_cell = input.view().tile(3, m["L % 96"], 1, m["L / 96, L % 96 = 1 # 96"])
    output_cell = output.view_mut().tile(7, m["L % 96"], 1, m["L / 96, L % 96 = 1 #{!} 96"])
    input_cell.to_hbm_view(ctx.tdma, output_cell)
    return output


# upstream module `dm_inner_digit`: `H = 3840, L = 15360`, `Cluster = m![1 # 2]`
PH, PL = axes(PH=3840, PL=15360)
PCluster = m["1 # 2"]
DownRows = m["PH / 120, 1 # 8"]


@device(chip=1)
def tile_packed_inner_digit_to_dm(ctx: Context, down_weight_packed: HbmTensor[f4e2m1, Chip, m["PH, PL"]]) -> None:
    """Sixty two-cell windows of the inner digit `PH % 120` of a 4-bit weight, each moved to DM (and dropped).

    Upstream rebinds `down_weight_packed` to the DM tile inside the loop (Rust shadowing); a Python rebinding
    would replace the parameter for the next iteration, so the tile has its own name."""
    for k in range(60):
        down_weight_tile = (
            down_weight_packed.view()
            .tile(2 * k, m["PH % 120"], 2, m["PH / 120, PH % 120 = 2 # 120, PL"])
            .to_dm(ctx.tdma, PCluster, DownRows, m["PH % 120 = 2, PL"])
        )


# ---- running a kernel on either backend -------------------------------------------------------------------

BACKENDS = ("cpu", "npu")


def run(where: str, kernel, *inputs: tuple[np.ndarray, DType, str], view: bool = False):
    """Launch `kernel` on backend `where` with each `(array, dtype, mapping)` uploaded to HBM (passed as a
    read view if `view`); the result as numpy (None if the kernel returns nothing) and the inputs read back
    after the launch."""
    with backend(where) as launch_, Context.acquire() as ctx:
        hbms = [HostTensor.from_numpy(x, dtype, m[mapping]).to_hbm(ctx.pdma) for x, dtype, mapping in inputs]
        out = launch_(kernel, ctx, *[h.view() if view else h for h in hbms])
        got = None if out is None else out.to_host(ctx.pdma).to_numpy()
        return got, [h.to_host(ctx.pdma).to_numpy() for h in hbms]


def bits(x: np.ndarray) -> np.ndarray:
    """The raw encodings of a bf16 array (compared instead of values: -0.0 and NaNs must survive a move)."""
    return x.view(np.uint16)


def rand_i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, shape, dtype=np.int8)


def rand_bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Every bf16 encoding but the NaNs, so a value that moved to the wrong cell cannot go unnoticed."""
    codes = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    codes[(codes & 0x7F80) == 0x7F80] &= 0xFF00  # NaN and ±inf codes become finite ones
    return codes.view(ml_dtypes.bfloat16)


# ---- tests --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_simple_host(where):
    x = rand_i8(np.random.default_rng(42), A.size, B.size)
    got, _ = run(where, tile_simple, (x, i8, "A, B"), view=True)
    # upstream: `input.into_inner().transpose::<m![B, A]>(false)` equals the output
    assert got.shape == (B.size, A.size)
    np.testing.assert_array_equal(got, x.T, "transposing must not change the mathematical meaning of the tensor")


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_computed_offset(where):
    x = rand_i8(np.random.default_rng(1), A.size, B.size)
    got, _ = run(where, tile_computed_offset, (x, i8, "A, B"))
    # The returned tensor is the whole-tensor DM copy; the 8-wide windows land in `scratch`, which is dropped.
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_window_commit_host(where):
    x = np.arange(D.size, dtype=np.float32)
    got, _ = run(where, tile_window_commit, (x, f32, "D"))
    assert got.dtype == np.float32
    for i in range(32):
        # out-of-tile cells (down padding of the commit view) stay at the zero-filled DmTensor.new
        assert got[i] == 0.0 and not np.signbit(got[i]), f"result[{i}] (out-of-tile) must stay unwritten"
        assert got[32 + i] == float(i), f"result[{32 + i}] should equal input[{i}]"


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_view_in_loop(where):
    x = rand_i8(np.random.default_rng(2), A.size, B.size)
    got, _ = run(where, tile_view_in_loop, (x, i8, "A, B"))
    np.testing.assert_array_equal(got, x.T)


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_view_in_nested_loop(where):
    x = rand_i8(np.random.default_rng(3), A.size, B.size)
    got, _ = run(where, tile_view_in_nested_loop, (x, i8, "A, B"))
    np.testing.assert_array_equal(got, x)  # 2 groups × 16 columns: every column copied once, in place


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_chunked_output(where):
    x = rand_i8(np.random.default_rng(4), B.size, D.size)
    got, _ = run(where, tile_chunked_output, (x, i8, "B, D"))
    np.testing.assert_array_equal(got, x)  # 4 chunks of 16 `D` positions each


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_unit_axis(where):
    x = rand_i8(np.random.default_rng(5), B.size, D.size)  # a size-1 axis has no dimension in numpy arrays
    got, _ = run(where, tile_unit_axis, (x, i8, "One, B, D"))
    assert got.shape == (B.size, D.size)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_with_larger_than_one_1(where):
    x = rand_bf16(np.random.default_rng(6), L.size, A.size)
    got, _ = run(where, tile_with_larger_than_one_1, (x, bf16, "L, A"))
    # A window of 256 `L` rows starts at the raw row offset given (0, 1, 2), not at a chunk index: the three
    # copies overlap and run in program order, and rows 258.. are never written (upstream's PROG-539 note).
    expected = np.zeros_like(x)
    expected[2:258] = x[0:256]
    expected[1:257] = x[1:257]
    expected[0:256] = x[2:258]
    np.testing.assert_array_equal(bits(got), bits(expected))
    assert bits(got[256]).tolist() == bits(x[256]).tolist() and bits(got[257]).tolist() == bits(x[255]).tolist()
    assert not bits(got[258:]).any()


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_with_larger_than_one_2(where):
    # The kernel only takes a view (`L / 256` positions 1 and 2) and moves nothing: no value is observable.
    x = rand_bf16(np.random.default_rng(7), L.size, A.size)
    got, (after,) = run(where, tile_with_larger_than_one_2, (x, bf16, "L, A"))
    assert got is None
    np.testing.assert_array_equal(bits(after), bits(x))


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_size_gt1_chunk_swap(where):
    x = rand_bf16(np.random.default_rng(8), L.size, A.size)
    got, _ = run(where, tile_size_gt1_chunk_swap, (x, bf16, "L, A"))
    expected = np.concatenate([x[256:512], x[0:256], x[512:768]])
    np.testing.assert_array_equal(bits(got), bits(expected))


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_inner_digit(where):
    x = rand_bf16(np.random.default_rng(9), L.size)
    got, _ = run(where, tile_inner_digit, (x, bf16, "L"))
    # cells 0, 1 of each 96-cell run of `L` go to cells 4, 5 of the same run; the rest stay zero
    expected = np.zeros((L.size // 96, 96), ml_dtypes.bfloat16)
    expected[:, 4:6] = x.reshape(-1, 96)[:, 0:2]
    np.testing.assert_array_equal(bits(got), bits(expected.ravel()))


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_inner_digit_single(where):
    x = rand_bf16(np.random.default_rng(10), L.size)
    got, _ = run(where, tile_inner_digit_single, (x, bf16, "L"))
    # cell 3 of each 96-cell run goes to cell 7 of the same run; the rest stay zero
    expected = np.zeros((L.size // 96, 96), ml_dtypes.bfloat16)
    expected[:, 7] = x.reshape(-1, 96)[:, 3]
    np.testing.assert_array_equal(bits(got), bits(expected.ravel()))


@pytest.mark.parametrize("where", BACKENDS)
def test_tile_packed_inner_digit_to_dm(where):
    # Sixty two-cell windows of `PH % 120` are each moved to DM and dropped: no value is observable.
    codes = np.random.default_rng(11).integers(0, 16, (PH.size, PL.size), dtype=np.uint8)
    x = f4e2m1.from_bits(codes)
    got, (after,) = run(where, tile_packed_inner_digit_to_dm, (x, f4e2m1, "PH, PL"))
    assert got is None
    np.testing.assert_array_equal(f4e2m1.to_bits(after), codes)
