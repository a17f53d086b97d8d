"""Upstream API names that had no test running them on both backends: `docs/api-coverage.md` cites these.

Upstream files (furiosa-ai/furiosa-opt v0.6.0, `furiosa-opt-std/src`): `tensor/memory.rs` (`unpad`, `pad`,
`dma_scatter_unscaled`, `read` and the host constructors and accessors of `HostTensor`), `tensor/view.rs`
(`pad`, `unpad`, `read`), `engine/vector/tensor/vector_tensor_pair.rs` (`vector_logic_zip_with_mode`,
`vector_fxp_zip_with_mode`, `vector_clip_zip_with_mode`), `engine/vector/branch.rs` (`BitReq`), and the
`todo!()` bodies of `engine/fetch_adapter.rs` (`fetch_mask`), `engine/commit_adapter.rs`
(`commit_valid_count_pack`), `engine/vector/tensor/vector_tensor.rs` (`vector_filter`), `tensor/memory.rs`
(`hbm_cluster_shuffle`) and `engine/vector/op/semantics.rs` (`Erf`, `ArithRightShiftRound`).

Upstream has no example kernel for these, so the kernels are ours; each test checks values against numpy
on the CPU backend and on the simulator, and tests/test_differential.py also runs every kernel here on both
backends with random inputs. Differences from upstream:

* `dma_scatter_unscaled` is `todo!()` upstream; here it is `dma_scatter` with a DM index of row numbers (the
  meaning upstream's documentation gives it), so its test is an answer test like `dma_scatter`'s.
* `fetch_mask`, `commit_valid_count_pack`, `vector_filter` and `hbm_cluster_shuffle` are `todo!()` upstream and
  refuse here with `upstream-undefined`, as do the ops `FpUnaryOp.Erf` and `FxpBinaryOp.ArithRightShiftRound`
  (whose semantics are `todo!()` upstream): checked when run on either backend and when compiled.
* Upstream's `HostTensor::from_safetensors` takes an opened safetensors view; ours a path and a tensor name.
"""

import importlib.util
import sys
import textwrap

import numpy as np
import pytest
from backends import backend
from safetensors.numpy import save_file

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

BACKENDS = ["cpu", "npu"]

S, P, A, I, K, D, C = axes(S=64, P=4, A=512, I=2, K=256, D=64, C=300)
One = m["1"]
Cluster = m["1 # 2"]

# ---- pad / unpad --------------------------------------------------------------------------------------------


