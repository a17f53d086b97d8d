"""Views of HBM and DM tensors: `tile`, `pad`, `to_dm_view` / `to_hbm_view` / `commit_view` writes,
`reshape` and broadcasting moves.

One test per worked example of shared/spec/mapping.md §9 items 4–10, translated from the upstream Rust
examples (`furiosa-opt-examples/src/{view,tile,host_tile_view,reshape}.rs`, `tests/broadcast.rs` and the
`hbm_nested_tiles_accumulate_one_offset_each` unit test of `furiosa-opt-std/src/tensor/memory.rs`), then
the error paths of views, each checked for its rule, its message and the user line it points at.

Upstream gives every example its own Rust module with its own `axes!`; here they share one Python module.
A kernel body resolves the names in its `m["…"]` strings in the module's globals when it runs, so the
kernels' axes carry a per-example prefix (`V` view.rs, `T` tile.rs, `R` reshape.rs) and never collide.
Tests without a kernel declare the spec's own names as locals, which shadow the globals.
"""

import inspect
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import *

HERE = Path(__file__).resolve()


def line_of(marker: str) -> int:
    """The line of this file that ends with the comment `# <marker>`."""
    lines = HERE.read_text().splitlines()
    found = [n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# <{marker}>")]
    assert len(found) == 1, f"marker <{marker}> must occur exactly once, found {found}"
    return found[0]


def assert_points_here(error: VerifyError, line: int) -> None:
    assert error.location is not None
    assert Path(error.location.file).resolve() == HERE
    assert error.location.line == line, str(error)


# ---- §9.4 view_simpl (view.rs, mod simpl) ------------------------------------------------------------

VA, VB = axes(VA=512, VB=8)


@device(chip=1)
def view_simpl(ctx: Context, input_hbm: HbmTensor[i32, m["1"], m["VA, VB"]]) -> HbmTensor[i32, m["1"], m["VA, VB"]]:
    input = input_hbm.to_dm(ctx.tdma, m["VA / 256"], m["VA % 256"], m["VB"])
    output = DmTensor.new(i32, m["1"], m["VA / 256"], m["VA % 256"], m["VB"])

    # input B = 0..4 → output B = 2..6
    input0123 = input.view().tile(0, m["VB"], 4, m["VB = 4 # 8"])
    output2345 = output.view_mut().tile(2, m["VB"], 4, m["VB = 4 #{!} 8"])
    input0123.to_dm_view(ctx.tdma, output2345)

    # input B = 4..6 → output B = 6..8
    input45 = input.view().tile(4, m["VB"], 2, m["VB = 2 # 8"])
    output67 = output.view_mut().tile(6, m["VB"], 2, m["VB = 2 #{!} 8"])
    input45.to_dm_view(ctx.tdma, output67)

    # input B = 6..8 → output B = 0..2
    input67 = input.view().tile(6, m["VB"], 2, m["VB = 2 # 8"])
    output01 = output.view_mut().tile(0, m["VB"], 2, m["VB = 2 #{!} 8"])
    input67.to_dm_view(ctx.tdma, output01)

    # upstream infers the HBM element `[A, B]` from the return type; here it is spelled out
    return output.to_hbm(ctx.tdma, m["VA, VB"])


def test_view_simpl_rotates_each_row_by_two():
    with Context.acquire() as ctx:
        values = np.arange(4096, dtype=np.int32).reshape(512, 8)  # 8a + b
        input = HostTensor.from_numpy(values, i32, m["VA, VB"]).to_hbm(ctx.pdma, m["1"], m["VA, VB"])
        output = launch(view_simpl, ctx, input).to_host(ctx.pdma, m["VA, VB"])

    expected = np.array([6, 7, 0, 1, 2, 3, 4, 5]) + 8 * np.arange(512)[:, None]
    assert output.to_numpy().tolist() == expected.tolist()
    assert output.to_numpy()[:2].tolist() == [[6, 7, 0, 1, 2, 3, 4, 5], [14, 15, 8, 9, 10, 11, 12, 13]]


# ---- §9.5, §9.6 tile_simple and tile_window_commit (tile.rs) ------------------------------------------

TA, TB, TD = axes(TA=512, TB=32, TD=64)


@device(chip=1)
def tile_simple(ctx: Context, input: HbmTensor[i8, m["1"], m["TA, TB"]]) -> HbmTensor[i8, m["1"], m["TB, TA"]]:
    # Upstream takes `HbmTensorView<'_, i8, m![1], m![A, B]>`; a Python kernel's parameters are tensors,
    # so the view is taken here (upstream's `tile_view_in_loop` shape of the same transpose).
    view = input.view()
    output = HbmTensor.new(i8, m["1"], m["TB, TA"])
    for b in range(32):
        input_slice = view.tile(b, m["TB"], 1, m["TA, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["TB"], 1, m["1 #{!} 32, TA"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output


def test_tile_simple_transposes():
    rng = np.random.default_rng(42)
    input = HostTensor.rand(i8, m["TA, TB"], rng)
    with Context.acquire() as ctx:
        output_hbm = launch(tile_simple, ctx, input.to_hbm(ctx.pdma))
        output = output_hbm.to_host(ctx.pdma, m["TB, TA"])

    source = input.to_numpy()
    assert source.shape == (512, 32) and len(np.unique(source)) > 1
    assert output.to_numpy().shape == (32, 512)
    assert np.array_equal(output.to_numpy(), source.T)
    assert np.array_equal(output.values(), source.T.ravel())  # wire order of `[B, A]`


TChip = m["1"]
TCluster = m["1"]
TSlice = m["1 # 256"]


@device(chip=1, pe=4)
def tile_window_commit(ctx: Context, input: HbmTensor[f32, TChip, m["TD"]]) -> HbmTensor[f32, TChip, m["TD"]]:
    tensor = input.to_dm(ctx.tdma, TCluster, TSlice, m["TD"])
    tile_one = tensor.view().tile(0, m["TD"], 32, m["TD = 32 # 64"])

    result = DmTensor.new(f32, TChip, TCluster, TSlice, m["TD"])

    (
        ctx.main.begin(tile_one)
        .fetch(m["1"], m["TD = 32"])
        .fetch_cast(f32)
        .collect(m["TD = 32 / 8"], m["TD = 32 % 8"])
        .commit_trim(m["TD = 32 % 8"])
        .commit_view(result.view_mut().tile(32, m["TD"], 32, m["TD = 32 #{!} 64"]))
    )

    return result.to_hbm(ctx.tdma)


def test_tile_window_commit_writes_only_the_upper_half():
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(np.arange(64, dtype=np.float32), f32, m["TD"]).to_hbm(ctx.pdma, m["1"], m["TD"])
        output = launch(tile_window_commit, ctx, input)
        actual = output.to_host(ctx.pdma, m["TD"]).to_numpy()

    assert actual.dtype == np.float32
    assert actual[:32].tolist() == [0.0] * 32  # out-of-tile cells: never written, still the zero canvas
    assert actual[32:].tolist() == [float(i) for i in range(32)]  # result[32 + i] = input[i]


# ---- §9.7 host tile move (host_tile_view.rs) ---------------------------------------------------------


def tile_move(ctx: Context, input: HbmTensorView, out: HbmTensorViewMut) -> None:
    """Upstream's `#[device] tile_move` body. A Python kernel cannot declare view parameters
    (`HbmTensorView[...]` is not a tensor type), so the tiles made on the host are moved eagerly."""
    input.to_hbm_view(ctx.tdma, out)


def host_tables(ctx: Context, C: Axis, H: Axis) -> tuple[HbmTensor, HbmTensor]:
    """Row r of the table is filled with r; the output starts at -1.0 (a row no source can produce)."""
    table = np.repeat(np.arange(64, dtype=np.float32)[:, None], 64, axis=1)
    source = HostTensor.from_numpy(table, bf16, m["C, H"]).to_hbm(ctx.pdma, m["1"], m["C, H"])
    blank = np.full((64, 64), -1.0, dtype=np.float32)
    out = HostTensor.from_numpy(blank, bf16, m["C, H"]).to_hbm(ctx.pdma, m["1"], m["C, H"])
    return source, out


def test_host_tile_moves_the_requested_row_to_the_requested_row():
    C, H = axes(C=64, H=64)
    SmallRow = m["1 # 64, H"]
    SmallRowMut = m["1 #{!} 64, H"]
    with Context.acquire() as ctx:
        table, out = host_tables(ctx, C, H)
        src = table.view().tile(3, m["C"], 1, SmallRow)
        dst = out.view_mut().tile(5, m["C"], 1, SmallRowMut)
        tile_move(ctx, src, dst)
        actual = out.to_host(ctx.pdma, m["C, H"]).to_numpy().astype(np.float32)

    for r in range(64):
        want = 3.0 if r == 5 else -1.0
        assert actual[r].tolist() == [want] * 64, f"row {r} after moving row 3 to row 5"


def test_host_tile_offsets_may_be_runtime_values():
    C, H = axes(C=64, H=64)
    SmallRow = m["1 # 64, H"]
    SmallRowMut = m["1 #{!} 64, H"]
    moves = [(0, 63), (32, 32), (63, 0), (3, 5)]
    with Context.acquire() as ctx:
        table, out = host_tables(ctx, C, H)
        for src_row, dst_row in moves:
            src = table.view().tile(src_row, m["C"], 1, SmallRow)
            dst = out.view_mut().tile(dst_row, m["C"], 1, SmallRowMut)
            tile_move(ctx, src, dst)
        actual = out.to_host(ctx.pdma, m["C, H"]).to_numpy().astype(np.float32)

    written = {dst: float(src) for src, dst in moves}
    assert written == {63: 0.0, 32: 32.0, 0: 63.0, 5: 3.0}
    for r in range(64):
        assert actual[r].tolist() == [written.get(r, -1.0)] * 64, f"row {r} after the loop"


# ---- §9.8 nested HBM tiles (memory.rs, hbm_nested_tiles_accumulate_one_offset_each) --------------------


def test_hbm_nested_tiles_accumulate_one_offset_each():
    A, H = axes(A=8, H=4)
    values = np.arange(32, dtype=np.int32).reshape(8, 4)  # element a * H + h holds its flat position
    with Context.acquire() as ctx:
        table = HostTensor.from_numpy(values, i32, m["A, H"]).to_hbm(ctx.pdma, m["1"], m["A, H"])

        row = table.view().tile(3, m["A"], 1, m["1 # 8, H"])
        half = row.tile(2, m["H"], 2, m["1 # 8, H = 2 # 4"])

        # the read spans the declared mapping; the two live cells come first: row 3, then 2 columns in
        read = half.read()
        assert read.element == m["1 # 8, H = 2 # 4"]
        assert read.values()[:2].tolist() == [3 * 4 + 2, 3 * 4 + 3] == [14, 15]
        # the same cells through a DMA out of the view
        assert half.to_hbm(ctx.tdma).values()[:2].tolist() == [14, 15]
        assert row.to_hbm(ctx.tdma, m["H"]).to_host(ctx.pdma).to_numpy().tolist() == [12, 13, 14, 15]


# ---- §9.9 reshape (reshape.rs) -----------------------------------------------------------------------

RA, RB, RC, RD, RE, RF, RG, RH, RI = axes(RA=256, RB=4096, RC=4, RD=2, RE=16, RF=16, RG=16, RH=2, RI=16)


@device(chip=4)
def reshape(
    ctx: Context, hbm_tensor: HbmTensor[i32, m["RA / 4 % 4"], m["RA / 16, RA % 4, RB"]]
) -> HbmTensor[i32, m["RC"], m["RD, RE, RF, RG, RH, RI"]]:
    hbm_transposed = hbm_tensor.to_hbm(ctx.tdma, m["RA % 4, RB, RA / 16"])
    dm_tensor = hbm_transposed.to_dm(
        ctx.tdma, m["RA / 2 % 2"], m["RB % 16, RB / 16 % 16"], m["RB / 256, RA % 2, RA / 16"]
    )
    reshaped = dm_tensor.reshape(m["RC"], m["RD"], m["RE, RF"], m["RG, RH, RI"])
    return reshaped.to_hbm(ctx.tdma, m["RD, RE, RF, RG, RH, RI"])


def test_reshape_relabels_the_wire_buffer():
    with Context.acquire() as ctx:
        values = np.arange(256 * 4096, dtype=np.int32).reshape(256, 4096)  # 4096a + b
        hbm_tensor = HostTensor.from_numpy(values, i32, m["RA, RB"]).to_hbm(
            ctx.pdma, m["RA / 4 % 4"], m["RA / 16, RA % 4, RB"]
        )
        output = launch(reshape, ctx, hbm_tensor).to_host(ctx.pdma, m["RC, RD, RE, RF, RG, RH, RI"])

    c, d, e, f, g, h, i = np.indices((4, 2, 16, 16, 16, 2, 16)).reshape(7, -1)
    expected = 4096 * (16 * i + 4 * c + 2 * d + h) + (256 * g + 16 * f + e)
    assert np.array_equal(output.values(), expected)
    assert output.to_numpy().shape == (4, 2, 16, 16, 16, 2, 16)
    # one step of each digit: i, h, g, f, e, d, c
    steps = [1, 16, 32, 512, 8192, 131072, 262144]
    assert [int(output.values()[x]) for x in steps] == [65536, 4096, 256, 16, 1, 8192, 16384]


# ---- §9.10 broadcast (tests/broadcast.rs) --------------------------------------------------------------


def test_view_broadcast():
    A, B = axes(A=512, B=4)
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(np.arange(512, dtype=np.int32), i32, m["A"])
        hbm1 = input.to_hbm(ctx.pdma, m["1"], m["A"])
        hbm2 = hbm1.to_hbm(ctx.tdma, m["A, B"])
        output = hbm2.to_host(ctx.pdma, m["A, B"])

    assert output.values().tolist() == [x for x in range(512) for _ in range(4)]
    assert output.values()[:8].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


# ---- error paths -------------------------------------------------------------------------------------


@pytest.fixture
def dm_pair():
    """A DM tensor `[A / 256 | A % 256 | B]` (A=512, B=8) holding 8a + b, and a fresh one of the same type."""
    A, B = axes(A=512, B=8)
    with Context.acquire() as ctx:
        values = np.arange(4096, dtype=np.int32).reshape(512, 8)
        hbm = HostTensor.from_numpy(values, i32, m["A, B"]).to_hbm(ctx.pdma)
        dm = hbm.to_dm(ctx.tdma, m["A / 256"], m["A % 256"], m["B"])
        out = DmTensor.new(i32, m["1"], m["A / 256"], m["A % 256"], m["B"])
        yield ctx, hbm, dm, out


def test_tile_with_a_disagreeing_view_type(dm_pair):
    B = axes(B=8)
    ctx, _, dm, out = dm_pair
    with pytest.raises(VerifyError) as caught:
        dm.view().tile(0, m["B"], 4, m["B = 2 # 8"])  # <tile-view-length>
    assert caught.value.rule == "tile-view"
    assert "tile: the split produces `B % 4 # 8`" in caught.value.message
    assert "the requested view type is `B = 2 # 8`" in caught.value.message
    assert_points_here(caught.value, line_of("tile-view-length"))

    # a write view's holes are Bottom padding: the read-side type is refused, and the other way round
    with pytest.raises(VerifyError) as caught:
        out.view_mut().tile(2, m["B"], 4, m["B = 4 # 8"])  # <tile-view-hole>
    assert caught.value.rule == "tile-view"
    assert "the split produces `B % 4 #{!} 8`" in caught.value.message
    assert_points_here(caught.value, line_of("tile-view-hole"))

    with pytest.raises(VerifyError) as caught:
        dm.view().tile(0, m["B"], 4, m["B = 4 #{!} 8"])  # <tile-view-read-hole>
    assert caught.value.rule == "tile-view"
    assert "requested view type is `B = 4 #{!} 8`" in caught.value.message
    assert_points_here(caught.value, line_of("tile-view-read-hole"))


def test_tile_start_in_padding(dm_pair):
    B = axes(B=8)
    ctx, _, dm, out = dm_pair
    window = dm.view().tile(0, m["B"], 4, m["B = 4 # 8"])
    assert window.tile(2, m["B = 4 # 8"], 2, m["B = 2 # 8"]).element == m["B = 2 # 8"]  # in the window: fine
    with pytest.raises(VerifyError) as caught:
        window.tile(5, m["B = 4 # 8"], 2, m["B = 2 # 8"])  # <tile-start-read>
    assert caught.value.rule == "tile-start"
    assert caught.value.message == "tile start 5 maps to Top padding of `B = 4 # 8`"
    assert_points_here(caught.value, line_of("tile-start-read"))

    hole = out.view_mut().tile(0, m["B"], 4, m["B = 4 #{!} 8"])
    with pytest.raises(VerifyError) as caught:
        hole.tile(6, m["B = 4 #{!} 8"], 2, m["B = 2 #{!} 8"])  # <tile-start-write>
    assert caught.value.rule == "tile-start"
    assert "tile start 6 maps to Bottom padding" in caught.value.message
    assert_points_here(caught.value, line_of("tile-start-write"))


def test_pad_to_a_narrower_view(dm_pair):
    B = axes(B=8)
    ctx, _, dm, out = dm_pair
    assert dm.view().pad(m["B # 16"]).element == m["B # 16"]  # a wider buffer: fine
    with pytest.raises(VerifyError) as caught:
        dm.view().pad(m["B = 4"])  # <pad-narrower>
    assert caught.value.rule == "pad-view"
    assert "pad: the padded view cannot be narrower than the element" in caught.value.message
    assert "`B = 4` has 4 positions, `B` has 8" in caught.value.message
    assert_points_here(caught.value, line_of("pad-narrower"))

    with pytest.raises(VerifyError) as caught:
        dm.view().pad(m["B % 4 # 16"])  # <pad-other-view>
    assert caught.value.rule == "pad-view"
    assert "padding `B` to 16 produces `B # 16`, but the requested view is `B % 4 # 16`" in caught.value.message
    assert_points_here(caught.value, line_of("pad-other-view"))


def test_writing_through_a_read_only_view(dm_pair):
    ctx, hbm, dm, out = dm_pair
    with pytest.raises(VerifyError) as caught:
        dm.view().to_dm_view(ctx.tdma, out.view())  # <view-mut-dm>
    assert caught.value.rule == "view-mut"
    assert caught.value.message.startswith("to_dm_view writes into a `DmTensor.view_mut()`, got DmTensorView(")
    assert_points_here(caught.value, line_of("view-mut-dm"))
    assert out.values().tolist() == [0] * out.values().size  # nothing was written

    with pytest.raises(VerifyError) as caught:
        dm.view().to_hbm_view(ctx.tdma, hbm.view())  # <view-mut-hbm>
    assert caught.value.rule == "view-mut"
    assert caught.value.message.startswith("to_hbm_view writes into a `HbmTensor.view_mut()`, got HbmTensorView(")
    assert_points_here(caught.value, line_of("view-mut-hbm"))


def test_dma_tail_not_8_byte_aligned():
    A, B = axes(A=8, B=256)
    with Context.acquire() as ctx:
        hbm = HostTensor.zeros(i8, m["A, B"]).to_hbm(ctx.pdma)
        with pytest.raises(VerifyError) as caught:
            hbm.to_dm(ctx.tdma, m["1 # 2"], m["B / 4"], m["B % 4, A"])  # <dma-tail>
    assert caught.value.rule == "dma-tail-alignment"
    assert "HbmTensor.to_dm: DMA tail alignment violation" in caught.value.message
    assert "not aligned to 8 bytes" in caught.value.message
    assert "= 1 bytes" in caught.value.message
    assert_points_here(caught.value, line_of("dma-tail"))


def test_hbm_to_dm_on_the_pcie_dma(dm_pair):
    A, B = axes(A=512, B=8)
    ctx, hbm, dm, out = dm_pair
    with pytest.raises(VerifyError) as caught:
        hbm.to_dm(ctx.pdma, m["A / 256"], m["A % 256"], m["B"])  # <wrong-context>
    assert caught.value.rule == "wrong-context"
    assert caught.value.message == "HbmTensor.to_dm runs on `ctx.tdma`, got `ctx.pdma`"
    assert_points_here(caught.value, line_of("wrong-context"))


@device(chip=1)
def dm_on_pdma(ctx: Context, input: HbmTensor[i32, m["1"], m["VA, VB"]]) -> None:
    input.to_dm(ctx.pdma, m["VA / 256"], m["VA % 256"], m["VB"])  # <wrong-context-kernel>


def test_an_error_in_a_kernel_points_at_the_kernel_line():
    with Context.acquire() as ctx:
        input = HbmTensor.new(i32, m["1"], m["VA, VB"])
        launched = inspect.currentframe().f_lineno + 2
        with pytest.raises(VerifyError) as caught:
            launch(dm_on_pdma, ctx, input)
    assert caught.value.rule == "wrong-context"
    assert "HbmTensor.to_dm runs on `ctx.tdma`, got `ctx.pdma`" in caught.value.message
    assert_points_here(caught.value, line_of("wrong-context-kernel"))
    assert caught.value.location.line != launched
    assert caught.value.location.function == "dm_on_pdma"
