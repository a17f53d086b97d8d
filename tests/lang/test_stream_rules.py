"""Every static check of the Tensor Unit stages: triggered, with its rule, its message, and the user's
source line it points at (not a line inside furiosa_opt)."""

import numpy as np
import pytest

from furiosa_opt import *

A, B, K, N, X = axes(A=2048, B=8, K=64, N=16, X=3)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


def refused(rule: str, call, *fragments: str) -> VerifyError:
    """Run `call` (a lambda written on the line under test) and check the error it raises."""
    with pytest.raises(VerifyError) as info:
        call()
    error = info.value
    assert error.rule == rule, error.render()
    for fragment in fragments:
        assert fragment in error.message, error.message
    assert error.location is not None and error.location.file == __file__
    assert "lambda" in error.location.source  # the test's own line, never the checker's
    assert "furiosa_opt" not in error.location.file
    return error


def dm(dtype, element, slice_=Slice, cluster=Cluster) -> DmTensor:
    return DmTensor.new(dtype, Chip, cluster, slice_, element)


@pytest.fixture
def ctx():
    with Context.acquire() as ctx:
        yield ctx


def test_error_renders_like_rustc(ctx):
    stream = ctx.main.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"])
    error = refused("collect-time-mismatch", lambda: stream.collect(m["B"], m["B"]), "Collect time mismatch")
    lines = error.render().splitlines()
    assert lines[0].startswith("error[collect-time-mismatch]: Collect time mismatch. Expected: `1`")
    assert lines[1].strip() == f"--> {__file__}:{error.location.line}"
    assert 'stream.collect(m["B"], m["B"])' in lines[3]


def test_a_mismatch_shows_the_sizes_of_same_named_axes(ctx):
    """Two `axes(B=…)` declarations print alike: the sizes say which one is which."""
    fetched = ctx.main.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"])
    B = axes(B=4)  # another module's B
    packet = m["B # 8"]  # read here: a lambda's m[…] would find the module's B
    error = refused("collect-packet-mismatch", lambda: fetched.collect(m["1"], packet))
    assert error.message == "Collect packet mismatch. Expected: `B` (B=8), got: `B # 8` (B=4)"


# ---- spatial sizes, pipeline order, begin --------------------------------------------------------


def test_cluster_and_slice_sizes():
    refused("cluster-size", lambda: DmTensor.new(i32, Chip, m["1 # 3"], Slice, m["B"]), "must be 1 or 2, got 3")
    refused("slice-size", lambda: DmTensor.new(i32, Chip, Cluster, m["1 # 100"], m["B"]), "one of 64 | 128 | 256")


def test_pipeline_order(ctx):
    began = ctx.main.begin(dm(i32, m["B"]).view())
    error = refused("pipeline-order", lambda: began.collect(m["1"], m["B"]), "`collect` cannot follow `begin`")
    assert any("`fetch`" in note for note in error.notes)
    fetched = began.fetch(m["1"], m["B"])
    refused("pipeline-order", lambda: fetched.commit(m["B"]), "`commit` cannot follow `fetch`")
    refused("pipeline-order", lambda: fetched.vector_init(), "`vector_init` cannot follow `fetch`")


def test_begin_needs_a_dm_view(ctx):
    hbm = HbmTensor.new(i32, Chip, m["B"])
    refused("begin-view", lambda: ctx.main.begin(hbm.view()), "begin reads a DM tensor's `view()`")


def test_dm_capacity():
    Big = axes(Big=300_000)
    refused("dm-capacity", lambda: DmTensor.new(i32, Chip, Cluster, Slice, m["Big"]), "must fit", "1200000 bytes")


# ---- fetch ---------------------------------------------------------------------------------------


def test_fetch_rules(ctx):
    began = ctx.main.begin(dm(i8, m["A % 16, B"]).view())
    refused("fetch-unread", lambda: began.fetch(m["1"], m["B"]), "a live input axis is left unread")
    A15 = axes(A15=15)
    odd = ctx.main.begin(dm(i8, m["A15 % 5, A15 / 5"]).view())
    refused("fetch-unreadable", lambda: odd.fetch(m["1"], m["A15 % 3, A15 / 3"]), "incompatible decomposition")
    P, Q, R, S, T, U, V, W, Y = axes(P=2, Q=2, R=2, S=2, T=2, U=2, V=2, W=2, Y=2)
    many = ctx.main.begin(dm(i8, m["P, Q, R, S, T, U, V, W, Y"]).view())
    refused("fetch-entries", lambda: many.fetch(m["Y, W, V, U, T, S, R, Q"], m["P"]), "needs 9 sequencer entries")


