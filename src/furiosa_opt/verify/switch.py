"""Rules of the Switch Engine: does `.switch(config, slice, time)` describe what the ring can do?

Upstream checks switches in a closed library (`config_switch`); these rules are re-derived from the book's
switch-engine page and upstream's `SwitchError` kinds, one rule code per kind:

| code | upstream kind | what is wrong |
|---|---|---|
| `switch-slice-size` | SliceSizeMismatch | the switch must keep the slice count |
| `switch-zero-dimension` | ZeroDimension | a config size is 0 |
| `switch-not-power-of-two` | NotPowerOfTwo | slice1, slice0 or the derived slice2 is not a power of two |
| `switch-slice-not-divisible` | SliceNotDivisible | InSlice does not split into `[slice2, slice1, slice0]` |
| `switch-time-not-divisible` | TimeNotDivisible | InTime does not split as the config needs |
| `switch-all-slices` | (the book's InterTranspose rule) | InterTranspose spans all 256 slices |
| `switch-output-mismatch` | OutputMismatch | OutSlice or OutTime is not the config's reassembly of the input |
| `switch-broadcast-not-new` | BroadcastNotNew | a broadcast slot carries an axis the input already has |
| `switch-broadcast-reused` | BroadcastUsedMoreThanOnce | one broadcast axis in two slots |
| `switch-broadcast-padded` | (the book's custom constraint) | a CustomBroadcast axis is padded |
| `switch-unwritable-region` | OutputHasUnwritableRegion | a broadcast lands on a Bottom or Zero hole |
| `switch-slice-from-time` | OutSliceSourcedFromTime | an OutSlice axis comes from InTime |
| `switch-moved-not-innermost` | MovedAxesNotInnermost | a Slice→Time axis is not innermost in OutTime |
| `switch-moved-order` | MovedOrderNotPreserved | Slice→Time axes changed their relative order |
| `switch-time-not-preserved` | InTimeNotPreserved | OutTime does not carry InTime unchanged |
| `switch-unsequenceable` | Unsequenceable | a live input value is dropped (only padding may be) |
| `switch-ring-not-power-of-two` | RingSizeNotPowerOfTwo | the stated ring size |
| `switch-ring-mismatch` | RingSizeMismatch | the stated ring size is not the one the routing needs |

Named configs are checked constructively: the input is cut into the config's components and the output
frames are compared with the reassembly, broadcast slots aside. `CustomBroadcast` is checked digit by
digit, and its routing — which input slice each output slice reads at each moved time step — is derived
here: the compiler records it in the engine config (upstream's snoop bitmap) and the ring size follows.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import pair, split_at
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.expr import shown_pair
from furiosa_opt.mapping.factors import PadKind
from furiosa_opt.mapping.refine import SubDigit, describe_subdigit, refine
from furiosa_opt.mapping.relayout import position_of
from furiosa_opt.stages import register
from furiosa_opt.switch import SwitchConfig


@dataclass(frozen=True)
class Routing:
    """What the lowering records for a switch: the ring size and, for CustomBroadcast, per output slice
    the input slice it reads at each of the `moved` innermost output time steps (-1: nothing, padding)."""

    ring: int
    sources: np.ndarray | None = None  # [out slices, moved steps]


@register("rule", "switch")
def check_switch(
    config: SwitchConfig, in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping
) -> Routing:
    """The config's routing, or a VerifyError naming the first rule the switch breaks."""
    if not isinstance(config, SwitchConfig):
        raise VerifyError("switch-config", f"switch takes a SwitchConfig, got {config!r}")
    if in_slice.size != out_slice.size:
        raise VerifyError(
            "switch-slice-size",
            f"Switch input and output slice sizes must match, got {in_slice.size} and {out_slice.size}",
        )
    if config.kind == "CustomBroadcast":
        return _custom(config, in_slice, in_time, out_slice, out_time)
    if config.kind == "Forwarding":
        _compare("OutSlice", in_slice, out_slice)
        _compare("OutTime", in_time, out_time)
        return Routing(1)
    _named(config, in_slice, in_time, out_slice, out_time)
    return Routing(config.ring)


# ---- named configs --------------------------------------------------------------------------------


