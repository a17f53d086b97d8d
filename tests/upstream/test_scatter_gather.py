"""Port of upstream `furiosa-opt-examples/src/scatter_gather.rs` (all eight kernels, upstream's shapes,
mappings and dtypes) and its answer test `tests/scatter_gather_tests.rs`.

Differences from upstream:

* Rust infers the gathered tensor's `Cluster, Slice, Element` and every `to_dm` / `to_hbm` target from the
  declared result types; here they are passed explicitly. `dma_scatter::<m![K], _, _>(index, output)` is
  `dma_scatter(index, output, m["K"])`. Rust's `for c in 0..<m![Indices / 32]>::SIZE` is a Python loop
  (unrolled when traced), and `ROW_BYTES` is a module constant.
* Upstream answers only `scatter_minimal` (`test_scatter_minimal`, ported as is); the gathers are lowering
  probes there ("only distinctness matters"). Here every kernel is checked against a numpy oracle
  (`table[rows]`, `cache[rows] = data` one key at a time) on the CPU backend and on the simulator, bit for
  bit, with random bf16 codes (no NaN) so a row moved to the wrong place cannot pass.
* Added: a scatter into a filled cache leaves the rows no key names alone; a scatter whose index names one
  row several times keeps the later key's row; a negative index and one past the table fault on both
  backends, naming the kernel and the line of the gather or scatter.
"""

import inspect

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.sim import SimulatorError

# scatter keys K into a C-row cache (612: not a power of two, larger than K); gathers of G = 2 · 256 and
# U = 3 · 256 rows of a [K, D] table; CL: the two clusters of a placed (not broadcast) index
K, D, C, G, U, CL = axes(K=512, D=128, C=612, G=512, U=768, CL=2)
# a [Rows, Width] bf16 table (16-byte rows) read through an index of 16 · 128 = 2048 raw rows (8 KiB of i32)
Rows, IdxRows, Indices, Width = axes(Rows=12, IdxRows=16, Indices=128, Width=8)
# a paged pool [NBlocks, KvHeads, PBlock, HeadDim] whose NBlocks rows a block table selects
NBlocks, PBlock, KvHeads, HeadDim = axes(NBlocks=16, PBlock=16, KvHeads=8, HeadDim=128)

Chip = m["1"]
Cluster = m["1 # 2"]


@device(chip=1)
def scatter_minimal(
    ctx: Context,
    data: HbmTensor[bf16, Chip, m["K, D"]],
    index: HbmTensor[i32, Chip, m["K"]],
    output: HbmTensor[bf16, Chip, m["C, D"]],
) -> None:
    data_dm = data.to_dm(ctx.tdma, Cluster, m["K / 2"], m["K % 2, D"])
    data_dm.dma_scatter(index, output, m["K"])


@device(chip=1)
def gather_minimal(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["G"]]
) -> HbmTensor[bf16, Chip, m["G, D"]]:
    values_dm = table.dma_gather_scaled(index, Cluster, m["G / 2"], m["G % 2, D"])
    return values_dm.to_hbm(ctx.tdma, m["G, D"])


@device(chip=1)
def gather_unaligned(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["U"]]
) -> HbmTensor[bf16, Chip, m["U, D"]]:
    values_dm = table.dma_gather_scaled(index, Cluster, m["U / 3"], m["U % 3, D"])
    return values_dm.to_hbm(ctx.tdma, m["U, D"])


@device(chip=1)
def gather_paged_kv(
    ctx: Context,
    pool: HbmTensor[bf16, Chip, m["NBlocks, KvHeads, PBlock, HeadDim"]],
    block_table: HbmTensor[i32, Chip, m["NBlocks"]],
) -> HbmTensor[bf16, Chip, m["NBlocks, KvHeads, PBlock, HeadDim"]]:
    gathered = pool.dma_gather_scaled(block_table, Cluster, m["NBlocks, PBlock"], m["KvHeads, HeadDim"])
    return gathered.to_hbm(ctx.tdma, m["NBlocks, KvHeads, PBlock, HeadDim"])


