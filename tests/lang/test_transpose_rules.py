"""The Transpose Engine's rules (`furiosa_opt.verify.transpose.check_transpose`), case by case.

The accepted cases port upstream's `#[cfg(test)] mod valid` of `furiosa-opt-std/src/engine/transpose.rs`
(21 cases, its axes declared as there; Rust `m![(A, B) # 16]` is `m["[A, B] # 16"]`). Upstream only checks
that each is accepted; here the derived engine parameters are asserted too, each from reading the case:
Time is `[outer, rows, columns]`, the output packet is the rows, `in_cols = columns × valid_size`,
`out_rows` is the output time per outer step and `iterations = OutTime::SIZE / out_rows`.

The refusals are ours: one per rule code of the module's table that a language dtype can reach. The
last tests go through the language: where `.transpose` may sit in a pipeline and what may follow it.
"""

from dataclasses import replace

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.resource import transpose_cycles
from furiosa_opt.dtypes import ALL_DTYPES, i5, i9
from furiosa_opt.verify.transpose import check_transpose

A, B, C, D, E, F, G, X, Y = axes(A=4, B=2, C=8, D=4, E=8, F=8, G=2, X=64, Y=512)
Esplit, PPC, IR, EP, EPHalf, Dummy1, Esplit32, BB = axes(
    Esplit=16, PPC=2, IR=8, EP=8, EPHalf=4, Dummy1=1, Esplit32=32, BB=4
)
Cbig, Bbig, Dummy8 = axes(Cbig=384, Bbig=96, Dummy8=8)
T3 = axes(T3=3)  # ours, for a refusal: 3 packets per row

ENGINE_14_TIME = "Cbig / 4 % 24, Cbig / 96, Bbig / 24, Bbig / 8 % 3, Cbig % 4"