def test_fetch_cast_pairs(ctx):
    fetched = ctx.main.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"])
    refused("fetch-cast", lambda: fetched.fetch_cast(bf16), "i32 → bf16 is not a fetch adapter conversion")


# ---- collect and register files -------------------------------------------------------------------


def test_collect_rules(ctx):
    fetched = ctx.main.begin(dm(bf16, m["K"]).view()).fetch(m["1"], m["K"])
    refused("collect-flit", lambda: fetched.collect(m["K / 8"], m["K % 8"]), "exactly 32 bytes (one flit)")
    refused(
        "collect-packet-mismatch",
        lambda: fetched.collect(m["K % 4, K / 16"], m["K % 4, K / 4 % 4"]),
        "Collect packet mismatch. Expected: `K % 16`",
    )
    refused("collect-time-mismatch", lambda: fetched.collect(m["1"], m["K % 16"]), "Expected: `K / 16`")
    odd = ctx.main.begin(dm(bf16, m["X"]).view()).fetch(m["1"], m["X"])
    refused("packet-alignment", lambda: odd.collect(m["1"], m["X # 16"]), "8-byte aligned", "6 bytes")


def test_collect_pads_a_short_packet(ctx):
    fetched = ctx.main.begin(dm(i8, m["N"]).view()).fetch(m["1"], m["N"])
    collected = fetched.collect(m["1"], m["N # 32"])
    assert collected.packet == m["N # 32"]


def test_to_trf_rules(ctx):
    collected = ctx.sub.begin(dm(bf16, m["K"]).view()).fetch(m["1"], m["K"]).collect(m["K / 16"], m["K % 16"])
    refused("trf-lane-size", lambda: collected.to_trf(m["1 # 3"], m["K"]), "Lane::SIZE must be 1, 2, 4, or 8")
    refused("trf-lane-time", lambda: collected.to_trf(m["8"], m["K"]), "does not divide Time::SIZE (4)")
    refused("trf-lane-mismatch", lambda: collected.to_trf(m["K / 16 % 2"], m["K % 32"]), "time_outer != Lane")
    refused(
        "trf-element-mismatch",
        lambda: collected.to_trf(m["K / 16 / 2"], m["K % 16, K / 16 % 2"]),
        "[time_inner, Packet] != Element",
    )
    T = axes(T=65536)
    wide = ctx.sub.begin(dm(bf16, m["T"]).view()).fetch(m["T / 16"], m["T % 16"]).collect(m["T / 16"], m["T % 16"])
    refused(
        "trf-capacity",
        lambda: wide.to_trf(m["T / 8192"], m["T % 8192"]),
        "exceeds register file capacity",
        "131072 bytes = 8 lanes x 16384 bytes",
    )


def test_to_vrf_rules(ctx):
    collected = ctx.sub.begin(dm(bf16, m["N"]).view()).fetch(m["1"], m["N"]).collect(m["1"], m["N"])
    refused("vrf-dtype", lambda: collected.to_vrf(m["N"]), "holds i32 or f32, not bf16")
    V = axes(V=4096)
    big = ctx.sub.begin(dm(i32, m["V"]).view()).fetch(m["V / 8"], m["V % 8"]).collect(m["V / 8"], m["V % 8"])
    refused("vrf-capacity", lambda: big.to_vrf(m["V"]), "VRF data must fit", "16384 bytes")


# ---- contraction ---------------------------------------------------------------------------------


def _operands(ctx, dtype=bf16):
    flit = 32 // (dtype.bits // 8)
    trf = (
        ctx.sub.begin(dm(dtype, m["K"]).view())
        .fetch(m["1"], m["K"])
        .collect(m["K / {flit}"], m["K % {flit}"])
        .to_trf(m["1"], m["K"])
    )
    stream = ctx.main.begin(dm(dtype, m["K"]).view()).fetch(m["1"], m["K"])
    return stream.collect(m["K / {flit}"], m["K % {flit}"]), trf