@device(chip=1)
def gather_aligned_unscaled(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["G"]]
) -> HbmTensor[bf16, Chip, m["G, D"]]:
    index_dm = index.to_dm(ctx.tdma, Cluster, m["G / 2"], m["G % 2"])
    values_dm = table.dma_gather_unscaled(index_dm, Cluster, m["G / 2"], m["G % 2, D"])
    return values_dm.to_hbm(ctx.tdma, m["G, D"])


ROW_BYTES = Width.size * 2  # one bf16 table row of `gather_scaled_from_raw_index`, in bytes


@device(chip=1)
def gather_scaled_from_raw_index(
    ctx: Context, table: HbmTensor[bf16, Chip, m["Rows, Width"]], index: HbmTensor[i32, Chip, m["IdxRows, Indices"]]
) -> HbmTensor[bf16, Chip, m["IdxRows, Indices, Width"]]:
    slice_, packet = m["IdxRows, Indices / 8"], m["Indices % 8"]
    raw = index.to_dm(ctx.tdma, Cluster, slice_, packet)
    scaled = (
        ctx.main.begin(raw.view())
        .fetch(m["1"], packet)
        .fetch_cast(i32)
        .collect(m["1"], m["Indices % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.MulInt, ROW_BYTES)
        .vector_final()
        .commit_trim(packet)
        .commit(packet)
    )
    offsets = scaled.to_hbm(ctx.tdma, m["IdxRows, Indices"])
    values = table.dma_gather_scaled(offsets, Cluster, slice_, m["Indices % 8, Width"])
    return values.to_hbm(ctx.tdma, m["IdxRows, Indices, Width"])


@device(chip=1)
def gather_unscaled_split_index(
    ctx: Context, table: HbmTensor[bf16, Chip, m["Rows, Width"]], index: HbmTensor[i32, Chip, m["IdxRows, Indices"]]
) -> HbmTensor[bf16, Chip, m["IdxRows, Indices, Width"]]:
    slice_, packet = m["IdxRows, Indices % 32 / 2"], m["Indices % 2"]
    out = HbmTensor.new(bf16, Chip, m["IdxRows, Indices, Width"])
    for c in range(Indices.size // 32):
        chunk = (
            index.view()
            .tile(c, m["Indices / 32"], 1, m["IdxRows, 1 # 4, Indices % 32"])
            .to_dm(ctx.tdma, Cluster, slice_, packet)
        )
        values = table.dma_gather_unscaled(chunk, Cluster, slice_, m["Indices % 2, Width"])
        values.view().to_hbm_view(
            ctx.tdma, out.view_mut().tile(c, m["Indices / 32"], 1, m["IdxRows, 1 #{!} 4, Indices % 32, Width"])
        )
    return out


@device(chip=1)
def gather_placed_unscaled(
    ctx: Context, table: HbmTensor[bf16, Chip, m["K, D"]], index: HbmTensor[i32, Chip, m["CL, G"]]
) -> HbmTensor[bf16, Chip, m["CL, G, D"]]:
    index_dm = index.to_dm(ctx.tdma, m["CL"], m["G / 2"], m["G % 2"])
    values_dm = table.dma_gather_unscaled(index_dm, m["CL"], m["G / 2"], m["G % 2, D"])
    return values_dm.to_hbm(ctx.tdma, m["CL, G, D"])


# ---- inputs and oracles -------------------------------------------------------------------------------------

BACKENDS = ["cpu", "npu"]
TABLE_ROW = D.size * 2  # bytes of one bf16 `[K, D]` row: a scaled index's unit for `K` and `C` rows
POOL = (NBlocks.size, KvHeads.size, PBlock.size, HeadDim.size)
POOL_ROW = KvHeads.size * PBlock.size * HeadDim.size * 2  # bytes of one `NBlocks` row of the paged pool


def bits(x: np.ndarray) -> np.ndarray:
    """The raw codes of a bf16 array: compared instead of values, so -0.0 and 0.0 differ."""
    return np.asarray(x).view(np.uint16)


def rand_bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random bf16 codes with the NaN/inf exponent cleared, so each row is almost surely distinct."""
    codes = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    codes[(codes & 0x7F80) == 0x7F80] &= 0xFF00
    return codes.view(ml_dtypes.bfloat16)


def hbm(ctx: Context, values: np.ndarray, dtype, mapping: str) -> HbmTensor:
    return HostTensor.from_numpy(values, dtype, m[mapping]).to_hbm(ctx.pdma)


def scattered(cache: np.ndarray, rows: np.ndarray, data: np.ndarray) -> np.ndarray:
    """`cache[rows[k]] = data[k]` for k in key order: where two keys name a row, the later one stays."""
    out = cache.copy()
    for k, r in enumerate(rows.tolist()):
        out[r] = data[k]
    return out


def run_scatter(on: str, data: np.ndarray, offsets: np.ndarray, cache: np.ndarray) -> np.ndarray:
    with backend(on) as launch_, Context.acquire() as ctx:
        output = hbm(ctx, cache, bf16, "C, D")
        assert launch_(scatter_minimal, ctx, hbm(ctx, data, bf16, "K, D"), hbm(ctx, offsets, i32, "K"), output) is None
        return output.to_host(ctx.pdma).to_numpy()


def run_gather(on: str, kernel, table: tuple, index: tuple) -> np.ndarray:
    """`kernel(table, index)` on backend `on`; `table` and `index` are (values, dtype, mapping)."""
    with backend(on) as launch_, Context.acquire() as ctx:
        return launch_(kernel, ctx, hbm(ctx, *table), hbm(ctx, *index)).to_host(ctx.pdma).to_numpy()


def differential_inputs(kernel, ctx: Context, rng: np.random.Generator):
    """For tests/test_differential.py: indices inside their tables (random ones would fault), with repeats."""
    kd = hbm(ctx, rand_bf16(rng, K.size, D.size), bf16, "K, D")
    small = hbm(ctx, rand_bf16(rng, Rows.size, Width.size), bf16, "Rows, Width")
    raw = hbm(ctx, rng.integers(0, Rows.size, (IdxRows.size, Indices.size), dtype=np.int32), i32, "IdxRows, Indices")
    inputs = {
        scatter_minimal: lambda: (
            kd,
            hbm(ctx, rng.integers(0, C.size, K.size, dtype=np.int32) * TABLE_ROW, i32, "K"),
            hbm(ctx, rand_bf16(rng, C.size, D.size), bf16, "C, D"),
        ),
        gather_minimal: lambda: (kd, hbm(ctx, rng.integers(0, K.size, G.size, dtype=np.int32) * TABLE_ROW, i32, "G")),
        gather_unaligned: lambda: (
            kd,
            hbm(ctx, rng.integers(0, K.size, U.size, dtype=np.int32) * TABLE_ROW, i32, "U"),
        ),
        gather_paged_kv: lambda: (
            hbm(ctx, rand_bf16(rng, *POOL), bf16, "NBlocks, KvHeads, PBlock, HeadDim"),
            hbm(ctx, rng.integers(0, NBlocks.size, NBlocks.size, dtype=np.int32) * POOL_ROW, i32, "NBlocks"),
        ),
        gather_aligned_unscaled: lambda: (kd, hbm(ctx, rng.integers(0, K.size, G.size, dtype=np.int32), i32, "G")),
        gather_scaled_from_raw_index: lambda: (small, raw),
        gather_unscaled_split_index: lambda: (small, raw),
        gather_placed_unscaled: lambda: (
            kd,
            hbm(ctx, rng.integers(0, K.size, (CL.size, G.size), dtype=np.int32), i32, "CL, G"),
        ),
    }
    return inputs[kernel]() if kernel in inputs else None


# ---- upstream's answer test ---------------------------------------------------------------------------------


@pytest.mark.parametrize("on", BACKENDS)
def test_scatter_minimal(on):
    """Upstream's test: data 1..K·D (as bf16), key k to row k (byte offset k · 256), a zero cache; rows 0..K
    hold the data and the `C - K` rows past them stay zero."""
    n = K.size * D.size
    data = np.arange(1, n + 1, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(K.size, D.size)
    offsets = np.arange(K.size, dtype=np.int32) * TABLE_ROW
    got = run_scatter(on, data, offsets, np.zeros((C.size, D.size), dtype=ml_dtypes.bfloat16))
    expected = np.where(
        np.arange(C.size * D.size) < n, np.arange(1, C.size * D.size + 1, dtype=np.float32), 0.0
    ).astype(ml_dtypes.bfloat16)
    assert got.shape == (C.size, D.size) and got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(bits(got).reshape(-1), bits(expected))


# ---- scatter: placement, untouched rows, duplicates ---------------------------------------------------------


@pytest.mark.parametrize("on", BACKENDS)
def test_scatter_to_permuted_rows_keeps_the_other_rows(on):
    rng = np.random.default_rng(10)
    data, cache = rand_bf16(rng, K.size, D.size), rand_bf16(rng, C.size, D.size)
    rows = rng.permutation(C.size)[: K.size].astype(np.int32)  # distinct rows, 100 of the 612 untouched
    got = run_scatter(on, data, rows * TABLE_ROW, cache)
    expected = scattered(cache, rows, data)
    np.testing.assert_array_equal(bits(got), bits(expected))
    untouched = np.setdiff1d(np.arange(C.size), rows)
    assert len(untouched) == C.size - K.size
    np.testing.assert_array_equal(bits(got[untouched]), bits(cache[untouched]))
    np.testing.assert_array_equal(bits(got[rows]), bits(data))


@pytest.mark.parametrize("on", BACKENDS)
def test_scatter_with_duplicate_rows_keeps_the_later_key(on):
    rng = np.random.default_rng(11)
    data, cache = rand_bf16(rng, K.size, D.size), rand_bf16(rng, C.size, D.size)
    rows = rng.integers(0, 40, K.size).astype(np.int32)  # 512 keys into 40 rows: every row named ~13 times
    rows[-1] = rows[0]  # the first and the last key collide: the last key's row must stay
    got = run_scatter(on, data, rows * TABLE_ROW, cache)
    expected = scattered(cache, rows, data)
    np.testing.assert_array_equal(bits(got), bits(expected))
    np.testing.assert_array_equal(bits(got[rows[0]]), bits(data[-1]))
    first_wins = cache.copy()
    for k in reversed(range(K.size)):
        first_wins[rows[k]] = data[k]
    assert not np.array_equal(bits(first_wins), bits(expected))  # the oracle tells the two orders apart
    np.testing.assert_array_equal(bits(got[40:]), bits(cache[40:]))


# ---- gathers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_minimal(on):
    rng = np.random.default_rng(20)
    table = rand_bf16(rng, K.size, D.size)
    rows = rng.integers(0, K.size, G.size).astype(np.int32)  # repeats and rows never read
    got = run_gather(on, gather_minimal, (table, bf16, "K, D"), (rows * TABLE_ROW, i32, "G"))
    assert got.shape == (G.size, D.size)
    np.testing.assert_array_equal(bits(got), bits(table[rows]))


@pytest.mark.parametrize("on", BACKENDS)
def test_scatter_minimal_inverts_gather_minimal(on):
    """Upstream's doc calls the gather the scatter's inverse: gather the K table rows in a permuted order
    (G = K), scatter the result through the same offsets into a zero cache; rows 0..K are the table again."""
    rng = np.random.default_rng(21)
    table = rand_bf16(rng, K.size, D.size)
    offsets = rng.permutation(K.size).astype(np.int32) * TABLE_ROW
    gathered = run_gather(on, gather_minimal, (table, bf16, "K, D"), (offsets, i32, "G"))  # host round trip: G → K
    got = run_scatter(on, gathered, offsets, np.zeros((C.size, D.size), dtype=ml_dtypes.bfloat16))
    np.testing.assert_array_equal(bits(got[: K.size]), bits(table))
    assert not bits(got[K.size :]).any()


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_unaligned(on):
    rng = np.random.default_rng(22)
    table = rand_bf16(rng, K.size, D.size)
    rows = rng.integers(0, K.size, U.size).astype(np.int32)  # U = 768 > K: the gather wraps the table
    got = run_gather(on, gather_unaligned, (table, bf16, "K, D"), (rows * TABLE_ROW, i32, "U"))
    assert got.shape == (U.size, D.size)
    np.testing.assert_array_equal(bits(got), bits(table[rows]))


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_paged_kv(on):
    """Output block n is pool block `block_table[n]`, all of its `[KvHeads, PBlock, HeadDim]`."""
    rng = np.random.default_rng(23)
    pool = rand_bf16(rng, *POOL)
    blocks = rng.permutation(NBlocks.size).astype(np.int32)
    blocks[3] = blocks[9]  # one block read twice, one never
    got = run_gather(
        on, gather_paged_kv, (pool, bf16, "NBlocks, KvHeads, PBlock, HeadDim"), (blocks * POOL_ROW, i32, "NBlocks")
    )
    assert got.shape == POOL
    np.testing.assert_array_equal(bits(got), bits(pool[blocks]))


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_aligned_unscaled(on):
    rng = np.random.default_rng(24)
    table = rand_bf16(rng, K.size, D.size)
    rows = rng.integers(0, K.size, G.size).astype(np.int32)  # row numbers, not byte offsets
    got = run_gather(on, gather_aligned_unscaled, (table, bf16, "K, D"), (rows, i32, "G"))
    np.testing.assert_array_equal(bits(got), bits(table[rows]))


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_scaled_from_raw_index(on):
    """Raw rows, scaled on the vector engine by the 16-byte row (not the 8-element width)."""
    rng = np.random.default_rng(25)
    table = rand_bf16(rng, Rows.size, Width.size)
    rows = rng.integers(0, Rows.size, (IdxRows.size, Indices.size)).astype(np.int32)
    got = run_gather(on, gather_scaled_from_raw_index, (table, bf16, "Rows, Width"), (rows, i32, "IdxRows, Indices"))
    assert got.shape == (IdxRows.size, Indices.size, Width.size)
    np.testing.assert_array_equal(bits(got), bits(table[rows]))
    half_rows = table.reshape(-1, Width.size // 2)[rows]  # what scaling by the element count would read
    assert not np.array_equal(bits(half_rows[..., :1]), bits(table[rows][..., :1]))


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_unscaled_split_index(on):
    """Upstream's way around the SPM bound: four chunks of 16 × 32 raw rows, each gathered into its tile."""
    rng = np.random.default_rng(26)
    table = rand_bf16(rng, Rows.size, Width.size)
    rows = rng.integers(0, Rows.size, (IdxRows.size, Indices.size)).astype(np.int32)
    got = run_gather(on, gather_unscaled_split_index, (table, bf16, "Rows, Width"), (rows, i32, "IdxRows, Indices"))
    assert got.shape == (IdxRows.size, Indices.size, Width.size)
    np.testing.assert_array_equal(bits(got), bits(table[rows]))


def test_split_index_gathers_four_chunks_that_fit_the_spm():
    """Upstream's point: each of the 4 chunks stages 16 · 32 = 512 index cells (2 KiB), within one PE's 4 KiB
    scratchpad that the whole 2048-cell index overflows (tests/negative/upstream_scatter_gather.py)."""
    result = compile_kernel(gather_unscaled_split_index)
    assert result.ok, result.diagnostics
    gathers = [c for c in result.lir.commands if c.kind == "indirect"]
    assert [c.opcode for c in gathers] == ["dma_gather_unscaled"] * (Indices.size // 32)
    for command in gathers:
        assert len(command.indirect.entries) == IdxRows.size * 32
        assert command.indirect.divisor == 1 and command.indirect.rows == Rows.size  # raw row numbers
        assert command.indirect.row_stride == ROW_BYTES


@pytest.mark.parametrize("on", BACKENDS)
def test_gather_placed_unscaled(on):
    """Each cluster gathers through its own half of the index: out[cl, g] = table[index[cl, g]]."""
    rng = np.random.default_rng(27)
    table = rand_bf16(rng, K.size, D.size)
    rows = rng.integers(0, K.size, (CL.size, G.size)).astype(np.int32)
    got = run_gather(on, gather_placed_unscaled, (table, bf16, "K, D"), (rows, i32, "CL, G"))
    assert got.shape == (CL.size, G.size, D.size)
    np.testing.assert_array_equal(bits(got), bits(table[rows]))
    assert not np.array_equal(bits(got[0]), bits(got[1]))  # the clusters' halves differ: not a broadcast


# ---- faults: an index outside its table ---------------------------------------------------------------------


def line_of(kernel, call: str) -> str:
    """`file:line` of the kernel's source line containing `call`."""
    lines, first = inspect.getsourcelines(kernel.fn)
    (offset,) = [i for i, text in enumerate(lines) if call in text]
    return f"{inspect.getsourcefile(kernel.fn)}:{first + offset}"


def fault(on: str, run) -> str:
    """The message of the fault `run()` raises on backend `on`: a `dma-index` VerifyError on the CPU, a
    SimulatorError on the simulator."""
    if on == "cpu":
        with pytest.raises(VerifyError) as caught:
            run()
        assert caught.value.rule == "dma-index"
    else:
        with pytest.raises(SimulatorError) as caught:
            run()
    return str(caught.value)


BAD = {"negative": (-TABLE_ROW, "negative"), "past": (None, "past the")}


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize("bad", BAD)
def test_gather_fault_names_kernel_and_line(on, bad):
    rng = np.random.default_rng(30)
    table = rand_bf16(rng, K.size, D.size)
    offsets = rng.integers(0, K.size, G.size).astype(np.int32) * TABLE_ROW
    value, words = BAD[bad]
    offsets[77] = K.size * TABLE_ROW if value is None else value  # row K: one past the last row
    message = fault(on, lambda: run_gather(on, gather_minimal, (table, bf16, "K, D"), (offsets, i32, "G")))
    assert gather_minimal.identity in message and line_of(gather_minimal, ".dma_gather_scaled(") in message
    assert "index cell 77" in message and str(offsets[77]) in message and words in message
    if on == "npu":
        assert "dma_gather_scaled" in message  # the command


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize("bad", BAD)
def test_unscaled_gather_fault_names_kernel_and_line(on, bad):
    rng = np.random.default_rng(31)
    table = rand_bf16(rng, K.size, D.size)
    rows = rng.integers(0, K.size, G.size).astype(np.int32)
    rows[300] = K.size if bad == "past" else -1
    message = fault(on, lambda: run_gather(on, gather_aligned_unscaled, (table, bf16, "K, D"), (rows, i32, "G")))
    assert gather_aligned_unscaled.identity in message
    assert line_of(gather_aligned_unscaled, ".dma_gather_unscaled(") in message
    assert "index cell 300" in message and BAD[bad][1] in message


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize("bad", BAD)
def test_scatter_fault_names_kernel_and_line(on, bad):
    rng = np.random.default_rng(32)
    data, cache = rand_bf16(rng, K.size, D.size), rand_bf16(rng, C.size, D.size)
    offsets = np.arange(K.size, dtype=np.int32) * TABLE_ROW
    value, words = BAD[bad]
    offsets[5] = C.size * TABLE_ROW if value is None else value  # row C: one past the cache
    message = fault(on, lambda: run_scatter(on, data, offsets, cache))
    assert scatter_minimal.identity in message and line_of(scatter_minimal, ".dma_scatter(") in message
    assert "index cell 5" in message and words in message
    if on == "npu":
        assert "dma_scatter" in message