# upstream test name → (dtype, Time, Packet, OutTime, OutPacket,
#                       (in_rows, in_cols, out_rows, packets_per_col, iterations) or None where not evident)
VALID = {
    # rows F, one packet of E per row, outer C; out_rows = E
    "transpose_basic": (i8, "C, F", "E # 32", "C, E", "F # 32", (8, 8, 8, 1, 8)),
    # the book's small matrix: B padded to 8 columns, trimmed back to 2 rows
    "transpose_small": (i8, "A", "B # 32", "B", "A # 32", (4, 8, 2, 1, 1)),
    # the same without the trim: all 8 rows, 6 of them padding
    "transpose_small_no_slicing": (i8, "A", "B # 32", "B # 8", "A # 32", (4, 8, 8, 1, 1)),
    # the book's large column: 4 packets per row, in_cols 32
    "transpose_large_col": (i8, "B, C, D", "E # 32", "B, D, E", "C # 32", (8, 32, 32, 4, 2)),
    # the book's bf16 example: at most 4 rows
    "transpose_bf16": (bf16, "C, D", "E # 16", "C, E", "D # 16", (4, 8, 8, 1, 8)),
    # one time step: a single row, its 8 valid lanes become 8 output rows of 1 element
    "transpose_padding_only_in_rows": (bf16, "1", "C % 8 # 16", "C % 8", "1 # 16", (1, 8, 8, 1, 1)),
    # Esplit read as 2 packets of 8 (its outer half in time): in_cols 16, outer C
    "transpose_split_symbol_time": (
        i8,
        "C, D, Esplit / 8",
        "Esplit % 8 # 32",
        "C, Esplit",
        "D # 32",
        (4, 16, 16, 2, 8),
    ),
    "transpose_packets_per_col_2_no_slice": (i8, "IR, PPC", "EP # 32", "PPC, EP", "IR # 32", (8, 16, 16, 2, 1)),
    # the 2 packets per row are a padding time axis
    "transpose_padding_only_packets_per_col": (i8, "IR, 1 # 2", "EP # 32", "1 # 2, EP", "IR # 32", (8, 16, 16, 2, 1)),
    # a single-row matrix (Dummy1), A trimmed from 8 columns to 4 rows, outer D
    "transpose_size1_dummy_axis_as_in_rows": (i8, "D, Dummy1", "A # 32", "D, A", "Dummy1 # 32", (1, 8, 4, 1, 4)),
    # i4: 16 valid lanes per packet, so in_cols 16, trimmed to BB = 4 rows
    "transpose_i4_basic": (i4, "A", "BB # 64", "BB", "A # 64", (4, 16, 4, 1, 1)),
    "transpose_f32_basic": (f32, "B", "C # 8", "C", "B # 8", (2, 8, 8, 1, 1)),
    "transpose_split_symbol_packets_per_col_4": (
        i8,
        "C, D, Esplit32 / 8",
        "Esplit32 % 8 # 32",
        "C, Esplit32",
        "D # 32",
        (4, 32, 32, 4, 8),
    ),
    # the rows are the 8 live steps of `[A, B] # 16`; its padding half is the outer time
    "transpose_packed_pair_in_rows": (i8, "[A, B] # 16", "C # 32", "1 # 2, C", "[A, B] # 32", (8, 8, 8, 1, 2)),
    "transpose_padded_strided_packets_per_col": (
        i8,
        "D, A # 16 / 8",
        "A # 16 % 8 # 32",
        "1 # 2, A # 8",
        "D # 32",
        (4, 16, 16, 2, 1),
    ),
    "transpose_packed_pair_strided_packets_per_col": (
        i8,
        "D, [A, B] # 16 / 8",
        "[A, B] # 16 % 8 # 32",
        "1 # 2, [A, B]",
        "D # 32",
        (4, 16, 16, 2, 1),
    ),
    "transpose_packed_pair_strided_bf16": (
        bf16,
        "D, [A, B] # 16 / 8",
        "[A, B] # 16 % 8 # 16",
        "1 # 2, [A, B]",
        "D # 16",
        (4, 16, 16, 2, 1),
    ),
    # nothing live: several splits fit, so no parameter is evident
    "transpose_all_padding_no_terms": (i8, "1 # 4", "1 # 32", "1 # 32", "1 # 32", None),
    # 4 padding packets per row: in_cols 32
    "transpose_mixed_padding_size_arithmetic": (i8, "A, 1 # 4", "EP # 32", "1 # 4, EP", "A # 32", (4, 32, 32, 4, 1)),
    # rows Dummy8 % 4, outer Dummy8 / 4, and only 1 of the 8 columns kept per outer step
    "transpose_fc1_bias_prepared_split_dummy8": (
        bf16,
        "Dummy8",
        "1 # 16",
        "Dummy8 / 4",
        "Dummy8 % 4 # 16",
        (4, 8, 1, 1, 2),
    ),
    # rows Cbig % 4, one packet (Bbig % 8) per row; everything above is outer: 24 · 4 · 12 = 1152 matrices
    "transpose_engine_14_bf16_multi_split": (
        bf16,
        ENGINE_14_TIME,
        "Bbig % 8 # 16",
        "Cbig / 4 % 24, Cbig / 96, Bbig",
        "Cbig % 4 # 16",
        (4, 8, 8, 1, 1152),
    ),
}
VALID_SIZE = {4: 16, 8: 8, 16: 8, 32: 8}  # the book's table: valid elements per packet, by element bits


def test_all_upstream_valid_cases_are_listed():
    assert len(VALID) == 21


@pytest.mark.parametrize("name", VALID)
def test_upstream_valid_case_is_accepted(name):
    dtype, time, packet, out_time, out_packet, expected = VALID[name]
    params = check_transpose(dtype, m[time], m[packet], m[out_time], m[out_packet])
    assert params.valid_size == VALID_SIZE[dtype.bits]
    assert params.in_cols == params.packets_per_col * params.valid_size
    assert params.out_rows <= params.in_cols
    assert params.iterations * params.out_rows == m[out_time].size
    if expected is not None:
        got = (params.in_rows, params.in_cols, params.out_rows, params.packets_per_col, params.iterations)
        assert got == expected


def test_book_latencies_of_the_shared_cases():
    """Three of upstream's valid cases are the book's examples: their latencies are the book's."""
    for name, cycles in (("transpose_small", 6), ("transpose_large_col", 128), ("transpose_bf16", 68)):
        dtype, *mappings, _ = VALID[name]
        assert transpose_cycles(check_transpose(dtype, *(m[s] for s in mappings))) == cycles, name


