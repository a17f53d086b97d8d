"""Sequencer synthesis: every case of spec/algebra.md §4.5 (book and upstream tests), the errors, access
sizes, and a property test against relayout index maps."""

import itertools
import random

import numpy as np
import pytest

from furiosa_opt.mapping import MappingError, axes, m
from furiosa_opt.mapping.parse import parse
from furiosa_opt.mapping.relayout import RelayoutError, check_relayout, relayout_index
from furiosa_opt.mapping.sequencer import (
    Entry,
    Mode,
    SequencerError,
    coalesce,
    contiguous_run,
    max_access,
    odometer,
    sequence,
)
from furiosa_opt.mapping.views import plan


def configs(memories, streams, mode=Mode.READ):
    """`size:stride` per entry (`size:stride mN` outside memory 0), one list per stream."""
    return [[str(e) for e in config] for config in sequence(memories, streams, mode)]


def fetch(in_time, in_packet, out_time, out_packet):
    """config_fetch's call: memory 0 is the input Time, memory 1 the DM packet."""
    return configs([in_time, in_packet], [out_time, out_packet])


# ---- the book's sequencer page ----------------------------------------------------------------------


def test_strided_read():
    A, B = axes(A=8, B=512)
    assert configs([m["A, B"]], [m["A, B / 32"], m["B % 32"]]) == [["128:32"], ["32:1"]]


def test_axis_reordering_nchw_to_whcn():
    N, C, H, W = axes(N=4, C=3, H=8, W=8)
    assert configs([m["N, C, H, W"]], [m["W, H, C, N"], m["1"]]) == [["8:1", "8:8", "3:64", "4:192"], []]


def test_tiling_read():
    A, B, C = axes(A=8, B=512, C=3)
    time = ["2:4096", "4:8", "4:8192", "128:32"]
    assert configs([m["A, B, C # 8"]], [m["A % 2, B % 4, A / 2, B / 4"], m["C # 32"]]) == [time, ["32:1"]]


def test_transposing_axes():
    A, B, C = axes(A=8, B=8, C=8)
    time, packet = sequence([m["A, B, C # 32"]], [m["B, A"], m["C # 16"]], Mode.READ)
    assert [str(e) for e in time] == ["8:32", "8:256"] and [str(e) for e in packet] == ["16:1"]
    assert max_access(time, packet, 16) == 16


def test_splitting_axes():
    # Per-descriptor coalescing: the book's joint table would merge B / 4 with the packet (…, 64:1).
    A, B, C = axes(A=8, B=8, C=4)
    result = configs([m["A, B, C # 8"]], [m["A % 2, B % 4, A / 2, B / 4"], m["C # 32"]])
    assert result == [["2:64", "4:8", "4:128", "2:32"], ["32:1"]]


def test_slicing_needs_a_view_memory():
    A, B, C = axes(A=16, B=8, C=8)
    stream = [m["A / 4, A % 4 = 3, B / 4, B % 4 = 2"], m["C"]]
    view = m["A / 4, A % 4 = 3 # 4, B / 4, B % 4 = 2 # 4, C"]
    # The book prints the pre-merge 4:256, 3:64, 2:32, 2:8; A % 4 = 3 and B / 4 are back to back.
    assert configs([view], stream) == [["4:256", "6:32", "2:8"], ["8:1"]]
    with pytest.raises(SequencerError, match="`A % 4` of memory `A, B, C` is not fully read") as error:
        sequence([m["A, B, C"]], stream, Mode.READ)  # the book marks this example `ignore`
    assert error.value.kind == "Unconsumed"


def test_broadcasting_read():
    A, T, P = axes(A=16, T=4, P=4)
    time, packet = sequence([m["A"]], [m["T, A"], m["P"]], Mode.READ)
    assert [str(e) for e in time] == ["4:0", "16:1"] and [str(e) for e in packet] == ["4:0"]
    assert max_access(time, packet, 4) == 4


def test_broadcasting_a_fragment_of_an_axis():
    N = axes(N=2048)
    assert configs([m["N % 512"]], [m["N / 512"], m["N % 512"]]) == [["4:0"], ["512:1"]]


def test_merging_entries_per_descriptor():
    # 7 entries: coalescing stays inside each descriptor; the book's 6 merges W / 8 % 2 into the packet.
    N, C, H, W = axes(N=8, C=8, H=8, W=32)
    time = m["W / 16, H % 2, H / 2, C / 2, C % 2, N / 2, N % 2, W / 8 % 2"]
    expected = [["2:16", "2:32", "4:64", "8:256", "8:2048", "2:8"], ["8:1"]]
    assert configs([m["N, C, H, W"]], [time, m["W % 8"]]) == expected