def test_contract_outer_rules(ctx):
    stream, trf = _operands(ctx)
    refused(
        "contract-outer-flits", lambda: stream.contract_outer(trf, m["K / 16"], m["K % 16 / 2"]), "one or two flits"
    )
    refused(
        "contract-outer-flit",
        lambda: stream.contract_outer(trf, m["K / 32"], m["K / 16 % 2, K % 8, 2"]),
        "inner flit of OutPacket must equal the input Packet",
    )
    refused(
        "contract-outer-packed",
        lambda: stream.contract_outer(trf, m["K / 32"], m["2, K % 16"]),
        "packed cells must equal the innermost 2 cells of Time",
    )
    refused(
        "contract-outer-time",
        lambda: stream.contract_outer(trf, m["K / 32 % 1, 3"], m["K % 32"]),
        "does not divide OutTime",
    )
    i8_stream, i8_trf = _operands(ctx, i8)
    refused(
        "contraction-operands",
        lambda: stream.contract_outer(i8_trf, m["K / 32"], m["K % 32"]),
        "no contraction of a bf16 stream with a i8 TRF tensor",
    )
    other = DmTensor.new(bf16, Chip, Cluster, m["1 # 128"], m["K"])
    other_trf = (
        ctx.sub.begin(other.view()).fetch(m["1"], m["K"]).collect(m["K / 16"], m["K % 16"]).to_trf(m["1"], m["K"])
    )
    refused("contraction-spatial", lambda: stream.contract_outer(other_trf, m["K / 32"], m["K % 32"]), "slice mapping")


def test_contract_packet_rules(ctx):
    stream, trf = _operands(ctx)
    outer = stream.contract_outer(trf, m["K / 32"], m["K % 32"])
    refused("contract-packet-pow2", lambda: outer.contract_packet(m["K % 32 = 3"]), "power of two, got 3")
    refused("contract-packet-mismatch", lambda: outer.contract_packet(m["K % 2"]), "is not a valid contraction")
    assert outer.contract_packet(m["K / 2 % 16"]).stage == "contract_packet"  # the tree drops the inner cell


def test_contract_time_rules(ctx):
    I, J = axes(I=4, J=4)
    trf = (
        ctx.sub.begin(dm(bf16, m["K"]).view())
        .fetch(m["1"], m["K"])
        .collect(m["K / 16"], m["K % 16"])
        .to_trf(m["1"], m["K"])
    )
    stream = ctx.main.begin(dm(bf16, m["I, K"]).view()).fetch(m["I, J"], m["K"]).collect(m["I, J, K / 16"], m["K % 16"])
    packet = stream.contract_outer(trf, m["I, J, K / 32"], m["K % 32"]).contract_packet(m["1"])
    refused("contract-time-indivisible", lambda: packet.contract_time(m["I, N"]), "must divide Time")
    refused("contract-time-order", lambda: packet.contract_time(m["J, I"]), "same order as the Time axes")
    refused("contract-time-padding", lambda: packet.contract_time(m["I # 8"]), "Padding mismatch")


def test_contract_lane_rules(ctx):
    stream, trf = _operands(ctx)
    timed = stream.contract_outer(trf, m["K / 32"], m["K % 32"]).contract_packet(m["1"]).contract_time(m["1"])
    refused(
        "contract-lane-out-packet",
        lambda: timed.contract_lane(LaneMode.Interleaved, m["1"], m["1 # 4"]),
        "OutPacket::SIZE must be 8",
    )
    refused(
        "contract-lane-packet-mismatch",
        lambda: timed.contract_lane(LaneMode.Interleaved, m["1"], m["8"]),
        "OutPacket mismatch. Expected: `1 # 8`",
    )
    refused(
        "contract-lane-time-mismatch",
        lambda: timed.contract_lane(LaneMode.Interleaved, m["2"], m["1 # 8"]),
        "OutTime mismatch",
    )
    refused(
        "pipeline-order",
        lambda: stream.contract_outer(trf, m["K / 32"], m["K % 32"]).contract_time(m["1"]),
        "`contract_time` follows `contract_packet`",
    )