# ---- refusals: one per rule code ------------------------------------------------------------------


def refused(rule: str, dtype, time: str, packet: str, out_time: str, out_packet: str, *fragments: str):
    with pytest.raises(VerifyError) as info:
        check_transpose(dtype, m[time], m[packet], m[out_time], m[out_packet])
    assert info.value.rule == rule, info.value.render()
    for fragment in fragments:
        assert fragment in info.value.message, info.value.message
    return info.value


def test_input_packet_must_be_one_flit():
    # 16 i8 elements are half a flit
    refused("transpose-input-packet", i8, "A", "B # 16", "B", "A # 32", "input packet must be 32 bytes", "got 16")
    # 32 bf16 elements are two flits
    refused("transpose-input-packet", bf16, "A", "B # 32", "B", "A # 16", "expected 16 bf16 elements")


def test_output_packet_must_be_one_flit():
    refused("transpose-output-packet", i8, "A", "B # 32", "B", "A # 16", "output packet must be 32 bytes", "got 16")
    refused("transpose-output-packet", f32, "B", "C # 8", "C", "B # 16", "expected 8 f32 elements")


def test_input_lanes_past_valid_size_must_be_padding():
    # i8 reads 8 lanes per packet: the A outside them is live data, not padding
    refused("transpose-input-padding", i8, "C", "A, E", "E", "C # 32", "beyond valid_size_per_packet (8)", "`A`")
    # i4 reads 16 lanes: 4 × 16 live lanes leave A outside
    refused("transpose-input-padding", i4, "C", "A, Esplit", "Esplit", "C # 64", "(16)")


def test_output_lanes_past_max_rows_must_be_padding():
    # at most 8 i8 rows: a packet of 32 live lanes has 24 past the limit
    refused("transpose-output-padding", i8, "A, C", "E # 32", "E", "A, C", "beyond max_in_rows (8)", "`A`")
    # at most 2 f32 rows: B × A is 8 live lanes
    refused("transpose-output-padding", f32, "B", "C # 8", "C", "A, B", "beyond max_in_rows (2)")


def test_output_rows_must_be_consecutive_time_steps():
    # the output packet names an axis that is not in Time at all
    refused("transpose-rows", i8, "C, F", "E # 32", "C, E", "A # 32", "consecutive time steps", "`A # 32`")
    # A and B are both time axes, but C lies between them: they are not consecutive steps
    refused("transpose-rows", i8, "A, C, B", "E # 32", "A, B, E", "[A, B] # 32", "up to 8 consecutive time steps")
    # bf16 with the rows in reverse order: the time steps run B then G, the packet asks for B inside G
    refused("transpose-rows", bf16, "B, G", "E # 16", "E", "[G, B] # 16", "up to 4 consecutive time steps")


def test_in_cols_must_be_a_legal_width():
    # rows C, columns F: 8 packets of 8 = 64 columns, more than 32
    refused("transpose-columns", i8, "C, F", "E # 32", "F, E", "C # 32", "= 64 must be one of [8, 16, 32] for i8")
    # 3 packets per row: 24 columns
    refused("transpose-columns", i8, "C, T3", "E # 32", "T3, E", "C # 32", "packets_per_col (3)", "= 24")


def test_out_rows_cannot_exceed_in_cols():
    # 8 columns (B padded), 16 output rows asked for
    refused("transpose-out-rows", i8, "A", "B # 32", "B # 16", "A # 32", "out_rows (16) must be <= in_cols (8)")


def test_out_time_must_be_outer_then_columns():
    # columns E must be innermost in OutTime, under the outer C
    error = refused("transpose-out-time", i8, "C, F", "E # 32", "E, C", "F # 32", "OutTime mismatch", "got `E, C`")
    assert "`C, E`" in error.message  # the expected order is shown
    # a trim keeps the first rows: `E % 4` (rows 0..3) is accepted, `E / 2` (every other row) is not
    assert check_transpose(i8, m["C, F"], m["E # 32"], m["C, E % 4"], m["F # 32"]).out_rows == 4
    refused("transpose-out-time", i8, "C, F", "E # 32", "C, E / 2", "F # 32", "OutTime mismatch", "innermost 8 rows")


