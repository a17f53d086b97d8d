"""The Vector Engine reducers' rules (`furiosa_opt.verify.vector`), one refusal per rule code, and upstream's
published narrow-split case.

Intra-slice reduce (upstream `config_reduce_label`, `furiosa-opt-lower/src/verify/engine/vector/tensor.rs`):
`vector-reduce-indivisible`, `vector-reduce-label`, `vector-reduce-not-fully-reduced`, `vector-reduce-packet`.
Inter-slice reducer (the book's four rules, which no upstream code checks): `vector-inter-slice-size`,
`-innermost`, `-kept`, `-time`; and entering it from a stage the book's table does not allow
(`vector-stage-order`) or in Way4 (`vector-way`). Each refusal is reached through the language, on a stream
built under `Context.acquire()` without a kernel, and checks the rule code and a piece of the message; the
pure check functions are called directly where the language cannot reach a rule (`vector-way` on entry: every
stage the reducer may follow runs in Way8).

The last test ports upstream's `#[cfg(test)] vector_narrow_split_padded_stride_modulo` (same module as
`config_reduce_label`): time `R # 24 / 4`, packet `[R # 24 % 4, A]` with R = 19, A = 2 splits into time
`[R # 24 / 4, R # 24 / 2 % 2]` and packet `[R # 24 % 2, A]`. Upstream only checks it is accepted; here the
split stream's cells are checked too.
"""

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.verify.vector import check_inter_slice_entry, check_intra_slice_reduce, check_narrow_split

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]
N, C, D, T = axes(N=16, C=8, D=4, T=4)  # N: the reduced axis of the intra-slice cases
W, Y, S, V, U, P = axes(W=64, Y=4, S=2, V=4, U=2, P=8)  # the inter-slice cases: Slice [W, Y], Time [S, V, U]
R, A = axes(R=19, A=2)  # upstream's narrow-split test


@pytest.fixture
def ctx():
    with Context.acquire() as ctx:
        yield ctx


def refused(rule: str, call, *fragments: str) -> VerifyError:
    with pytest.raises(VerifyError) as info:
        call()
    assert info.value.rule == rule, info.value.render()
    for fragment in fragments:
        assert fragment in info.value.message, info.value.message
    return info.value


# ---- intra-slice reduce ---------------------------------------------------------------------------------------


def way4(ctx, time: str, packet: str, dtype=i32):
    """A Way4 stream with `time` and a 4-element `packet`: fetched with the packet padded to a flit, tagged,
    then trimmed (the chain every intra-slice reduce of upstream's examples starts with)."""
    dm = DmTensor.new(dtype, Chip, Cluster, Slice, m[f"{time}, {packet}"])
    return (
        ctx.main.begin(dm.view())
        .fetch(m[time], m[packet])
        .collect(m[time], m[f"{packet} # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m[packet])
    )


def test_reduce_output_must_divide_the_input(ctx):
    stream = way4(ctx, "N", "D")
    op = IntraSliceReduceOpI32.AddSat
    refused(
        "vector-reduce-indivisible",
        lambda: stream.vector_intra_slice_reduce(op, N, m["1"], m["C % 4"]),
        "output shape must divide input shape",
        "`C`",
    )


def test_every_reduced_axis_must_be_the_label(ctx):
    # Time [N, T] → OutTime [1] folds T as well as N
    stream = way4(ctx, "N, T", "D")
    refused(
        "vector-reduce-label",
        lambda: stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.Max, N, m["1"], m["D"]),
        "must match the specified reduce_label N",
        "`N, T",
    )
    # a label the stream does not hold: by name it is looked up and refused; as the axis object it reaches
    # the quotient check, which N and T fail
    refused(
        "vector-reduce-label",
        lambda: stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.Max, "C", m["1"], m["D"]),
        "names an axis of the stream to reduce",
    )
    refused(
        "vector-reduce-label",
        lambda: stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.Max, C, m["1"], m["D"]),
        "reduce_label C, got quotient `N, T",
    )
    # the reduced axis given by name or as a mapping of it alone is the same label as the axis object
    for label in ("N", m["N"]):
        reduced = way4(ctx, "N, T", "D").vector_intra_slice_reduce(IntraSliceReduceOpI32.Max, label, m["T"], m["D"])
        assert (str(reduced.stream.time), str(reduced.stream.packet)) == ("T", "D")


def test_the_label_must_be_reduced_entirely(ctx):
    # N / 4 in Time is folded, but N % 4 is kept in the packet
    stream = way4(ctx, "N / 4", "N % 4")
    refused(
        "vector-reduce-not-fully-reduced",
        lambda: stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.Min, N, m["1"], m["N % 4"]),
        "reduce_label N is still present in a retained axis",
    )


