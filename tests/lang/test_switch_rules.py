"""The Switch Engine's rules (`verify/switch.py`) on mappings alone, and `SwitchConfig` itself.

The CustomBroadcast cases are the `#[cfg(test)] mod custom_broadcast` of upstream
`furiosa-opt-std/src/engine/switch.rs`: every case upstream accepts is accepted here with the ring size
upstream states, and every case upstream rejects (all `Unsequenceable`) is rejected with that kind. The
other refusals take one case per rule code of the module's table, each built from the book's
constraints. Kernels using the engine (and the simulator's ring against the CPU) are in tests/upstream/.
"""

import pytest

from furiosa_opt import SwitchConfig, VerifyError, axes, m
from furiosa_opt.switch import parse_switch_config
from furiosa_opt.verify.switch import check_switch

A, B, C, D, E, P, Q, R, S, X, Y, Z = axes(A=16, B=16, C=8, D=2, E=2, P=4, Q=8, R=8, S=256, X=4, Y=2, Z=2)
Custom = SwitchConfig.CustomBroadcast

ACCEPTED = {  # upstream test name: (InSlice, InTime, OutSlice, OutTime, ring size)
    "identity": ("S", "C", "S", "C", 1),
    "full_permutation": ("A, B", "C", "B % 4, B / 4, A % 4, A / 4", "C", 256),
    "partial_permutation": ("A, B", "C", "A, B % 4, B / 4", "C", 16),
    "three_axis_inner_swap": ("R, Q, P", "C", "R, P, Q", "C", 32),
    "three_axis_outer_swap": ("R, Q, P", "C", "Q, R, P", "C", 256),
    "padded_identity": ("P # 16, Q # 16", "C", "P # 16, Q # 16", "C", 1),
    "padded_full_swap": ("R # 16, Q # 16", "C", "Q # 16, R # 16", "C", 128),
    "padded_full_swap_different_padding": ("R # 16, Q # 16", "C", "Q # 32, R # 8", "C", 128),
    "padded_partial_permutation": ("R # 16, Q # 16", "C", "R # 16, Q # 16 % 4, Q # 16 / 4", "C", 16),
    "broadcast": ("A, B", "C", "A, B / 4, X", "C, B % 4", 4),
    "multi_axis_broadcast": ("A, B", "C", "A / 2, Y, B / 2, Z", "C, A % 2, B % 2", 32),
    "broadcast_with_permutation": ("A, B", "C", "A % 4, A / 4, B / 4, X", "C, B % 4", 256),
    "broadcast_with_inner_permutation": ("R, Q, P", "C", "R, P / 2, Q, Y", "C, P % 2", 32),
    "broadcast_innermost_axis": ("R, Q, P", "C", "R, Q, P / 2, Y", "C, P % 2", 2),
    "non_contiguous_broadcast": ("R, Q, P", "C", "R / 2, Y, Q, P / 2, Z", "C, R % 2, P % 2", 64),
    "full_broadcast": ("A, B", "C", "S", "C, A, B", 256),
    "padded_outer_time": ("A, B", "C # 32", "A, B / 4, X", "C # 32, B % 4", 4),
    "padded_inner_axis_broadcast": ("P # 8, Q # 32", "C", "P # 8, Q # 32 / 4, X", "C, Q # 32 % 4", 4),
    "broadcast_with_padded_outer_axis": ("P # 32, Q", "C", "P # 32, Q / 4, X", "C, Q % 4", 4),
    "padded_both_axes_broadcast": ("P # 16, Q # 16", "C", "P # 16, Q # 16 / 4, X", "C, Q # 16 % 4", 4),
    "padded_time_broadcast": ("P # 8, Q # 32", "C # 16", "P # 8, Q # 32 / 4, X", "C # 16, Q # 32 % 4", 4),
}

UNSEQUENCEABLE = {  # upstream's rejected cases: live input dropped (a partial read or a replaced slot)
    "partial_broadcast_replacement": ("A, B", "C", "A / 2, Y, B / 2, Z", "C, B % 2", 32),
    "broadcast_replace_in_place": ("R, P", "C", "R, X", "C", 4),
    "slice_moved_axis": ("A, B", "C", "A, B / 4, X", "C, B % 4 = 3", 4),
    "slice_with_broadcast": ("A, B", "C", "A / 2, Y, B / 4, X", "C, A % 2, B % 4 = 3", 32),
    "slice_single_axis": ("S", "C", "S / 4, X", "C, S % 4 = 3", 4),
    "slice_padded_broadcast": ("P # 8, Q # 32", "C", "P # 8, Q # 32 / 4, X", "C, Q # 32 % 4 = 3", 4),
}


