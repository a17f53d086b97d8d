"""Every code table round-trips every value it codes (encode, then decode, gives the value back), and the
composite encodings (immediates, guards, operands, tag modes, switch configs) give back what the
simulator ran from text before: the same values, bit for bit."""

import itertools

import numpy as np
import pytest

from furiosa_opt.dtypes import ALL_DTYPES, DTYPE_CODES
from furiosa_opt.switch import KINDS as SWITCH_KINDS
from furiosa_opt.switch import VARIANTS, SwitchConfig, fields, from_fields
from furiosa_opt.vector import codes
from furiosa_opt.vector.ops import (
    RF,
    BinaryArgMode,
    BitReq,
    Branched,
    Cmp,
    LaneMode,
    Stash,
    TagGuard,
    TagMode,
    TernaryArgMode,
    all_ops,
)

I32, F32 = np.dtype(np.int32), np.dtype(np.float32)


def test_every_op_round_trips():
    assert len(codes.OPS.values) == len(all_ops()) == 62
    for op in all_ops():
        assert codes.OPS.value(codes.OPS.code(op)) == op
    assert codes.OPS.bits == 6


def test_every_mode_round_trips():
    for mode in (*BinaryArgMode, *TernaryArgMode, *LaneMode):
        assert codes.MODES.value(codes.MODES.code(mode)) is mode


def test_every_dtype_round_trips():
    for dtype in ALL_DTYPES:
        assert DTYPE_CODES.value(DTYPE_CODES.code(dtype)) is dtype
    assert DTYPE_CODES.bits == 4


def test_every_switch_config_round_trips():
    for kind, names in VARIANTS.items():
        config = SwitchConfig(kind, **{name: 2 + k for k, name in enumerate(names)})
        numbers = fields(config)
        assert numbers["config"] == SWITCH_KINDS.code(kind) and set(numbers) == {"config", "slice1", "slice0",
                                                                                  "time0", "ring_size"}  # fmt: skip
        assert from_fields(**numbers) == config
    assert from_fields(**fields(SwitchConfig.Forwarding)) is SwitchConfig.Forwarding


def test_an_unknown_code_is_a_one_line_error():
    with pytest.raises(
        ValueError, match=r"^Vector Engine op code 62 is not a known Vector Engine op code \(0 to 61\)$"
    ):
        codes.OPS.value(62)
    assert codes.OPS.describe(62) == "<unknown Vector Engine op 62>"
    assert codes.OPS.describe(0) == "LogicBinaryOpI32.BitAnd"
    with pytest.raises(ValueError, match="is not a SwitchConfig variant"):
        SWITCH_KINDS.code("Teleport")


def test_every_guard_round_trips_in_nine_bits():
    seen = set()
    for bits in itertools.product(BitReq, repeat=4):
        for negate in (False, True):
            guard = TagGuard(bits, negate)
            field = codes.encode_guard(guard)
            assert 0 <= field < 1 << codes.GUARD_BITS and codes.guard_problem(field) is None
            assert codes.decode_guard(field) == guard
            seen.add(field)
    assert len(seen) == 3**4 * 2 and codes.encode_guard(TagGuard.all()) == codes.encode_guard(None) == 0
    # bit 0 must be set, bit 1 clear, negated: mask 0b0011, value 0b0001, negate
    guard = TagGuard((BitReq.One, BitReq.Zero, BitReq.Ignore, BitReq.Ignore), True)
    assert codes.encode_guard(guard) == 0b1_0001_0011


def test_immediates_are_the_raw_bits_numpy_fills_a_stream_with():
    for value in (0.1, -0.0, float("nan"), float("inf"), 3, -(2**24) - 1, 1e40):
        with np.errstate(over="ignore"):  # 1e40 rounds to inf, as numpy fills a stream with it
            kind, bits = codes.immediate("f32", value)
            filled = np.full((), value, dtype=np.float32)
        assert kind == codes.KINDS.code("f32") and bits == int(filled.view(np.uint32))
        assert codes.from_immediate(kind, bits).tobytes() == filled.tobytes()
    for value in (0, -1, 2**31 - 1, -(2**31)):
        kind, bits = codes.immediate("i32", value)
        assert kind == codes.KINDS.code("i32") and bits == value & 0xFFFFFFFF
        assert codes.from_immediate(kind, bits) == np.int32(value)


def test_operands_round_trip_slot_by_slot():
    group1 = TagGuard.group(1)
    cases = {
        None: [(TagGuard.all(), RF)],
        Stash: [(TagGuard.all(), Stash)],
        2.5: [(TagGuard.all(), np.float32(2.5))],
        (None, 0.5): [(TagGuard.all(), (RF, np.float32(0.5)))],
        (1.0, -2.0): [(TagGuard.all(), (np.float32(1.0), np.float32(-2.0)))],
        Branched.imm(group1, 1.0).rf(TagGuard.all(), RF): [(group1, np.float32(1.0)), (TagGuard.all(), RF)],
        Branched.imm(group1, (2.0, 3.0)).rf(TagGuard.all(), Stash): [
            (group1, (np.float32(2.0), np.float32(3.0))),
            (TagGuard.all(), Stash),
        ],
    }
    for operand, slots in cases.items():
        encoded = codes.encode_operand(operand, F32)
        assert len(encoded["operand"]) == len(encoded["operand_bits"]) == 2 * len(encoded["operand_guard"])
        decoded = codes.decode_operand(**encoded)
        assert [guard for guard, _ in decoded] == [guard for guard, _ in slots]
        for (_, got), (_, want) in zip(decoded, slots, strict=True):
            assert repr(got) == repr(want) and type(got) is type(want)
    (_, value), = codes.decode_operand(**codes.encode_operand(-7, I32))  # fmt: skip
    assert value == np.int32(-7) and value.dtype == np.int32


def test_tag_modes_round_trip_with_their_boundaries_typed():
    mode = TagMode.Comparison((Cmp.Less(-1.5), Cmp.Equal(3), Cmp.GreaterUnsigned(2**40), Cmp.True_))
    decoded = codes.decode_tag(**codes.encode_tag(mode))
    assert [c.kind for c in decoded.cmps] == ["Less", "Equal", "GreaterUnsigned", "True"]
    less, equal, huge, _ = decoded.cmps
    assert less.value == np.float32(-1.5) and isinstance(less.value, np.float32)  # an f32 boundary stays a float
    assert equal.value == 3 and type(equal.value) is int  # an int boundary stays an int (i32 streams need one)
    assert huge.value == np.float32(2**40)  # beyond i32, the exact f32 it equals
    assert codes.decode_tag(**codes.encode_tag(TagMode.Zero)) == TagMode.Zero
    with pytest.raises(ValueError, match="neither an i32 nor an exact f32"):
        codes.encode_tag(TagMode.Comparison((Cmp.Less(2**40 + 1), Cmp.True_, Cmp.True_, Cmp.True_)))


def test_the_simulator_parses_no_config_value_from_text():
    """Issue 34: the simulator decodes numbers; the text readers of values are the vISA reader's alone."""
    import re
    from pathlib import Path

    import furiosa_opt.sim

    for path in Path(furiosa_opt.sim.__file__).parent.glob("*.py"):
        source = path.read_text()
        for reader in ("compiler.literals", "parse_op", "literal(", "parse_switch_config"):
            assert reader not in source, f"{path.name} uses {reader}"
        assert not re.search(r"dtype_by_name\(config", source), f"{path.name} reads a config's dtype by name"