def test_contract_lane_accumulator_bound(ctx):
    T, L = axes(T=4, L=256)
    trf = ctx.sub.begin(dm(bf16, m["L"]).view()).fetch(m["1"], m["L"]).collect(m["L / 16"], m["L % 16"])
    trf = trf.to_trf(m["1"], m["L"])
    stream = (
        ctx.main.begin(dm(bf16, m["L"]).view())
        .fetch(m["T"], m["L"])
        .collect(m["T, L / 16"], m["L % 16"])
        .contract_outer(trf, m["T, L / 32"], m["L % 32"])
        .contract_packet(m["L % 32"])
        .contract_time(m["L / 32"])  # reduces the outer T, keeps the inner L / 32 in the accumulator
    )
    refused(
        "contract-lane-accumulator",
        lambda: stream.contract_lane(LaneMode.Interleaved, m["L / 32, L % 32"], m["1 # 8"]),
        "accumulator buffer overflows",
        "padded Lane 8 * InnerTime 8 * padded Packet 32 = 2048",
    )


# ---- vector engine -------------------------------------------------------------------------------


def _vector(ctx, dtype=i32):
    return ctx.main.begin(dm(dtype, m["B"]).view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).vector_init()


def test_vector_entry_and_tag_rules(ctx):
    collected = ctx.main.begin(dm(bf16, m["N"]).view()).fetch(m["1"], m["N"]).collect(m["1"], m["N"])
    refused("vector-dtype", lambda: collected.vector_init(), "computes on i32 or f32, not bf16")
    M4 = axes(M4=4)
    short = ctx.main.begin(dm(i32, m["M4"]).view()).fetch(m["1"], m["M4"]).collect(m["1"], m["M4 # 8"])
    assert short.vector_init().vector_intra_slice_tag().stage == "tag"
    four = ctx.main.begin(dm(i32, m["M4"]).view()).fetch(m["1"], m["M4"])
    refused("collect-flit", lambda: four.collect(m["1"], m["M4"]), "exactly 32 bytes")


def test_vector_alu_and_order_rules(ctx):
    tagged = _vector(ctx).vector_intra_slice_tag(TagMode.Zero)
    added = tagged.vector_fxp(FxpBinaryOp.AddFxp, 1)
    refused("vector-alu", lambda: added.vector_fxp(FxpBinaryOp.SubFxp, 1), "FxpAdd is already in use")
    assert {alu.name for alu in added.vector_fxp(FxpBinaryOp.MulInt, 3).used} == {"FxpAdd", "FxpMul"}
    floats = _vector(ctx, f32).vector_intra_slice_tag()
    refused("vector-scalar", lambda: floats.vector_fxp(FxpBinaryOp.AddFxp, 1), "computes on i32, the stream holds f32")
    refused("vector-stage-order", lambda: added.vector_intra_slice_tag(), "cannot follow the fxp stage")
    floats = _vector(ctx, f32).vector_intra_slice_tag()
    refused("vector-way", lambda: floats.vector_fp_unary(FpUnaryOp.Exp), "needs a 4-element (Way4) stream")
    refused("vector-operand", lambda: tagged.vector_fxp(FxpBinaryOp.AddFxp, 1.5), "takes an int constant")