@device(chip=1)
def unpad_add_pad(ctx: Context, x: HbmTensor[i32, One, m["S, P # 8"]]) -> HbmTensor[i32, One, m["S, P # 8"]]:
    """Each slice holds 4 live i32 and 4 padding cells: `unpad` fetches the live ones alone (16 bytes), adds 1,
    and `pad` declares the 4-cell result inside the 8-cell buffer again for the move back."""
    dm = x.to_dm(ctx.tdma, Cluster, m["S"], m["P # 8"])
    plus = (
        ctx.main.begin(dm.view().unpad(m["P"]))
        .fetch(One, m["P"])
        .collect(One, m["P # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_fxp(FxpBinaryOp.AddFxp, 1)
        .vector_final()
        .commit_trim(m["P"])
        .commit(m["P"])
    )
    return plus.view().pad(m["P # 8"]).to_hbm(ctx.tdma, m["S, P # 8"])


def wrap_i32(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64)
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


def run_unpad_add_pad(on: str, host: HostTensor) -> HostTensor:
    with backend(on) as launch_, Context.acquire() as ctx:
        return launch_(unpad_add_pad, ctx, host.to_hbm(ctx.pdma)).to_host(ctx.pdma)


@pytest.mark.parametrize("on", BACKENDS)
def test_unpad_fetches_the_live_cells_and_pad_moves_them_back(on):
    x = np.arange(S.size * P.size, dtype=np.int32).reshape(S.size, P.size) * 1000 - 7
    x[0, 0], x[1, 3] = 2**31 - 1, -(2**31)  # AddFxp wraps
    got = run_unpad_add_pad(on, HostTensor.from_numpy(x, i32, m["S, P # 8"]))
    np.testing.assert_array_equal(got.to_numpy(), wrap_i32(x.astype(np.int64) + 1))
    buffer = got.into_vec().reshape(S.size, 8)  # the wire buffer: padding cells zero
    np.testing.assert_array_equal(buffer[:, P.size :], 0)


def test_pad_and_unpad_are_inverse_redeclarations():
    dm = DmTensor.new(i32, One, Cluster, m["S"], m["P # 8"])
    live = dm.view().unpad(m["P"])
    assert live.element == m["P"] and live.base is dm
    again = live.pad(m["P # 8"])
    assert again.element == m["P # 8"] and again.window == live.window == 0
    with pytest.raises(VerifyError) as caught:
        dm.view().unpad(m["P = 2"])
    assert caught.value.rule == "unpad-view"


# ---- host constructors and accessors through device memory -----------------------------------------------


def padded(x: np.ndarray) -> np.ndarray:
    """The wire buffer of `m["S, P # 8"]` holding `x` ([S, P]) with zero padding."""
    out = np.zeros((S.size, 8), dtype=x.dtype)
    out[:, : P.size] = x
    return out.reshape(-1)


@pytest.mark.parametrize("on", BACKENDS)
def test_host_tensors_through_device_memory(on, tmp_path):
    """Every host constructor (`zero`, `rand`, `from_vec`, `from_buf`, `from_safetensors`) feeds the kernel, and
    every accessor (`into_vec`, `to_vec`, `to_buf`, `into_inner`) reads its result, on both backends."""
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**31), 2**31, (S.size, P.size), dtype=np.int64).astype(np.int32)
    expected = wrap_i32(x.astype(np.int64) + 1)
    buffer = padded(x)
    mapping = m["S, P # 8"]

    got = run_unpad_add_pad(on, HostTensor.from_vec(buffer, i32, mapping))
    np.testing.assert_array_equal(got.into_vec(), padded(expected))
    np.testing.assert_array_equal(got.to_vec(), padded(expected))
    np.testing.assert_array_equal(got.into_inner(), expected)
    assert got.to_buf() == padded(expected).astype("<i4").tobytes()

    got = run_unpad_add_pad(on, HostTensor.from_buf(buffer.astype("<i4").tobytes(), i32, mapping))
    np.testing.assert_array_equal(got.into_inner(), expected)

    path = tmp_path / "x.safetensors"
    save_file({"x": buffer.reshape(S.size, 8)}, str(path))
    got = run_unpad_add_pad(on, HostTensor.from_safetensors(path, "x", i32, mapping))
    np.testing.assert_array_equal(got.into_inner(), expected)

    got = run_unpad_add_pad(on, HostTensor.zero(i32, mapping))
    np.testing.assert_array_equal(got.into_vec(), padded(np.ones((S.size, P.size), np.int32)))

    drawn = HostTensor.rand(i32, mapping, np.random.default_rng(11))
    values = drawn.into_vec().reshape(S.size, 8)
    assert not values[:, P.size :].any()  # padding zero
    got = run_unpad_add_pad(on, drawn)
    np.testing.assert_array_equal(got.into_inner(), wrap_i32(values[:, : P.size].astype(np.int64) + 1))


# ---- view read ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("on", BACKENDS)
def test_view_read_gives_the_tiled_cells(on):
    """`read` of a tiled HBM view is a tensor of the view's levels: row 5 of an [S, P] table."""
    table = np.arange(S.size * P.size, dtype=np.int32).reshape(S.size, P.size) * 3 + 1
    with backend(on), Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(table, i32, m["S, P"]).to_hbm(ctx.pdma)
        row = hbm.view().tile(5, m["S"], 1, m["1 # 64, P"])
        read = row.read()
        assert type(read) is HbmTensor and read.element == m["1 # 64, P"]
        np.testing.assert_array_equal(read.values()[: P.size], table[5])
        whole = hbm.view().read()
        np.testing.assert_array_equal(whole.values(), table.reshape(-1))


# ---- dma_scatter_unscaled -------------------------------------------------------------------------------------


@device(chip=1)
def scatter_unscaled(
    ctx: Context,
    data: HbmTensor[bf16, One, m["K, D"]],
    index: HbmTensor[i32, One, m["K"]],
    output: HbmTensor[bf16, One, m["C, D"]],
) -> None:
    """Row k of `data` into row `index[k]` of `output` (a row number, read from DM)."""
    data_dm = data.to_dm(ctx.tdma, Cluster, m["K / 2"], m["K % 2, D"])
    index_dm = index.to_dm(ctx.tdma, Cluster, m["K / 2"], m["K % 2"])
    data_dm.dma_scatter_unscaled(index_dm, output, m["K"])