def test_the_packet_is_kept_or_collapses_to_lane_0(ctx):
    # N folded out of Time [N, D]; the packet T and the surviving time axis D trade places
    stream = way4(ctx, "N, D", "T")
    refused(
        "vector-reduce-packet",
        lambda: stream.vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, N, m["T"], m["D"]),
        "Packet should be either preserved or reduced to 4",
        "Packet `T` -> OutPacket `D`",
    )
    # the two legal outputs of the same stream: packet kept, or collapsed to `1 # 4`
    kept = way4(ctx, "N, D", "T").vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, N, m["D"], m["T"])
    assert str(kept.stream.packet) == "T"
    with pytest.raises(VerifyError) as info:  # collapsing T too would fold a second axis
        way4(ctx, "N, D", "T").vector_intra_slice_reduce(IntraSliceReduceOpI32.AddSat, N, m["D"], m["1 # 4"])
    assert info.value.rule == "vector-reduce-label"


def test_intra_rules_on_the_check_function():
    """The same four codes on `check_intra_slice_reduce` itself (time, packet, out time, out packet, label)."""
    cases = {
        "vector-reduce-indivisible": ("N", "D", "1", "C % 4"),
        "vector-reduce-label": ("N, T", "D", "1", "D"),
        "vector-reduce-not-fully-reduced": ("N / 4", "N % 4", "1", "N % 4"),
        "vector-reduce-packet": ("N, D", "T", "T", "D"),
    }
    for rule, mappings in cases.items():
        refused(rule, lambda mappings=mappings: check_intra_slice_reduce(*(m[s] for s in mappings), "N"))
    check_intra_slice_reduce(m["N / 4"], m["N % 4"], m["1"], m["1 # 4"], "N")  # upstream's split case
    check_intra_slice_reduce(m["T, N"], m["D"], m["T"], m["D"], "N")


# ---- inter-slice reducer --------------------------------------------------------------------------------------


def init(ctx):
    """An f32 stream on Slice [W, Y], Time [S, V, U], packet P, right after `vector_init`."""
    dm = DmTensor.new(f32, Chip, Cluster, m["W, Y"], m["S, V, U, P"])
    return ctx.main.begin(dm.view()).fetch(m["S, V, U"], m["P"]).collect(m["S, V, U"], m["P"]).vector_init()


ADD = InterSliceReduceOpF32.Add


def test_inter_slice_reduce_keeps_the_slice_count(ctx):
    stream = init(ctx)
    refused(
        "vector-inter-slice-size",
        lambda: stream.vector_inter_slice_reduce(ADD, m["W"], m["S, V, U"]),
        "keeps the slice count",
        "has 256, OutSlice `W` 64",
    )


def test_inter_slice_reduce_folds_the_innermost_slice_axes(ctx):
    dm = DmTensor.new(f32, Chip, Cluster, m["Y, W"], m["P"])
    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["P"]).collect(m["1"], m["P"]).vector_init()
    refused(
        "vector-inter-slice-innermost",
        lambda: stream.vector_inter_slice_reduce(ADD, m["1 # 4, W"], m["1"]),
        "reduces the innermost Slice axes",
        "reduces `Y",
    )


def test_inter_slice_reduce_keeps_the_other_slice_axes_in_place(ctx):
    stream = init(ctx)
    refused(
        "vector-inter-slice-kept",
        lambda: stream.vector_inter_slice_reduce(ADD, m["1 # 4, W"], m["S, V, U"]),
        "keeps the other Slice axes in place",
        "expected OutSlice `[W, …]`",
    )


def test_inter_slice_reduce_time_rules(ctx):
    stream = init(ctx)
    # V promoted into the freed slot, but the staying Time axes S, U swap
    refused(
        "vector-inter-slice-time",
        lambda: stream.vector_inter_slice_reduce(ADD, m["W, V"], m["U, S"]),
        "keeps the Time axes it does not promote, in order",
        "OutTime `U, S`",
    )
    # a kept Slice axis (W) moved into Time
    refused(
        "vector-inter-slice-time",
        lambda: stream.vector_inter_slice_reduce(ADD, m["V, 1 # 64"], m["S, W, U"]),
        "moves no Slice axis into Time",
    )
    # the book's promotion itself is accepted
    promoted = stream.vector_inter_slice_reduce(ADD, m["W, V"], m["S, U"])
    assert (str(promoted.stream.time), promoted.way, promoted.inter_first) == ("S, U", 8, True)


def i32_tagged(ctx):
    dm = DmTensor.new(i32, Chip, Cluster, m["W, Y"], m["P"])
    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["P"]).collect(m["1"], m["P"]).vector_init()
    return stream.vector_intra_slice_tag(TagMode.Zero)


