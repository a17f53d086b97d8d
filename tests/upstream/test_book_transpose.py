"""Port of the book page `docs/src/computing-tensors/transpose-engine.md`: its six Transpose Engine examples
(`basic_transpose`, the running example, `small_transpose`, `large_col_transpose`, `bf16_transpose`,
`i4_transpose`, `f32_transpose`) and its parameter tables and latency figures.

The book writes each example as a fragment `CollectTensor → TransposeTensor` that only calls
`.transpose()` (its doctests feed it `Tensor::zero()`). Here each becomes a whole kernel: the HBM input
`[P, <time axes>, <packet axes>]` is moved to DM with one slice per `P` (P = 256, the book's Slice), one
`begin → fetch → collect` brings the stream to the fragment's input Time and Packet, `.transpose` takes
the fragment's output Time and Packet exactly as the book types them, and `commit_trim` drops the flit
padding of the output packet (to 8 bytes, the narrowest commit width) before `commit` and the move back to
HBM. Each kernel is checked against numpy's axis transpose of its input, exactly.

The book's examples redeclare `B`, `C`, `D`, `E` with different sizes; kernels here resolve axis names in
this one module, so the running example keeps the book's names and every other example prefixes its axes
with one letter: `S` small, `L` large column, `H` half (bf16), `Q` i4, `W` word (f32). `P` is shared.

The figures become cost-model tests: each kernel is compiled, its transpose engine config taken from the
LIR, and the derived parameters and `transpose_cycles` compared with the book's tables and latencies.
"""

from dataclasses import asdict, replace

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.resource import transpose_cycles
from furiosa_opt.verify.transpose import check_transpose

P = axes(P=256)
B, C, D, E = axes(B=2, C=8, D=2, E=8)  # the running example
SA, SB = axes(SA=4, SB=2)  # small_transpose: A, B
LB, LC, LD, LE = axes(LB=2, LC=8, LD=4, LE=8)  # large_col_transpose: B, C, D, E
HC, HD, HE = axes(HC=8, HD=4, HE=8)  # bf16_transpose: C, D, E
QB, QC, QE = axes(QB=4, QC=16, QE=16)  # i4_transpose: B, C, E
WB, WD, WE = axes(WB=4, WD=2, WE=8)  # f32_transpose: B, D, E

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["P"]