def test_a_ternary_operand_error_names_the_operand_and_why(ctx):
    """`(a, b)` of `vector_fp_ternary`: only `a` may be read through the register-file port."""
    narrow = _vector(ctx, f32).vector_intra_slice_tag().vector_narrow_split(m["B / 4"], m["B % 4"])
    collected = ctx.sub.begin(dm(f32, m["B"]).view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"])
    vrf = collected.to_vrf(m["B"])
    error = refused("vector-operand", lambda: narrow.vector_fp_ternary(FpTernaryOp.FmaF, (2.0, vrf)))
    assert error.message == (
        "`vector_fp_ternary` operand 2 of 2 (`b`) must be a constant, got a VrfTensor: the op reads its one "
        "register-file operand (a VrfTensor or Stash) as operand 1 of 2 (`a`) only"
    )
    assert "TernaryArgMode.Mode021, (vrf, 2.0)" in error.notes[0]
    refused(
        "vector-operand",
        lambda: narrow.vector_fp_ternary(FpTernaryOp.FmaF, (1.0, Stash)),
        "operand 2 of 2 (`b`) must be a constant, got Stash",
    )
    slot = Branched.imm(TagGuard.all(), (1.0, vrf))
    refused("vector-operand", lambda: narrow.vector_fp_ternary(FpTernaryOp.FmaF, slot), "operand 2 of 2 (`b`)")
    ints = ctx.sub.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"]).to_vrf(m["B"])
    refused(
        "vector-operand",
        lambda: narrow.vector_fp_ternary(FpTernaryOp.FmaF, (ints, 1.0)),
        "`vector_fp_ternary` operand 1 of 2 (`a`): a i32 VRF operand on a f32 stream",
    )
    refused(
        "vector-operand",
        lambda: narrow.vector_fp_ternary(FpTernaryOp.FmaF, (1.0, "2")),
        "`vector_fp_ternary` operand 2 of 2 (`b`) takes a constant, got '2'",
    )


def test_vector_final_and_narrow_rules(ctx):
    floats = _vector(ctx, f32).vector_intra_slice_tag()
    narrow = floats.vector_narrow_split(m["B / 4"], m["B % 4"])
    refused("vector-way", lambda: narrow.vector_final(), "needs a Way8 stream")
    refused(
        "vector-packet-mismatch",
        lambda: floats.vector_narrow_split(m["B / 4"], m["B / 2 % 4"]),
        "vector_narrow_split: packet mismatch",
    )
    refused("vector-narrow-trim", lambda: floats.vector_narrow_trim(m["B % 4"]), "must be dummy")
    widened = narrow.vector_fp_unary(FpUnaryOp.Exp).vector_widen_concat(m["1"], m["B"])
    assert widened.vector_final().stage == "vector_final"


# ---- cast and commit -----------------------------------------------------------------------------


def test_cast_rules(ctx):
    collected = ctx.main.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"])
    refused("cast-types", lambda: collected.cast(bf16, m["B # 16"]), "i32 → bf16 is not a Cast Engine conversion")
    refused("cast-output-flit", lambda: collected.cast(i8, m["B # 16"]), "Cast output packet must be exactly 32")
    refused("cast-packet-mismatch", lambda: collected.cast(i8, m["1 # 32"]), "Cast packet mismatch. Expected: `B # 32`")


def test_cast_input_must_be_one_flit():
    """Every stage before a cast emits one flit; the rule guards programs built without the API (vISA)."""
    from furiosa_opt.verify.stream import check_cast

    with pytest.raises(VerifyError) as info:
        check_cast(f32, bf16, m["N"], m["N"])
    assert info.value.rule == "cast-input-flit" and "16 elements = 64 bytes" in info.value.message


def test_commit_rules(ctx):
    collected = ctx.main.begin(dm(i32, m["B"]).view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"])
    refused("commit-trim-width", lambda: collected.commit_trim(m["B = 3"]), "[8, 16, 24, 32] bytes, got 12")
    refused("commit-trim-mismatch", lambda: collected.commit_trim(m["B / 2"]), "or a trimming of it")
    trimmed = collected.commit_trim(m["B = 4"])
    refused("commit-unwritten", lambda: trimmed.commit(m["B"]), "a DM cell is left unwritten")
    whole = collected.commit_trim(m["B"])
    refused("commit-unwritable", lambda: whole.commit(m["B = 4"]), "cannot write an input axis into DM")
    target = dm(i32, m["B"])
    refused("view-mut", lambda: whole.commit_view(target.view()), "writes into a `DmTensor.view_mut()`")
    refused("commit-cast-types", lambda: whole.commit_cast(), "f32 → bf16 only")


def test_commit_view_writes_only_the_window(ctx):
    values = np.arange(16, dtype=np.int32)
    host = HostTensor.from_numpy(values, i32, m["N"])
    source = host.to_hbm(ctx.pdma).to_dm(ctx.tdma, Cluster, Slice, m["N"])
    target = dm(i32, m["N"])
    window = target.view_mut().tile(8, m["N"], 8, m["N = 8 #{!} 16"])
    stream = ctx.main.begin(source.view().tile(0, m["N"], 8, m["N = 8 # 16"])).fetch(m["1"], m["N = 8"])
    stream.collect(m["1"], m["N = 8"]).commit_trim(m["N = 8"]).commit_view(window)
    out = target.to_hbm(ctx.tdma, m["N"]).to_host(ctx.pdma).to_numpy()
    assert out.tolist() == [0] * 8 + list(range(8))