OUT = (m["W, 1 # 4"], m["1"])


def test_inter_slice_reduce_entered_from_a_wrong_stage(ctx):
    op = InterSliceReduceOpI32.AddSat
    # the tag unit (Entry) has no path to the reducer; the book's table allows logic, fxp, fxp_to_fp, widen,
    # fp_to_fxp and clip
    refused(
        "vector-stage-order",
        lambda: i32_tagged(ctx).vector_inter_slice_reduce(op, *OUT),
        "cannot follow the tag stage",
    )
    # a Way4 stage (narrow): refused by stage before its way is looked at
    dm = DmTensor.new(i32, Chip, Cluster, m["W, Y"], m["P"])
    trimmed = (
        ctx.main.begin(dm.view())
        .fetch(m["P / 4"], m["P % 4"])
        .collect(m["P / 4"], m["P % 4 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["P % 4"])
    )
    refused("vector-stage-order", lambda: trimmed.vector_inter_slice_reduce(op, *OUT), "cannot follow the narrow stage")
    # the reducer runs once per pass: not twice in a row, and not again after an InterFirst chain
    first = i32_tagged(ctx).vector_logic(LogicBinaryOpI32.BitAnd, 1).vector_inter_slice_reduce(op, *OUT)
    refused("vector-stage-order", lambda: first.vector_inter_slice_reduce(op, *OUT), "inter_reduce stage")
    dm = DmTensor.new(i32, Chip, Cluster, m["W, Y"], m["P"])
    inter_first = (
        ctx.main.begin(dm.view())
        .fetch(m["1"], m["P"])
        .collect(m["1"], m["P"])
        .vector_init()
        .vector_inter_slice_reduce(op, *OUT)
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_logic(LogicBinaryOpI32.BitAnd, 1)
    )
    refused("vector-stage-order", lambda: inter_first.vector_inter_slice_reduce(op, *OUT), "runs once per pass")
    # after an IntraFirst reduce only vector_final may follow
    refused(
        "vector-stage-order",
        lambda: first.vector_intra_slice_tag(TagMode.Zero),
        "when the intra-slice chain came first (IntraFirst)",
    )


def test_inter_slice_entry_way_on_the_check_function():
    """`vector-way` on entry: no stage the reducer may follow runs in Way4, so the language cannot reach it."""
    refused("vector-way", lambda: check_inter_slice_entry("logic", 4), "needs a Way8 stream, this one is Way4")
    refused("vector-way", lambda: check_inter_slice_entry("clip", 4), "Way4")
    refused("vector-stage-order", lambda: check_inter_slice_entry("fp", 4), "cannot follow the fp stage")
    for stage in ("init", "logic", "fxp", "fxp_to_fp", "widen", "fp_to_fxp", "clip"):
        check_inter_slice_entry(stage, 8)


# ---- upstream's published narrow-split case -------------------------------------------------------------------

SPLIT = ("R # 24 / 4", "R # 24 % 4, A", "R # 24 / 4, R # 24 / 2 % 2", "R # 24 % 2, A")


def test_vector_narrow_split_padded_stride_modulo():
    check_narrow_split(*(m[s] for s in SPLIT))


def test_vector_narrow_split_padded_stride_modulo_through_the_language(ctx):
    """The same split on a stream: each Way4 cell (time i, j; lane r2, a) holds x[4i + 2j + r2, a] for the 19
    live R; concatenated back it is the input again."""
    x = np.arange(R.size * A.size, dtype=np.int32).reshape(R.size, A.size) * 7 - 50
    hbm = HostTensor.from_numpy(x, i32, m["R, A"]).to_hbm(ctx.pdma, Chip, m["R # 24, A"])
    dm = hbm.to_dm(ctx.tdma, Cluster, Slice, m["R # 24, A"])
    time, packet, time2, packet2 = (m[s] for s in SPLIT)
    tagged = ctx.main.begin(dm.view()).fetch(time, packet).collect(time, packet).vector_init().vector_intra_slice_tag()
    split = tagged.vector_narrow_split(time2, packet2)
    assert split.way == 4
    cells = split.stream.data.values().reshape(2, 256, 6, 2, 2, 2)[0, 0]  # [i, j, r2, a] in slice 0
    r = 4 * np.arange(6)[:, None, None] + 2 * np.arange(2)[None, :, None] + np.arange(2)[None, None, :]
    live = r < R.size
    np.testing.assert_array_equal(cells[live], x[r[live]])
    back = split.vector_widen_concat(time, packet).vector_final().commit_trim(packet).commit(m["R # 24, A"])
    np.testing.assert_array_equal(back.to_hbm(ctx.tdma, m["R, A"]).to_host(ctx.pdma).to_numpy(), x)