def test_write_padded_is_not_contiguous():
    A, B = axes(A=4, B=8)
    time, packet = sequence([m["A, B # 16"]], [m["1"], m["A, B"]], Mode.WRITE)
    assert time == [] and [str(e) for e in packet] == ["4:16", "8:1"]
    assert contiguous_run(time + packet) == 8
    assert max_access(time, packet, 32) == 8  # 32 / 8 = 4 accesses per packet


def test_contiguous_and_non_contiguous_packets():
    N, C, H, W = axes(N=4, C=3, H=4, W=8)
    time, packet = sequence([m["N, C, H, W"]], [m["N, C, H"], m["W"]], Mode.READ)
    # The book prints the uncoalesced 4:96, 3:32, 4:8.
    assert [str(e) for e in time] == ["48:8"] and [str(e) for e in packet] == ["8:1"]
    assert max_access(time, packet, 8) == 8
    time, packet = sequence([m["N, C, H, W"]], [m["C"], m["N, H, W"]], Mode.READ)
    assert [str(e) for e in time] == ["3:32"] and [str(e) for e in packet] == ["4:96", "32:1"]
    assert contiguous_run(time + packet) == 32 and max_access(time, packet, 128) == 32


def test_book_access_size_example():
    entries = [Entry(4, 192), Entry(3, 64), Entry(8, 8), Entry(8, 1)]
    assert contiguous_run(entries) == 768 and max_access([], entries, 8) == 8
    assert contiguous_run([]) == 1


# ---- errors -----------------------------------------------------------------------------------------


def test_incompatible_decomposition():
    A = axes(A=15)
    with pytest.raises(MappingError, match="incompatible decomposition of `A`"):
        sequence([m["A % 5, A / 5"]], [m["1"], m["A % 3, A / 3"]], Mode.READ)


def test_broadcasting_write_is_refused():
    A, T, P = axes(A=16, T=4, P=4)
    with pytest.raises(SequencerError, match="`T % 4` is not in memory") as error:
        sequence([m["A"]], [m["T, A"], m["P"]], Mode.WRITE)
    assert error.value.kind == "StreamUnmatchedSegment"
    with pytest.raises(SequencerError, match="broadcast `4` cannot be written"):
        sequence([m["A"]], [m["4, A"]], Mode.WRITE)


def test_dropped_axis_is_unconsumed():
    A, B = axes(A=8, B=4)
    with pytest.raises(SequencerError, match="`B % 4` of memory `A, B` is not fully read") as error:
        sequence([m["A, B"]], [m["A"]], Mode.READ)
    assert error.value.kind == "Unconsumed"
    assert error.value.memories == [m["1 # 8, B"]]  # what is left to move
    with pytest.raises(SequencerError, match="not fully written"):
        sequence([m["A, B"]], [m["A"]], Mode.WRITE)


def test_input_bottom_padding():
    A = axes(A=4)
    assert configs([m["A = 3 # 4"]], [m["A"]]) == [["4:1"]]  # Top padding: an allowed over-read
    for memory in (m["A = 3 #{!} 4"], m["A = 2 #{!} 4"]):
        with pytest.raises(SequencerError, match="Bottom padding") as error:
            sequence([memory], [m["A"]], Mode.READ)
        assert error.value.kind == "InputBottomPadding"


def test_stream_bottom_padding_only_in_carve():
    A, B = axes(A=4, B=3)
    stream = m["A, B #{!} 4"]
    assert configs([m["A, B"]], [stream], Mode.CARVE) == [["4:3", "4:1"]]
    with pytest.raises(SequencerError, match="only Carve allows it"):
        sequence([m["A, B"]], [stream], Mode.READ)


def test_write_must_not_land_on_padding_or_live_cells():
    A, N = axes(A=4, N=8)
    with pytest.raises(SequencerError, match="live values would land on padding"):
        sequence([m["A = 3 # 4"]], [m["A"]], Mode.WRITE)
    with pytest.raises(SequencerError, match="no memory padding is left"):
        sequence([m["A, N"]], [m["1 # 2, A"], m["N"]], Mode.WRITE)


# ---- a digit the streams name more often than memory holds it -----------------------------------------