@device(chip=1)
def basic_transpose(
    ctx: Context, input: HbmTensor[i8, Chip, m["P, B, C, D, E"]]
) -> HbmTensor[i8, Chip, m["P, B, D, E, C"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["B, C, D, E"])
    collected = ctx.main.begin(dm.view()).fetch(m["B, C, D"], m["E"]).collect(m["B, C, D"], m["E # 32"])
    transposed = collected.transpose(m["B, D, E"], m["C # 32"])
    return transposed.commit_trim(m["C"]).commit(m["B, D, E, C"]).to_hbm(ctx.tdma, m["P, B, D, E, C"])


@device(chip=1)
def small_transpose(ctx: Context, input: HbmTensor[i8, Chip, m["P, SA, SB"]]) -> HbmTensor[i8, Chip, m["P, SB, SA"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["SA, SB"])
    # A fetch packet is read 8 bytes at a time: the 2-byte `SB` row is padded to 8 on the way in.
    collected = ctx.main.begin(dm.view()).fetch(m["SA"], m["SB # 8"]).collect(m["SA"], m["SB # 32"])
    transposed = collected.transpose(m["SB"], m["SA # 32"])
    # The 4-byte output row cannot be committed alone: keep 8 bytes, its padding included.
    return transposed.commit_trim(m["SA # 8"]).commit(m["SB, SA # 8"]).to_hbm(ctx.tdma, m["P, SB, SA"])


@device(chip=1)
def large_col_transpose(
    ctx: Context, input: HbmTensor[i8, Chip, m["P, LB, LC, LD, LE"]]
) -> HbmTensor[i8, Chip, m["P, LB, LD, LE, LC"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["LB, LC, LD, LE"])
    collected = ctx.main.begin(dm.view()).fetch(m["LB, LC, LD"], m["LE"]).collect(m["LB, LC, LD"], m["LE # 32"])
    transposed = collected.transpose(m["LB, LD, LE"], m["LC # 32"])
    return transposed.commit_trim(m["LC"]).commit(m["LB, LD, LE, LC"]).to_hbm(ctx.tdma, m["P, LB, LD, LE, LC"])


@device(chip=1)
def bf16_transpose(
    ctx: Context, input: HbmTensor[bf16, Chip, m["P, HC, HD, HE"]]
) -> HbmTensor[bf16, Chip, m["P, HC, HE, HD"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["HC, HD, HE"])
    collected = ctx.main.begin(dm.view()).fetch(m["HC, HD"], m["HE"]).collect(m["HC, HD"], m["HE # 16"])
    transposed = collected.transpose(m["HC, HE"], m["HD # 16"])
    return transposed.commit_trim(m["HD"]).commit(m["HC, HE, HD"]).to_hbm(ctx.tdma, m["P, HC, HE, HD"])


@device(chip=1)
def i4_transpose(
    ctx: Context, input: HbmTensor[i4, Chip, m["P, QB, QC, QE"]]
) -> HbmTensor[i4, Chip, m["P, QB, QE, QC"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["QB, QC, QE"])
    collected = ctx.main.begin(dm.view()).fetch(m["QB, QC"], m["QE"]).collect(m["QB, QC"], m["QE # 64"])
    transposed = collected.transpose(m["QB, QE"], m["QC # 64"])
    return transposed.commit_trim(m["QC"]).commit(m["QB, QE, QC"]).to_hbm(ctx.tdma, m["P, QB, QE, QC"])


@device(chip=1)
def f32_transpose(
    ctx: Context, input: HbmTensor[f32, Chip, m["P, WB, WD, WE"]]
) -> HbmTensor[f32, Chip, m["P, WB, WE, WD"]]:
    dm = input.to_dm(ctx.tdma, Cluster, Slice, m["WB, WD, WE"])
    collected = ctx.main.begin(dm.view()).fetch(m["WB, WD"], m["WE"]).collect(m["WB, WD"], m["WE # 8"])
    transposed = collected.transpose(m["WB, WE"], m["WD # 8"])
    return transposed.commit_trim(m["WD"]).commit(m["WB, WE, WD"]).to_hbm(ctx.tdma, m["P, WB, WE, WD"])


# kernel → (dtype, input axes, numpy permutation of the input's axes giving the output)
CASES = {
    basic_transpose: (i8, (P, B, C, D, E), (0, 1, 3, 4, 2)),
    small_transpose: (i8, (P, SA, SB), (0, 2, 1)),
    large_col_transpose: (i8, (P, LB, LC, LD, LE), (0, 1, 3, 4, 2)),
    bf16_transpose: (bf16, (P, HC, HD, HE), (0, 1, 3, 2)),
    i4_transpose: (i4, (P, QB, QC, QE), (0, 1, 3, 2)),
    f32_transpose: (f32, (P, WB, WD, WE), (0, 1, 3, 2)),
}


def _input(dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random integer codes over the dtype's whole range, or random floats in [-1, 1) rounded to the dtype."""
    if dtype == i4:
        return rng.integers(-8, 8, shape, dtype=np.int8)  # i4 values live in an int8 array
    if dtype == i8:
        return rng.integers(-128, 128, shape, dtype=np.int8)
    return rng.uniform(-1, 1, shape).astype(np.float32).astype(dtype.storage)


@pytest.mark.parametrize("kernel", CASES, ids=lambda k: k.__name__)
def test_transposes_values(kernel):
    dtype, names, permutation = CASES[kernel]
    mapping = m[names]
    values = _input(dtype, tuple(a.size for a in names), np.random.default_rng(7))
    with Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(values, dtype, mapping).to_hbm(ctx.pdma, Chip, mapping)
        actual = launch(kernel, ctx, hbm).to_host(ctx.pdma).to_numpy()
    expected = values.transpose(permutation)
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


def test_i4_round_trips_through_an_int8_array():
    """The i4 host tensor keeps every code -8..7 given in an int8 array, and refuses 8 (not wrapped)."""
    values = np.resize(np.arange(-8, 8, dtype=np.int8), (256, 4, 16, 16))
    with Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(values, i4, m["P, QB, QC, QE"]).to_hbm(ctx.pdma, Chip, m["P, QB, QC, QE"])
        np.testing.assert_array_equal(hbm.to_host(ctx.pdma).to_numpy(), values)
    with pytest.raises(VerifyError, match="not an integer in i4's range"):
        HostTensor.from_numpy(np.full((256, 4, 16, 16), 8, dtype=np.int8), i4, m["P, QB, QC, QE"])


# ---- the book's parameter tables and latencies ----

# kernel → the book's (in_cols, in_rows, out_rows), the n and packets_per_col its latency text uses, the latency
BOOK = {
    basic_transpose: dict(in_cols=16, in_rows=8, out_rows=16, iterations=2, packets_per_col=2, cycles=48),
    small_transpose: dict(in_cols=8, in_rows=4, out_rows=2, iterations=1, packets_per_col=1, cycles=6),
    large_col_transpose: dict(in_cols=32, in_rows=8, out_rows=32, iterations=2, packets_per_col=4, cycles=128),
    bf16_transpose: dict(in_cols=8, in_rows=4, out_rows=8, iterations=8, packets_per_col=1, cycles=68),
    i4_transpose: dict(in_cols=16, in_rows=16, out_rows=16, iterations=4, packets_per_col=1, cycles=80),
    f32_transpose: dict(in_cols=8, in_rows=2, out_rows=8, iterations=4, packets_per_col=1, cycles=34),
}
VALID_SIZE = {i8: 8, bf16: 8, i4: 16, f32: 8}  # the book's table, per element size


def _transpose_config(kernel) -> dict:
    result = compile_kernel(kernel)
    assert result.ok, result.diagnostics
    configs = [e for c in result.lir.commands for e in (getattr(c, "engines", None) or ()) if e.stage == "transpose"]
    assert len(configs) == 1, configs
    return configs[0]


@pytest.mark.parametrize(
    "kernel",
    list(BOOK),
    ids=lambda k: k.__name__,
)
def test_book_parameters_and_latency(kernel):
    book = BOOK[kernel]
    config = _transpose_config(kernel)
    for key in ("in_cols", "in_rows", "out_rows", "iterations", "packets_per_col"):
        assert getattr(config, key) == book[key], key
    assert config.valid_size == VALID_SIZE[CASES[kernel][0]]
    assert config.in_cols == config.packets_per_col * config.valid_size
    assert transpose_cycles(config) == book["cycles"]


def test_i4_parameters_from_the_rules():
    """The i4 example's numbers straight from the Transpose Engine rules, which stage 2 uses to derive the
    config (the compiled kernel's config above must agree)."""
    derived = check_transpose(i4, m["QB, QC"], m["QE # 64"], m["QB, QE"], m["QC # 64"])
    params = asdict(derived)
    book = BOOK[i4_transpose]
    for key in ("in_cols", "in_rows", "out_rows", "iterations", "packets_per_col"):
        assert params[key] == book[key], key
    assert params["valid_size"] == 16
    assert transpose_cycles(derived) == 80


def test_buffering_modes():
    """`in_cols ≤ 16` overlaps input and output (double buffering); the large column example does not."""
    basic, large = _transpose_config(basic_transpose), _transpose_config(large_col_transpose)
    # basic: in_flits = 8 × 2 = 16; 16 + (2 − 1) × max(16, 16) + 16
    assert transpose_cycles(basic) == 16 + 1 * max(16, 16) + 16
    # large: in_flits = 8 × 4 = 32; single buffering adds input and output every iteration: 2 × (32 + 32)
    assert transpose_cycles(large) == 2 * (32 + 32)
    # the same large config read with double buffering would have been shorter: 32 + 32 + 32 < 128
    assert transpose_cycles(replace(large, in_cols=16)) == 96
