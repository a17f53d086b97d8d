"""What each position holds: the worked examples of spec/mapping.md §4 and the book's constructor tests."""

from furiosa_opt.mapping import axes, m


def idx(cell):
    assert cell.kind == "index", cell
    return cell.index


def test_stride_then_pad_on_full_and_half_axis():  # §4.1
    A = axes(A=2048)
    slices = m["A / 8 # 256"]
    assert slices.size == 256
    assert idx(slices.cell(0)) == {}
    assert idx(slices.cell(1)) == {"A": 8}
    assert idx(slices.cell(255)) == {"A": 2040}
    assert slices.cell(256).kind == "oob"
    A = axes(A=1024)
    half = m["A / 8 # 256"]
    assert half.size == 256
    assert idx(half.cell(127)) == {"A": 1016}
    assert half.cell(128).padding == "top"
    assert half.cell(255).padding == "top"
    A = axes(A=2048)
    dm = m["1, 1 # 2, A / 8 # 256, A % 8"]
    assert dm.size == 4096
    live = [p for p in range(dm.size) if dm.cell(p).kind == "index"]
    assert len(live) == 2048
    assert dm.cell(2048).padding == "top"  # cluster 1 is padding
    assert idx(dm.cell(3 * 8 + 5)) == {"A": 29}  # slice 3, element 5 holds A = 8s + e


def test_slice_grid_of_gemm():  # §4.2
    I, J = axes(I=512, J=512)
    grid = m["I / 32, J / 32"]
    assert grid.size == 256
    expected = {
        0: {},
        1: {"J": 32},
        15: {"J": 480},
        16: {"I": 32},
        17: {"I": 32, "J": 32},
        255: {"I": 480, "J": 480},
    }
    for position, index in expected.items():
        assert idx(grid.cell(position)) == index


def test_resize_one_then_pad_keeps_the_stride():  # §4.3
    B = axes(B=4096)
    half = m["B / 2048 = 1 # 2, B % 2048"]
    assert half.size == 4096
    assert idx(half.cell(0)) == {}
    assert idx(half.cell(2047)) == {"B": 2047}
    assert half.cell(2048).padding == "top"
    assert half.cell(4095).padding == "top"


def test_pair_rows_and_identity():  # §4.4
    A, B = axes(A=8, B=512)
    rows = m["A, B"]
    assert idx(rows.cell(0)) == {}
    assert idx(rows.cell(511)) == {"B": 511}
    assert idx(rows.cell(512)) == {"A": 1}
    assert idx(rows.cell(519)) == {"A": 1, "B": 7}
    assert rows.cell(4096).kind == "oob"
    for position in range(0, 4096, 37):
        assert idx(rows.cell(position)) == {k: v for k, v in {"A": position // 512, "B": position % 512}.items() if v}
    assert idx(m["1"].cell(0)) == {}
    assert m["1"].cell(1).kind == "oob"


def test_padding_aligns_rows():  # §4.5
    C, D = axes(C=13, D=61)
    rows = m["C, D # 64"]
    assert rows.size == 832
    assert idx(rows.cell(0)) == {}
    assert idx(rows.cell(60)) == {"D": 60}
    assert [rows.cell(p).padding for p in (61, 62, 63)] == ["top"] * 3
    assert idx(rows.cell(64)) == {"C": 1}


def test_resize_truncates():  # §4.6
    C, D = axes(C=2, D=3)
    cut = m["C, D = 2"]
    assert [idx(cut.cell(p)) for p in range(4)] == [{}, {"D": 1}, {"C": 1}, {"C": 1, "D": 1}]
    assert cut.cell(4).kind == "oob"


def test_nested_digits_permute_bits():  # §4.7
    B = axes(B=512)
    bits = m["B / 64, B % 32, B / 32 % 2"]
    assert idx(bits.cell(67)) == {"B": 97}
    assert bits.cell(512).kind == "oob"
    for i, j, k in [(0, 0, 0), (3, 17, 1), (7, 31, 1)]:
        assert idx(bits.cell(64 * i + 2 * j + k)).get("B", 0) == 64 * i + j + 32 * k
    B = axes(B=16)
    table = m["B / 4, B % 4"]
    assert all(idx(table.cell(4 * r + c)).get("B", 0) == 4 * r + c for r in range(4) for c in range(4))


def test_book_padding_kinds_and_overshoot():
    A = axes(A=3)
    split = m["A # 4 / 2, A # 4 % 2"]  # composite-aware: position 3 is A # 4's padding, not A = 3
    assert [split.cell(p).kind for p in range(4)] == ["index", "index", "index", "padding"]
    assert split.cell(3).padding == "top"
    assert split == m["A # 4"]


def test_index_literals_of_the_book():  # mapping.md §2 (`i!` examples) read as cells
    A, B = axes(A=4, B=2)
    assert idx(m["A, B"].cell(5)) == {"A": 2, "B": 1}
    B = axes(B=512)
    assert idx(m["B / 64, B % 64"].cell(2 * 64 + 2)) == {"B": 130}
    A = axes(A=512)
    assert idx(m["A / 32 = 8"].cell(0)) == {}


def test_nchw_trace():  # §4.9
    N, C, H, W = axes(N=4, C=64, H=32, W=32)
    element = m["C, H, W"]
    assert idx(element.cell(17509)) == {"C": 17, "H": 3, "W": 5}
    dm = m["N, H, W, C % 2"]
    assert idx(m["C / 2"].cell(8)) == {"C": 16}
    stream = m["N, H, W"]
    assert idx(stream.cell(1125)) == {"N": 1, "H": 3, "W": 5}
    assert dm.size == 4 * 32 * 32 * 2


def test_stream_reads_over_a_buffer():  # §4.8 as cells: Time = A % 2 outer, Packet = A / 2 inner
    A = axes(A=4)
    stream = m["A % 2, A / 2"]
    assert [idx(stream.cell(p)).get("A", 0) for p in range(4)] == [0, 2, 1, 3]