def test_read_repeats_a_digit_the_streams_name_twice():
    # The packet's `B / 8` reads the digit and the time's repeats it, so every step (a, b8) reads row a
    # whole, in one contiguous 32-element run.
    A, B = axes(A=8, B=32)
    time, packet = sequence([m["1"], m["A, B"]], [m["A, B / 8"], m["B"]], Mode.READ)
    assert [str(e) for e in time] == ["8:32 m1", "4:0"] and [str(e) for e in packet] == ["32:1 m1"]
    assert max_access(time, packet, 32) == 32
    _, offsets = odometer(time + packet, 2)
    a, _, b = np.indices((8, 4, 32))
    assert np.array_equal(offsets, (a * 32 + b).ravel())  # DM `A, B`: row a, column b
    assert fetch(m["1"], m["B"], m["B"], m["B"]) == [["32:0"], ["32:1 m1"]]  # the whole axis, per step
    assert configs([m["A, B"]], [m["A, B / 8"], m["B"]], Mode.CARVE) == [["8:32", "4:0"], ["32:1"]]


def test_repeats_pair_in_order_and_the_outermost_extra_ones_reread():
    B = axes(B=32)
    # memory holds `B / 8` twice (outer at 32, inside `B` at 8), the streams name it three times
    assert configs([m["B / 8, B"]], [m["B / 8, B / 8"], m["B"]]) == [["4:0", "4:32"], ["32:1"]]


def test_write_of_a_digit_named_twice_needs_a_memory_that_holds_it_twice():
    A, B = axes(A=8, B=32)
    with pytest.raises(SequencerError, match="`B / 8 % 4` is claimed twice by the streams") as error:
        sequence([m["A, B"]], [m["A, B / 8"], m["B"]], Mode.WRITE)
    assert error.value.kind == "StreamUnmatchedSegment"
    time, packet = sequence([m["A, B / 8, B"]], [m["A, B / 8"], m["B"]], Mode.WRITE)
    (offsets,) = odometer(time + packet)
    assert offsets.tolist() == list(range(8 * 4 * 32))  # position (a, b8, b) lands on cell (a, b8, b)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("A, B", "A, B / 8, B"),
        ("B", "B, B"),
        ("A, B / 8, B", "A, B / 8, B"),
        ("B / 8, B", "B / 8, B / 8, B"),
        ("A, B", "B / 8, A # 16, B % 8, B / 8"),
    ],
)
def test_relayout_views_reread_as_the_walk_does(src, dst):
    """The CPU backend moves data by views (`views.plan`); the compiled program walks the sequencer."""
    scope = dict(zip(("A", "B"), axes(A=8, B=32), strict=True))
    src, dst = parse(src, scope), parse(dst, scope)
    (entries,) = sequence([src], [dst], Mode.CARVE)
    (offsets,) = odometer(entries)
    got = plan(src.factors, dst.factors).apply(np.arange(src.size, dtype=np.int64)[None], fill=-1)[0]
    live = got >= 0
    assert np.array_equal(got[live], offsets[live])
    assert np.array_equal(relayout_index(src.factors, dst.factors), got)


def test_relayout_rereads_only_where_broadcasts_are_allowed():
    A, B, C = axes(A=8, B=32, C=3)
    with pytest.raises(RelayoutError, match="`B / 8 % 4` would be broadcast"):
        check_relayout(m["A, B"].factors, m["A, B / 8, B"].factors, False)
    # decoding sums the coordinates a position names, so layouts with composite atoms cannot re-read
    with pytest.raises(RelayoutError, match="`A / 4 % 2` is read twice"):
        relayout_index(m["A, [B, C] # 100"].factors, m["A / 4, A, [B, C] # 100"].factors)


# ---- fetch engine -----------------------------------------------------------------------------------


def read_size(access: int, bits: int) -> int:
    """Main context: the largest divisor of the access whose bytes are 1, 2, 4, 8, 16 or 32."""
    return max(d for d in range(1, access + 1) if access % d == 0 and d * bits / 8 in (1, 2, 4, 8, 16, 32))


@pytest.mark.parametrize(
    ("time", "packet", "entries", "access", "read", "cycles"),
    [
        ("N, C, H", "W", (["48:16 m1"], ["16:1 m1"]), 16, 16, 48),
        ("N, C, H / 2", "H % 2, W", (["24:32 m1"], ["32:1 m1"]), 32, 32, 24),
        ("N, C", "H, W", (["12:64 m1"], ["64:1 m1"]), 64, 64, 12),
        ("N", "C, H, W", (["4:192 m1"], ["192:1 m1"]), 192, 64, 12),
    ],
)
def test_fetch_batch(time, packet, entries, access, read, cycles):  # i4
    N, C, H, W = axes(N=4, C=3, H=4, W=16)
    out_time, out_packet = parse(time, locals()), parse(packet, locals())
    result = sequence([m["1"], m["N, C, H, W"]], [out_time, out_packet], Mode.READ)
    assert [[str(e) for e in config] for config in result] == list(entries)
    assert max_access(*result, out_packet.size) == access
    assert read_size(access, 4) == read
    assert out_time.size * out_packet.size // read == cycles