def _named(config: SwitchConfig, in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping) -> None:
    s1, s0 = config.slice1, config.slice0
    if any(v == 0 for v in config.values.values()):
        raise VerifyError("switch-zero-dimension", f"All dimensions must be greater than 0, got {config}")
    for axis, value in (("slice1", s1), ("slice0", s0)):
        _power_of_two(axis, value)
    if in_slice.size % (s1 * s0):
        raise VerifyError(
            "switch-slice-not-divisible",
            f"InSlice::SIZE must be divisible by (slice1 * slice0), got InSlice::SIZE {in_slice.size} "
            f"(slice1 {s1}, slice0 {s0})",
        )
    _power_of_two("slice2", in_slice.size // (s1 * s0))
    if config.kind == "InterTranspose" and in_slice.size != RNGD.slices_per_cluster:
        raise VerifyError(
            "switch-all-slices",
            f"InterTranspose spans all {RNGD.slices_per_cluster} slices: slice2 × slice1 × slice0 = {in_slice.size}",
        )
    by = {"Broadcast01": config.time0, "InterTranspose": s1 * (config.time0 or 1)}.get(config.kind, 1)
    if in_time.size % by:
        raise VerifyError(
            "switch-time-not-divisible",
            f"Switch InTime::SIZE must be divisible by the config's time split, got InTime::SIZE {in_time.size} "
            f"(split {by})",
        )
    rest, slice0 = split_at(in_slice, s0)
    slice2, slice1 = split_at(rest, s1)
    if config.kind == "Broadcast01":
        time1, time0 = split_at(in_time, config.time0)
        slots, time = [slice2, s1, s0], [time1, slice1, time0, slice0]
    elif config.kind == "Broadcast1":
        slots, time = [slice2, s1, slice0], [in_time, slice1]
    elif config.kind == "Transpose":
        slots, time = [slice2, slice0, slice1], [in_time]
    elif config.kind == "TransposedBroadcast1":
        slots, time = [slice2, s0, slice1], [in_time, slice0]
    else:  # InterTranspose
        rest, time0 = split_at(in_time, config.time0)
        time2, time1 = split_at(rest, s1)
        slots, time = [slice2, time1, slice0], [time2, time0, slice1]
    _compare_slots(slots, in_slice, in_time, out_slice)
    _compare("OutTime", pair(*time), out_time)


def _power_of_two(axis: str, value: int) -> None:
    if value & (value - 1):
        raise VerifyError("switch-not-power-of-two", f"Switch {axis} must be a power of 2, got {value}")


def _compare(frame: str, expected: Mapping, got: Mapping) -> None:
    if expected != got:
        shown, given = shown_pair(expected, got)
        raise VerifyError("switch-output-mismatch", f"Switch {frame} mismatch: expected {shown}, got {given}")


def _compare_slots(slots: list, in_slice: Mapping, in_time: Mapping, out_slice: Mapping) -> None:
    """OutSlice cut at the slots' sizes: a mapping slot must match, an int slot is a broadcast of that size."""
    shown = ", ".join(str(s) if isinstance(s, Mapping) else f"broadcast({s})" for s in slots)
    mismatch = VerifyError(
        "switch-output-mismatch", f"Switch OutSlice mismatch: expected `[{shown}]`, got `{out_slice}`"
    )
    parts, rest = [], out_slice
    try:
        for slot in reversed(slots[1:]):
            rest, part = split_at(rest, slot if isinstance(slot, int) else slot.size)
            parts.insert(0, part)
    except MappingError:
        raise mismatch from None
    parts.insert(0, rest)
    for slot, part in zip(slots, parts, strict=True):
        if isinstance(slot, Mapping) and slot != part:
            raise mismatch
    for slot, part in zip(slots, parts, strict=True):
        if isinstance(slot, int):
            _check_tile(part, in_slice, in_time)


def _check_tile(tile: Mapping, in_slice: Mapping, in_time: Mapping) -> None:
    """A broadcast slot holds fresh axes (or don't-care padding): no digit of the input frame, no hole
    that must stay unwritten or zero."""
    try:
        ins, times, subs = refine(in_slice.factors, in_time.factors, tile.factors)
    except MappingError as error:
        raise VerifyError(
            "switch-broadcast-not-new", f"Switch broadcast tile `{tile}` overlaps the input axes: {error}"
        ) from None
    carried = {(d.key, d.cut) for d in (*ins, *times)}
    if any((d.key, d.cut) in carried for d in subs):
        raise VerifyError(
            "switch-broadcast-not-new",
            f"Switch broadcast tile `{tile}` must be an axis the input Slice `{in_slice}` / Time `{in_time}` "
            "does not carry",
        )
    _check_writable(tile, tile)


def _check_writable(tile: Mapping, shown: Mapping) -> None:
    for f in tile.factors:
        if f.padded and f.k is not PadKind.TOP:
            raise VerifyError(
                "switch-unwritable-region",
                f"Switch broadcast tile lands on `{shown}`, which has a {f.k.label} hole; only a `Top` hole is "
                "don't-care",
            )


# ---- CustomBroadcast ----------------------------------------------------------------------------------


def _custom(
    config: SwitchConfig, in_slice: Mapping, in_time: Mapping, out_slice: Mapping, out_time: Mapping
) -> Routing:
    try:
        ins, times, outs, out_times = refine(in_slice.factors, in_time.factors, out_slice.factors, out_time.factors)
    except MappingError as error:
        raise VerifyError("switch-unsequenceable", f"Switch read is not sequenceable: {error}") from None
    from_slice = {(d.key, d.cut): d for d in ins}
    from_time = {(d.key, d.cut) for d in times}
    fresh: set[tuple] = set()
    for d in outs:
        key = (d.key, d.cut)
        if key in from_time:
            raise VerifyError(
                "switch-slice-from-time",
                f"Switch OutSlice slot must source from InSlice or a fresh broadcast tile, not InTime; offending "
                f"axis: `{_name(d)}`",
            )
        if key not in from_slice:
            if key in fresh:
                raise VerifyError(
                    "switch-broadcast-reused",
                    f"Switch broadcast tiles both claim `{_name(d)}`; two tiles may not claim one axis",
                )
            fresh.add(key)
            _check_fresh_factor(out_slice, d)
    moved = [d for d in out_times if (d.key, d.cut) in from_slice]
    block = _check_moved(moved, out_times, from_slice, in_time, out_time)
    _check_consumed(ins, [*outs, *moved], in_slice)
    sources = _sources(in_slice, out_slice, block)
    return Routing(_ring(config, sources), sources)


def _name(d: SubDigit) -> str:
    return describe_subdigit(d.key, d.cut, d.count)


def _check_fresh_factor(out_slice: Mapping, d: SubDigit) -> None:
    f = out_slice.factors[d.factor]
    if f.padded and f.k is not PadKind.TOP:
        _check_writable(Mapping((f,)), out_slice)
    if f.padded:
        raise VerifyError(
            "switch-broadcast-padded",
            f"Switch broadcast axis `{_name(d)}` must not be padded in OutSlice `{out_slice}`: its padded "
            "positions would have no defined route",
        )


def _check_moved(moved, out_times, from_slice, in_time: Mapping, out_time: Mapping) -> Mapping:
    """Slice→Time axes sit innermost in OutTime, in their InSlice order, after InTime carried unchanged."""
    first = next((i for i, d in enumerate(out_times) if (d.key, d.cut) in from_slice), len(out_times))
    outer = [d for d in out_times[first:] if (d.key, d.cut) not in from_slice]
    if outer:
        raise VerifyError(
            "switch-moved-not-innermost",
            f"Switch axes moving from input slice to output time must be at the output time innermost positions "
            f"(inner to InTime `{in_time}`); offending moved axis: `{_name(out_times[first])}`",
        )
    strides = [from_slice[(d.key, d.cut)].pos for d in moved]
    for outer_d, inner_d, a, b in zip(moved, moved[1:], strides, strides[1:], strict=False):
        if b > a:
            raise VerifyError(
                "switch-moved-order",
                f"Switch axes moving from input Slice to output Time must preserve their relative order: "
                f"`{_name(inner_d)}` (InSlice stride {b}) wrongly landed inner to `{_name(outer_d)}` (stride {a}); "
                "the larger stride must stay outer",
            )
    carried = block = None
    if out_time.size % in_time.size == 0:
        with contextlib.suppress(MappingError):
            carried, block = split_at(out_time, out_time.size // in_time.size)
    added = [d for d in out_times if block is not None and d.pos < block.size]
    if carried != in_time or any((d.key, d.cut) not in from_slice for d in added):
        raise VerifyError(
            "switch-time-not-preserved",
            f"Switch input Time must be carried to output Time unchanged, and only Slice axes added innermost: "
            f"got InTime `{in_time}`, OutTime `{out_time}`",
        )
    return block


def _check_consumed(ins: list[SubDigit], claims: list[SubDigit], in_slice: Mapping) -> None:
    """Every live input slice value reaches the output; only padding may be left behind."""
    claimed: dict[tuple, int] = {}
    for d in claims:
        claimed[(d.key, d.cut)] = claimed.get((d.key, d.cut), 0) + d.count
    for d in ins:
        if claimed.get((d.key, d.cut), 0) < d.count:
            raise VerifyError(
                "switch-unsequenceable",
                f"Switch read is not sequenceable: live values of `{_name(d)}` in InSlice `{in_slice}` are dropped "
                "(only padding may be left behind)",
            )


def _sources(in_slice: Mapping, out_slice: Mapping, block: Mapping) -> np.ndarray:
    """For each output slice and moved time step, the input slice holding its data (-1 where the output
    is padding): the decoded coordinates of both, looked up in InSlice."""
    slices = evaluate(out_slice.factors, np.arange(out_slice.size, dtype=np.int64))
    steps = evaluate(block.factors, np.arange(block.size, dtype=np.int64))
    shape = (out_slice.size, block.size)
    zero = np.zeros(1, dtype=np.int64)
    names = slices.coords.keys() | steps.coords.keys()
    coords = {n: slices.coords.get(n, zero)[:, None] + steps.coords.get(n, zero)[None, :] for n in names}
    found = position_of(in_slice.factors, coords, shape)
    live = slices.live[:, None] & steps.live[None, :]
    return np.where(live, found, -1)


def _ring(config: SwitchConfig, sources: np.ndarray) -> int:
    """The smallest power-of-two block of slices that holds every output slice with all its sources."""
    out = np.arange(sources.shape[0], dtype=np.int64)[:, None]
    spread = np.where(sources >= 0, out ^ sources, 0)
    ring = 1 << int(spread.max(initial=0)).bit_length()
    stated = config.ring_size
    if stated & (stated - 1) or stated == 0:
        raise VerifyError("switch-ring-not-power-of-two", f"Switch ring size must be a power of 2, got {stated}")
    if stated != ring:
        raise VerifyError(
            "switch-ring-mismatch",
            f"Switch ring size mismatch: the routing needs a ring of {ring} slices, but {stated} was stated",
        )
    return ring