def switch(config, in_slice, in_time, out_slice, out_time):
    return check_switch(config, m[in_slice], m[in_time], m[out_slice], m[out_time])


@pytest.mark.parametrize("name", ACCEPTED)
def test_upstream_accepted_custom_broadcasts(name):
    *frames, ring = ACCEPTED[name]
    routing = switch(Custom(ring_size=ring), *frames)
    assert routing.ring == ring
    assert routing.sources.shape == (m[frames[2]].size, m[frames[3]].size // m[frames[1]].size)


@pytest.mark.parametrize("name", UNSEQUENCEABLE)
def test_upstream_rejected_custom_broadcasts(name):
    *frames, ring = UNSEQUENCEABLE[name]
    with pytest.raises(VerifyError) as refused:
        switch(Custom(ring_size=ring), *frames)
    assert refused.value.rule == "switch-unsequenceable"
    assert "dropped" in refused.value.message


def test_broadcast_with_a_moved_axis():
    """Upstream's `broadcast_with_moved_axis`: five 2-slice axes, one moved to time, one fresh broadcast."""
    Ma, Mb, Mc, Md, Me, Mx = axes(Ma=2, Mb=2, Mc=2, Md=2, Me=2, Mx=2)
    assert switch(Custom(ring_size=32), "Ma, Mb, Mc, Md, Me", "1", "Me, Mb, Mx, Ma, Md", "Mc").ring == 32


def test_the_routing_is_the_books_bitmap():
    """The book's Example 2 table: output slice 0 and 1 read input slices 0, 1, 16, 17 over the moved steps
    `[A % 2, B % 2]`; output slice 2 reads 2, 3, 18, 19; the last reads 238, 239, 254, 255."""
    routing = switch(Custom(ring_size=32), "A, B", "C", "A / 2, Y, B / 2, Z", "C, A % 2, B % 2")
    assert routing.sources[0].tolist() == [0, 1, 16, 17] == routing.sources[1].tolist()
    assert routing.sources[2].tolist() == [2, 3, 18, 19]
    assert routing.sources[255].tolist() == [238, 239, 254, 255]


def test_partial_axis_extraction_drops_only_padding():
    """The book's Example 3: `C # 4` (C = 3) moves to time as `C`; the dropped fourth value is padding.
    Slicing a live axis instead (`B = 3`) is refused."""
    Pa, Pb, Pc, Pd, Px = axes(Pa=16, Pb=4, Pc=3, Pd=8, Px=4)
    routing = switch(Custom(ring_size=4), "Pa, Pb, Pc # 4", "Pd", "Pa, Pb, Px", "Pd, Pc")
    assert routing.sources[0].tolist() == [0, 1, 2] and routing.sources[5].tolist() == [4, 5, 6]
    with pytest.raises(VerifyError, match="dropped") as refused:
        switch(Custom(ring_size=16), "Pa, Pb, Pc # 4", "Pd", "Pa, Px, Pc # 4", "Pd, Pb = 3")
    assert refused.value.rule == "switch-unsequenceable"


def refusal(config, *frames) -> VerifyError:
    with pytest.raises(VerifyError) as refused:
        switch(config, *frames)
    return refused.value


@pytest.mark.parametrize(
    "config, frames, rule, text",
    [
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, X / 2", "C, B % 4"), "switch-slice-size", "must match"),
        (Custom(ring_size=3), ("A, B", "C", "A, B / 4, X", "C, B % 4"), "switch-ring-not-power-of-two", "got 3"),
        (Custom(ring_size=16), ("A, B", "C", "A, B / 4, X", "C, B % 4"), "switch-ring-mismatch", "ring of 4"),
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, X", "B % 4, C"), "switch-moved-not-innermost", "B % 4"),
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, X", "C, B % 2, B / 2 % 2"), "switch-moved-order", "order"),
        (Custom(ring_size=1), ("S", "C", "S / 8, C", "1"), "switch-slice-from-time", "not InTime"),
        (Custom(ring_size=1), ("S", "C", "S", "C / 2"), "switch-time-not-preserved", "carried"),
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, Y, Y", "C, B % 4"), "switch-broadcast-reused", "Y"),
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, Y # 4", "C, B % 4"), "switch-broadcast-padded", "padded"),
        (Custom(ring_size=4), ("A, B", "C", "A, B / 4, Y #{0} 4", "C, B % 4"), "switch-unwritable-region", "zero hole"),
    ],
)
def test_each_custom_rule(config, frames, rule, text):
    error = refusal(config, *frames)
    assert error.rule == rule and text in error.message, error.message


Sw = SwitchConfig  # the named configs below take their fields positionally, in upstream's order
NAMED = [  # the book's examples: (config, InSlice, InTime, OutSlice, OutTime) over A = 256, B = 64
    (Sw.Broadcast01(2, 2, 4), "S", "B2", "S / 4, Y, Z", "B2 / 4, S / 2 % 2, B2 % 4, S % 2"),
    (Sw.Broadcast1(4, 8), "S", "B2", "S / 32, X, S % 8", "B2, S / 8 % 4"),
    (Sw.Transpose(32, 2), "S", "B2", "S / 64, S % 2, S / 2 % 32", "B2"),
    (Sw.InterTranspose(2, 16, 2), "S", "C", "S / 32, C / 2 % 2, S % 16", "C / 4, C % 2, S / 16 % 2"),
    (Sw.TransposedBroadcast1(8, 8), "S", "B2", "S / 64, C, S / 8 % 8", "B2, S % 8"),
    (Sw.Forwarding, "S", "B2", "S", "B2"),
]  # fmt: skip
B2 = axes(B2=64)


@pytest.mark.parametrize("case", NAMED, ids=[c.kind for c, *_ in NAMED])
def test_the_books_named_configs(case):
    config, *frames = case
    assert switch(config, *frames).ring == config.ring


@pytest.mark.parametrize(
    "config, frames, rule, text",
    [
        (Sw.Broadcast1(0, 8), NAMED[1][1:], "zero-dimension", "greater than 0"),
        (Sw.Broadcast1(3, 8), NAMED[1][1:], "not-power-of-two", "slice1"),
        (Sw.Broadcast1(4, 8), ("P # 12, Q", "B2", "P # 12, Q", "B2"), "not-power-of-two", "slice2"),
        (Sw.Transpose(16, 32), ("Q, P", "B2", "Q, P", "B2"), "slice-not-divisible", "divisible"),
        (Sw.Broadcast01(2, 2, 3), NAMED[0][1:], "time-not-divisible", "split 3"),
        (Sw.InterTranspose(2, 4, 2), ("R, Q", "C", "R, Q", "C"), "all-slices", "256"),
        (Sw.Broadcast1(4, 8), ("S", "B2", "S / 32, X, S % 8", "B2"), "output-mismatch", "OutTime"),
        (Sw.Broadcast1(4, 8), ("S", "B2", "S / 32, S / 8 % 4, S % 8", "B2, S / 8 % 4"), "broadcast-not-new", "carry"),
        (Sw.Broadcast1(4, 8), ("S", "B2", "S / 32, 1 #{!} 4, S % 8", "B2, S / 8 % 4"), "unwritable-region", "bottom"),
        (Sw.Transpose(32, 2), ("S", "B2", "S / 2 % 32, S % 2, S / 64", "B2"), "output-mismatch", "OutSlice"),
    ],
)  # fmt: skip
def test_each_named_rule(config, frames, rule, text):
    error = refusal(config, *frames)
    assert error.rule == f"switch-{rule}" and text in error.message, error.message


def test_a_tile_may_be_padding():
    """MNIST's `Broadcast1 { slice1: 256, slice0: 1 }` fills the slot with a fresh axis and Top padding."""
    K = axes(K=16)
    assert switch(SwitchConfig.Broadcast1(slice1=256, slice0=1), "S", "1", "K, 1 # 16", "S").ring == 256


@pytest.mark.parametrize("config", [c for c, *_ in NAMED] + [Custom(ring_size=4)])
def test_configs_print_and_parse_back(config):
    assert parse_switch_config(repr(config)) == config
    assert repr(config).startswith("SwitchConfig.")


def test_config_values_are_checked_where_written():
    with pytest.raises(VerifyError, match="must be a non-negative integer") as refused:
        SwitchConfig.Broadcast1(slice1=-1, slice0=8)
    assert refused.value.rule == "switch-config"
    with pytest.raises(ValueError, match="not a SwitchConfig"):
        parse_switch_config("SwitchConfig.Broadcast2(slice1=1, slice0=1)")
    with pytest.raises(ValueError, match="fields"):
        parse_switch_config("SwitchConfig.Broadcast1(slice0=1, slice1=1)")