def test_fetch_packet_padding():  # f8: 15, 3 and 1 cycles
    A, B, C = axes(A=3, B=5, C=2)
    memory = m["A, B, C"]
    assert fetch(m["1"], memory, m["A, B"], m["C # 8"]) == [["15:2 m1"], ["8:1 m1"]]
    assert fetch(m["1"], memory, m["A"], m["[B, C] # 16"]) == [["3:10 m1"], ["16:1 m1"]]
    assert fetch(m["1"], memory, m["1"], m["[A, B, C] # 32"]) == [[], ["32:1 m1"]]


def test_fetch_matrix():
    A, B = axes(A=512, B=32)
    assert fetch(m["1"], m["A, B"], m["A"], m["B"]) == [["512:32 m1"], ["32:1 m1"]]


def test_fetch_interleaved():
    A, B, I = axes(A=16, B=32, I=2)
    assert fetch(m["I"], m["A, B"], m["A, I"], m["B"]) == [["16:32 m1", "2:1"], ["32:1 m1"]]


def test_fetch_engine_unit_tests():
    A, B, L = axes(A=8, B=8, L=16)
    assert fetch(m["1"], m["A, B"], m["A"], m["B"]) == [["8:8 m1"], ["8:1 m1"]]
    assert fetch(m["1"], m["A, B"], m["B"], m["A"]) == [["8:1 m1"], ["8:8 m1"]]
    # L stays split across the two descriptors (coalescing never crosses them).
    assert fetch(m["1"], m["L"], m["L / 8"], m["L % 8"]) == [["2:8 m1"], ["8:1 m1"]]
    assert fetch(m["1"], m["A"], m["4"], m["A"]) == [["4:0"], ["8:1 m1"]]
    assert fetch(m["A"], m["B"], m["A"], m["B"]) == [["8:1"], ["8:1 m1"]]


# ---- commit engine ----------------------------------------------------------------------------------


def commit(time, packet, element):
    return configs([element], [time, packet], Mode.WRITE)


def test_commit_book_examples():
    M, K, L = axes(M=4, K=2, L=32)
    # The book's ":8" strides and "access 64" do not fit its own [M, K, L]; derived: run 256.
    time, packet = sequence([m["M, K, L"]], [m["M, K"], m["L"]], Mode.WRITE)
    assert [str(e) for e in time] == ["8:32"] and [str(e) for e in packet] == ["32:1"]
    assert contiguous_run(time + packet) == 256
    K, M, W = axes(K=2, M=4, W=8)  # f32: 32 B and 128 B strides
    assert commit(m["M, K"], m["W"], m["K, M, W"]) == [["4:8", "2:32"], ["8:1"]]
    K, M, N = axes(K=2, M=4, N=16)  # the book prints N as 8 (4:8, 2:32, 8:1)
    assert commit(m["M, K"], m["N"], m["K, M, N"]) == [["4:16", "2:64"], ["16:1"]]
    M, N = axes(M=16, N=8)  # bf16 cast_commit: pad cells 8..15 stay unwritten (Top)
    assert commit(m["M"], m["N"], m["M, N # 16"]) == [["16:16"], ["8:1"]]


def test_commit_engine_unit_tests():  # i8
    N, A, B, C = axes(N=8, A=4, B=3, C=4)
    assert commit(m["A, B, C"], m["N"], m["A, B, C, N"]) == [["48:8"], ["8:1"]]
    assert commit(m["A"], m["N # 16"], m["A, N # 16"]) == [["4:16"], ["16:1"]]
    assert commit(m["A # 32, B"], m["N"], m["B, A # 32, N"]) == [["32:8", "3:256"], ["8:1"]]


def test_commit_dummy_padding_overlaps():
    # Spec §4.3 pinned case: both stream pad digits share the two pad slots of N # 24 at stride 8.
    A, N = axes(A=4, N=8)
    assert commit(m["1 # 2, A, 1 # 2"], m["N"], m["A, 1 # 3, N"]) == [["2:8", "4:24", "2:8"], ["8:1"]]


# ---- coalescing -------------------------------------------------------------------------------------