def rand_bf16(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random bf16 codes without NaN/inf, as raw uint16."""
    codes = rng.integers(0, 1 << 16, shape, dtype=np.uint16)
    codes[(codes & 0x7F80) == 0x7F80] &= 0xFF00
    return codes


def bf16_hbm(ctx: Context, codes: np.ndarray, mapping: str) -> HbmTensor:
    return HostTensor.from_vec(bf16.from_bits(codes.reshape(-1)), bf16, m[mapping]).to_hbm(ctx.pdma)


def differential_inputs(kernel, ctx: Context, rng: np.random.Generator):
    """For tests/test_differential.py: row numbers inside the output (random ones would fault), with repeats."""
    if kernel is scatter_unscaled:
        rows = rng.integers(0, C.size, K.size, dtype=np.int32)
        index = HostTensor.from_numpy(rows, i32, m["K"]).to_hbm(ctx.pdma)
        return (
            bf16_hbm(ctx, rand_bf16(rng, K.size, D.size), "K, D"),
            index,
            bf16_hbm(ctx, rand_bf16(rng, C.size, D.size), "C, D"),
        )
    return None


@pytest.mark.parametrize("on", BACKENDS)
def test_dma_scatter_unscaled_writes_rows_by_number(on):
    rng = np.random.default_rng(3)
    data, cache = rand_bf16(rng, K.size, D.size), rand_bf16(rng, C.size, D.size)
    rows = rng.permutation(C.size)[: K.size].astype(np.int32)
    rows[:2] = [C.size - 1, 0]  # the last row and the first
    expected = cache.copy()
    expected[rows] = data
    with backend(on) as launch_, Context.acquire() as ctx:
        output = bf16_hbm(ctx, cache, "C, D")
        index = HostTensor.from_numpy(rows, i32, m["K"]).to_hbm(ctx.pdma)
        assert launch_(scatter_unscaled, ctx, bf16_hbm(ctx, data, "K, D"), index, output) is None
        got = output.to_host(ctx.pdma).into_vec()
    np.testing.assert_array_equal(bf16.to_bits(got).reshape(C.size, D.size), expected)


# ---- pair-mode zips with a mode -------------------------------------------------------------------------------


def _zip_kernel(zip_call):
    """The pair-mode pipeline of upstream's `vector_engine/zip.rs` with `zip_call(pair)` as its zip."""

    def body(ctx: Context, lhs, rhs):
        lhs_dm = lhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
        rhs_dm = rhs.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
        pair = (
            ctx.main.begin_interleaved(lhs_dm.view(), rhs_dm.view(), I)
            .fetch(m["I"], m["A % 2"])
            .fetch_cast(i32)
            .collect(m["I"], m["A % 2 # 8"])
            .vector_init()
            .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        )
        return zip_call(pair).vector_final().commit_trim(m["A % 2"]).commit(m["A % 2"]).to_hbm(ctx.tdma, m["A"])

    return body


@device(chip=1)
def logic_zip_mode10(
    ctx: Context, lhs: HbmTensor[i32, One, m["A"]], rhs: HbmTensor[i32, One, m["A"]]
) -> HbmTensor[i32, One, m["A"]]:
    """Mode10: `rhs << (lhs & 31)` (group 1 first)."""
    zip_ = _zip_kernel(lambda p: p.vector_logic_zip_with_mode(LogicBinaryOpI32.LeftShift, BinaryArgMode.Mode10))
    return zip_(ctx, lhs, rhs)


@device(chip=1)
def fxp_zip_mode10(
    ctx: Context, lhs: HbmTensor[i32, One, m["A"]], rhs: HbmTensor[i32, One, m["A"]]
) -> HbmTensor[i32, One, m["A"]]:
    """Mode10: `rhs - lhs`, wrapping."""
    zip_ = _zip_kernel(lambda p: p.vector_fxp_zip_with_mode(FxpBinaryOp.SubFxp, BinaryArgMode.Mode10))
    return zip_(ctx, lhs, rhs)


@device(chip=1)
def clip_zip_mode11(
    ctx: Context, lhs: HbmTensor[i32, One, m["A"]], rhs: HbmTensor[i32, One, m["A"]]
) -> HbmTensor[i32, One, m["A"]]:
    """Mode11: `rhs + rhs`, wrapping (group 0 unread)."""
    zip_ = _zip_kernel(lambda p: p.vector_clip_zip_with_mode(ClipBinaryOpI32.AddFxp, BinaryArgMode.Mode11))
    return zip_(ctx, lhs, rhs)


ZIPS = {
    "logic_zip_mode10": (logic_zip_mode10, lambda a, b: b.astype(np.uint32) << (a & 31).astype(np.uint32)),
    "fxp_zip_mode10": (fxp_zip_mode10, lambda a, b: wrap_i32(b.astype(np.int64) - a)),
    "clip_zip_mode11": (clip_zip_mode11, lambda a, b: wrap_i32(b.astype(np.int64) * 2)),
}


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize("name", sorted(ZIPS))
def test_zip_with_mode(name, on):
    kernel, oracle = ZIPS[name]
    rng = np.random.default_rng(42)
    lhs = rng.integers(-(2**31), 2**31, A.size, dtype=np.int64).astype(np.int32)
    rhs = rng.integers(-(2**31), 2**31, A.size, dtype=np.int64).astype(np.int32)
    expected = np.asarray(oracle(lhs, rhs)).astype(np.uint32).view(np.int32)
    default = (
        {  # the same op in the default mode (Mode01) gives other values: the mode is applied
            "logic_zip_mode10": lhs.astype(np.uint32) << (rhs & 31).astype(np.uint32),
            "fxp_zip_mode10": wrap_i32(lhs.astype(np.int64) - rhs),
            "clip_zip_mode11": wrap_i32(lhs.astype(np.int64) + rhs),
        }[name]
        .astype(np.uint32)
        .view(np.int32)
    )
    assert (default != expected).mean() > 0.9
    with backend(on) as launch_, Context.acquire() as ctx:
        args = [HostTensor.from_numpy(v, i32, m["A"]).to_hbm(ctx.pdma) for v in (lhs, rhs)]
        got = launch_(kernel, ctx, *args).to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(got, expected)


# ---- BitReq ---------------------------------------------------------------------------------------------------


@device(chip=1)
def bitreq_guards(ctx: Context, x: HbmTensor[i32, One, m["A"]]) -> HbmTensor[i32, One, m["A"]]:
    """Tag bit i is comparison i: x < 0, x > 100, x == 7, x == 9. Negatives get +1000, values over 100 that are
    not negative get -1000, and 7 (bit 2 set, by a negated pattern) gets +5; first match wins, the rest pass."""
    dm = x.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    negative = TagGuard.matches((BitReq.One, BitReq.Ignore, BitReq.Ignore, BitReq.Ignore))
    big = TagGuard.matches((BitReq.Zero, BitReq.One, BitReq.Ignore, BitReq.Ignore))
    seven = TagGuard.not_matches((BitReq.Ignore, BitReq.Ignore, BitReq.Zero, BitReq.Ignore))
    result = (
        ctx.main.begin(dm.view())
        .fetch(One, m["A % 8"])
        .collect(One, m["A % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Comparison((Cmp.Less(0), Cmp.Greater(100), Cmp.Equal(7), Cmp.Equal(9))))
        .vector_fxp(FxpBinaryOp.AddFxp, Branched.imm(negative, 1000).imm(big, -1000).imm(seven, 5))
        .vector_final()
        .commit_trim(m["A % 8"])
        .commit(m["A % 8"])
    )
    return result.to_hbm(ctx.tdma, m["A"])


@pytest.mark.parametrize("on", BACKENDS)
def test_bitreq_guards_select_by_tag_bit(on):
    rng = np.random.default_rng(5)
    x = rng.integers(-300, 300, A.size).astype(np.int32)
    x[:4] = [7, 9, 100, 101]
    expected = np.where(x < 0, x + 1000, np.where(x > 100, x - 1000, np.where(x == 7, x + 5, x))).astype(np.int32)
    assert (expected != x).mean() > 0.6
    with backend(on) as launch_, Context.acquire() as ctx:
        got = launch_(bitreq_guards, ctx, HostTensor.from_numpy(x, i32, m["A"]).to_hbm(ctx.pdma))
        np.testing.assert_array_equal(got.to_host(ctx.pdma).to_numpy(), expected)


# ---- upstream's todo!() bodies: refused on both backends and by the compiler -----------------------------------

# one kernel per refused name, compiled from a module outside tests/ (the differential harness runs every kernel
# under tests/ and would fail on these by design)
REFUSED_MODULE = """
from furiosa_opt import *

S, P, A = axes(S=64, P=4, A=512)
One, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def fetch_mask(ctx: Context, x: HbmTensor[i8, One, m["S, P # 32"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["S"], m["P # 32"])
    ctx.main.begin(dm.view()).fetch(One, m["P # 32"]).fetch_mask(One, m["P #{0} 32"])


@device(chip=1)
def commit_valid_count_pack(ctx: Context, x: HbmTensor[i32, One, m["S, P"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["S"], m["P"])
    stream = ctx.main.begin(dm.view()).fetch(One, m["P"]).collect(One, m["P # 8"]).commit_trim(m["P"])
    stream.commit_valid_count_pack(2)


@device(chip=1)
def vector_filter(ctx: Context, x: HbmTensor[i32, One, m["A"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    stream = ctx.main.begin(dm.view()).fetch(One, m["A % 8"]).collect(One, m["A % 8"]).vector_init()
    stream.vector_filter(One, TagGuard.all())


@device(chip=1)
def hbm_cluster_shuffle(ctx: Context, x: HbmTensor[i8, One, m["S, P"]]) -> None:
    x.hbm_cluster_shuffle(ctx.tdma, [1, 0])


@device(chip=1)
def erf(ctx: Context, x: HbmTensor[f32, One, m["A"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    stream = ctx.main.begin(dm.view()).fetch(One, m["A % 8"]).collect(One, m["A % 8"]).vector_init()
    split = stream.vector_intra_slice_tag(TagMode.Zero).vector_narrow_split(m["A / 4 % 2"], m["A % 4"])
    split.vector_fp_unary(FpUnaryOp.Erf)


@device(chip=1)
def arith_right_shift_round(ctx: Context, x: HbmTensor[i32, One, m["A"]]) -> None:
    dm = x.to_dm(ctx.tdma, Cluster, m["A / 8"], m["A % 8"])
    stream = ctx.main.begin(dm.view()).fetch(One, m["A % 8"]).collect(One, m["A % 8"]).vector_init()
    stream.vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.ArithRightShiftRound, 1)
"""

# kernel → what the refusal names: the four methods, and the two ops upstream's semantics leave as `todo!()`
REFUSED = {
    "fetch_mask": "fetch_mask",
    "commit_valid_count_pack": "commit_valid_count_pack",
    "vector_filter": "vector_filter",
    "hbm_cluster_shuffle": "hbm_cluster_shuffle",
    "erf": "FpUnaryOp.Erf",
    "arith_right_shift_round": "FxpBinaryOp.ArithRightShiftRound",
}


@pytest.fixture(scope="module")
def refused_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("refused") / "upstream_todo.py"
    path.write_text(textwrap.dedent(REFUSED_MODULE))
    spec = importlib.util.spec_from_file_location("api_names_upstream_todo", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.parametrize("name", REFUSED)
def test_upstream_todo_is_refused_by_the_compiler(name, refused_module):
    result = compile_kernel(getattr(refused_module, name))
    assert not result.ok
    assert [d.code for d in result.diagnostics] == ["upstream-undefined"]
    assert REFUSED[name] in result.diagnostics[0].message
    assert "upstream does not define" in result.diagnostics[0].message


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize("name", REFUSED)
def test_upstream_todo_is_refused_when_run(name, on, refused_module):
    kernel = getattr(refused_module, name)
    x = kernel.parameters[1].type
    with backend(on) as launch_, Context.acquire() as ctx:
        hbm = HostTensor.zero(x.dtype, x.params[-1]).to_hbm(ctx.pdma)
        with pytest.raises(VerifyError) as caught:
            launch_(kernel, ctx, hbm)
    # the CPU backend raises the rule itself; the NPU launch compiles first and reports the compile failure
    rule = "upstream-undefined" if on == "cpu" else "npu-not-compiled"
    assert caught.value.rule == rule, caught.value.render()
    assert "upstream-undefined" in caught.value.render() or on == "cpu"
    assert REFUSED[name] in caught.value.message and "upstream does not define" in caught.value.message


# ---- size ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("on", BACKENDS)
@pytest.mark.parametrize(("dtype", "count"), [(i4, 6), (bf16, 6), (i32, 5)])
def test_size_is_the_packed_byte_count(dtype, count, on):
    """`HbmTensor.size()` (and the annotation's `size()`, upstream's static form) is the packed image's bytes:
    the device bytes the tensor occupies on the NPU backend and its host image's length on both."""
    (axis,) = (axes(Q=count),)
    mapping = m[axis]
    with backend(on), Context.acquire() as ctx:
        hbm = HostTensor.from_vec(np.zeros(count, dtype=dtype.storage), dtype, mapping).to_hbm(ctx.pdma)
        assert hbm.size() == HbmTensor[dtype, m["1"], mapping].size() == count * dtype.bits // 8
        assert len(hbm.to_host(ctx.pdma).to_buf()) == hbm.size()
        if on == "npu":
            assert hbm.data.device_bytes().size == hbm.size()