def test_element_bits_only_4_8_16_32():
    """No language dtype has another width (i5/i9 carry 4/8 bits on the wire), so the rule is reached with a
    synthetic 6-bit copy of i8."""
    assert {t.bits for t in ALL_DTYPES} == {4, 8, 16, 32}
    assert (i5.bits, i9.bits) == (4, 8)
    i6 = replace(i8, name="i6", bits=6)
    refused(
        "transpose-element-bits", i6, "A", "B # 32", "B", "A # 32", "element_bits (6) must be one of [4, 8, 16, 32]"
    )


# ---- through the language -------------------------------------------------------------------------

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@pytest.fixture
def ctx():
    with Context.acquire() as ctx:
        yield ctx


def fetched(ctx, values: np.ndarray | None = None):
    """An i8 `[C, F]` × `[E]` stream fetched from DM (the upstream basic case, with `E` read as the packet)."""
    dm = DmTensor.new(i8, Chip, Cluster, Slice, m["C, F, E"])
    if values is not None:
        hbm = HostTensor.from_numpy(values, i8, m["C, F, E"]).to_hbm(ctx.pdma, Chip, m["C, F, E"])
        dm = hbm.to_dm(ctx.tdma, Cluster, Slice, m["C, F, E"])
    return ctx.main.begin(dm.view()).fetch(m["C, F"], m["E"])


def test_transpose_cannot_follow_fetch(ctx):
    stream = fetched(ctx)
    with pytest.raises(VerifyError) as info:
        stream.transpose(m["C, E"], m["F # 32"])
    assert info.value.rule == "pipeline-order"
    assert "`transpose` cannot follow `fetch`" in info.value.message
    assert any("`collect`" in note for note in info.value.notes)  # names the stages it may follow
    assert info.value.location is not None and info.value.location.file == __file__
    with pytest.raises(VerifyError) as info:
        stream.fetch_cast(i8).transpose(m["C, E"], m["F # 32"])
    assert info.value.rule == "pipeline-order"


def test_a_refused_transpose_points_at_the_user_line(ctx):
    collected = fetched(ctx).collect(m["C, F"], m["E # 32"])
    with pytest.raises(VerifyError) as info:
        collected.transpose(m["E, C"], m["F # 32"])
    assert info.value.rule == "transpose-out-time"
    assert info.value.location.file == __file__ and "collected.transpose" in info.value.location.source


def test_commit_trim_follows_transpose(ctx):
    """collect → transpose → commit_trim → commit is accepted, and moves every value where numpy's
    transpose puts it (F rows of E columns become E rows of F, per C)."""
    values = np.random.default_rng(3).integers(-128, 128, (8, 8, 8), dtype=np.int8)  # [C, F, E]
    transposed = fetched(ctx, values).collect(m["C, F"], m["E # 32"]).transpose(m["C, E"], m["F # 32"])
    assert (transposed.stage, str(transposed.time), str(transposed.packet)) == ("transpose", "C, E", "F # 32")
    trimmed = transposed.commit_trim(m["F"])
    result = trimmed.commit(m["C, E, F"]).to_hbm(ctx.tdma, m["C, E, F"]).to_host(ctx.pdma).to_numpy()
    np.testing.assert_array_equal(result, values.transpose(0, 2, 1))


def test_a_non_materializable_stream_is_not_transposed(ctx):
    """i5 (a zero-point staging) streams only feed contract_outer. No public method makes one in front of
    a transpose (fetch_cast does not produce i5), so the stream is handed over the way the contraction
    hands streams back, `Stream.advanced`, with a collect stage and a one-flit packet."""
    collected = fetched(ctx).collect(m["C, F"], m["E # 32"])
    staging = collected.advanced("collect", i5, m["C, F"], m["E # 64"], collected.data)
    with pytest.raises(VerifyError) as info:
        staging.transpose(m["C, E"], m["F # 64"])
    assert info.value.rule == "not-materializable"
    assert "transpose: an i5 stream only feeds contract_outer" in info.value.message