def test_coalesce_rules():
    assert coalesce([Entry(4, 512), Entry(16, 32)]) == [Entry(64, 32)]
    assert coalesce([Entry(3, 0), Entry(4, 0)]) == [Entry(12, 0)]  # broadcasts always join
    assert coalesce([Entry(2, 8, 1), Entry(8, 1, 0)]) == [Entry(2, 8, 1), Entry(8, 1, 0)]  # memories differ
    assert coalesce([Entry(2, 32), Entry(4, 64)]) == [Entry(2, 32), Entry(4, 64)]


# ---- property: the synthesised loops are the relayout index map --------------------------------------

SIZES = {"A": 8, "B": 4, "C": 2}


def _digits(rng, name):
    """A random decomposition of an axis into digits `X / c % r`, in random order."""
    n = SIZES[name]
    cuts = sorted({1, n} | {c for c in (2, 4) if c < n and rng.random() < 0.5})
    return [f"{name} / {lo} % {hi // lo}" for lo, hi in itertools.pairwise(cuts)]


def _random_case(rng):
    names = rng.sample(sorted(SIZES), rng.randint(1, 3))
    memory = [d for name in names for d in _digits(rng, name)]
    stream = [d for name in names for d in _digits(rng, name)]
    rng.shuffle(memory)
    rng.shuffle(stream)
    if rng.random() < 0.4:  # memory padding on one digit (Top: may be over-read)
        i = rng.randrange(len(memory))
        memory[i] = f"[{memory[i]}] # {parse(memory[i], SCOPE).size + rng.randint(1, 3)}"
    if rng.random() < 0.4:  # stream padding: walked as an over-read
        i = rng.randrange(len(stream))
        stream[i] = f"[{stream[i]}] # {parse(stream[i], SCOPE).size * rng.randint(2, 3)}"
    if rng.random() < 0.4:
        stream.insert(rng.randrange(len(stream) + 1), "T")  # broadcast
    cut = rng.randint(0, len(stream))
    return ", ".join(memory), ", ".join(stream[:cut]) or "1", ", ".join(stream[cut:]) or "1"


SCOPE = dict(zip(("A", "B", "C", "T"), axes(A=8, B=4, C=2, T=3), strict=True))


@pytest.mark.parametrize("seed", range(20))
def test_offsets_equal_relayout_index(seed):
    rng = random.Random(seed)
    for _ in range(25):
        memory, time, packet = (parse(text, SCOPE) for text in _random_case(rng))
        stream = parse(f"[{time}], [{packet}]", SCOPE)
        config = sequence([memory], [time, packet], Mode.READ)
        (offsets,) = odometer(config[0] + config[1])
        index = relayout_index(memory.factors, stream.factors)
        live = index >= 0
        assert np.array_equal(offsets[live], index[live]), (memory, time, packet, config)


@pytest.mark.parametrize("seed", range(10))
def test_permutation_writes_are_bijective(seed):
    rng = random.Random(seed)
    for _ in range(20):
        names = rng.sample(sorted(SIZES), rng.randint(1, 3))
        digits = [d for name in names for d in _digits(rng, name)]
        memory = parse(", ".join(digits), SCOPE)
        rng.shuffle(digits)
        cut = rng.randint(0, len(digits))
        time, packet = (parse(", ".join(part) or "1", SCOPE) for part in (digits[:cut], digits[cut:]))
        config = sequence([memory], [time, packet], Mode.WRITE)  # checked cell by cell inside
        (offsets,) = odometer(config[0] + config[1])
        assert sorted(offsets.tolist()) == list(range(memory.size))
        index = relayout_index(memory.factors, parse(f"[{time}], [{packet}]", SCOPE).factors)
        assert np.array_equal(offsets, index)


def test_write_padding_needs_memory_padding():
    B = axes(B=56)
    assert configs([m["B # 64 / 32, B # 64 % 32"]], [m["B"]], Mode.WRITE) == [["56:1"]]
    with pytest.raises(SequencerError, match="no memory padding to land on"):
        sequence([m["B"]], [m["B # 64"]], Mode.WRITE)
    A, B = axes(A=2, B=3)
    assert configs([m["[A, B] # 8"]], [m["[A, B] # 7"]], Mode.WRITE) == [["7:1"]]


def test_carve_cases():  # spec §2.3: memory = piece, stream = the whole
    A, B, C = axes(A=4, B=2, C=8)
    assert configs([m["A, C"]], [m["A, B, C"]], Mode.CARVE) == [["4:8", "2:0", "8:1"]]
    assert configs([m["B"]], [m["A, B, C"]], Mode.CARVE) == [["4:0", "2:1", "8:0"]]
    with pytest.raises(SequencerError, match="`B % 2` of memory `A, B` is not fully read"):
        sequence([m["A, B"]], [m["A"]], Mode.CARVE)
