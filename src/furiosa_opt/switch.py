"""`SwitchConfig`: which topology the Switch Engine runs on its ring of slices.

The Switch Engine is the one Tensor Unit engine that moves data between slices: every slice of a cluster
has a router on one ring, cut into sub-rings of `ring_size` slices that run in parallel. A named config
states its pattern with the sizes of the input Slice's innermost sub-dimensions (`slice1`, `slice0`) and,
where time is involved, of the input Time's innermost one (`time0`); `CustomBroadcast` lets the compiler
derive the routing from the mappings and only states the ring size. The checks live in
`verify/switch.py`; this module names the configs, prints and reads them as vISA carries them, and gives
them as the numbers of an EDF `switch` config (`fields`, `from_fields`; the variant coded by `KINDS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from furiosa_opt.configs.codes import CodeTable
from furiosa_opt.diagnostics import VerifyError

# each variant's fields, in upstream's order
VARIANTS: dict[str, tuple[str, ...]] = {
    "Forwarding": (),
    "Broadcast01": ("slice1", "slice0", "time0"),
    "Broadcast1": ("slice1", "slice0"),
    "Transpose": ("slice1", "slice0"),
    "InterTranspose": ("slice1", "slice0", "time0"),
    "TransposedBroadcast1": ("slice1", "slice0"),
    "CustomBroadcast": ("ring_size",),
}
KINDS: CodeTable[str] = CodeTable("SwitchConfig variant", tuple(VARIANTS))  # the EDF's `config` field
FIELDS = ("slice1", "slice0", "time0", "ring_size")  # a variant's numbers in the EDF; 0 where it has none


@dataclass(frozen=True, slots=True)
class SwitchConfig:
    """The Switch Engine topology of a `.switch(config, slice, time)` stage (upstream `SwitchConfig`).

    Build one with a variant, keyword or positional, in upstream's field order:

        SwitchConfig.Broadcast1(slice1=4, slice0=64)      # slice1 → Time, a fresh axis takes its place
        SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4)
        SwitchConfig.Transpose(slice1=32, slice0=2)       # swap the two inner Slice sub-dimensions
        SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2)
        SwitchConfig.TransposedBroadcast1(slice1=8, slice0=8)
        SwitchConfig.CustomBroadcast(ring_size=4)         # routing derived from the mappings
        SwitchConfig.Forwarding                           # no exchange (skipping `.switch` is the same)

    Examples:
        >>> SwitchConfig.Broadcast1(slice1=4, slice0=64)   # `.switch(config, slice, time)`
        SwitchConfig.Broadcast1(slice1=4, slice0=64)
        >>> SwitchConfig.Forwarding                       # no exchange
        SwitchConfig.Forwarding
    """

    kind: str
    slice1: int | None = None
    slice0: int | None = None
    time0: int | None = None
    ring_size: int | None = None

    Forwarding: ClassVar[SwitchConfig]

    @staticmethod
    def Broadcast01(slice1: int, slice0: int, time0: int) -> SwitchConfig:
        """Broadcast both inner Slice sub-dimensions: `[s2, s1, s0] | [t1, t0]` → `[s2, X, Y] | [t1, s1, t0, s0]`.

        SwitchConfig.Broadcast01(slice1=2, slice0=2, time0=4)
        """
        return _variant("Broadcast01", slice1=slice1, slice0=slice0, time0=time0)

    @staticmethod
    def Broadcast1(slice1: int, slice0: int) -> SwitchConfig:
        """Broadcast `slice1`, keep `slice0`: `[s2, s1, s0] | [t0]` → `[s2, X, s0] | [t0, s1]`.

        SwitchConfig.Broadcast1(slice1=4, slice0=8)
        """
        return _variant("Broadcast1", slice1=slice1, slice0=slice0)

    @staticmethod
    def Transpose(slice1: int, slice0: int) -> SwitchConfig:
        """Swap the inner Slice sub-dimensions: `[s2, s1, s0] | T` → `[s2, s0, s1] | T`.

        SwitchConfig.Transpose(slice1=32, slice0=2)
        """
        return _variant("Transpose", slice1=slice1, slice0=slice0)

    @staticmethod
    def InterTranspose(slice1: int, slice0: int, time0: int) -> SwitchConfig:
        """Swap `slice1` with a Time sub-dimension of the same size:
        `[s2, s1, s0] | [t2, t1, t0]` → `[s2, t1, s0] | [t2, t0, s1]` (all 256 slices).

        SwitchConfig.InterTranspose(slice1=2, slice0=16, time0=2)
        """
        return _variant("InterTranspose", slice1=slice1, slice0=slice0, time0=time0)

    @staticmethod
    def TransposedBroadcast1(slice1: int, slice0: int) -> SwitchConfig:
        """Transpose, then Broadcast1: `[s2, s1, s0] | [t0]` → `[s2, Y, s1] | [t0, s0]`.

        SwitchConfig.TransposedBroadcast1(slice1=8, slice0=8)
        """
        return _variant("TransposedBroadcast1", slice1=slice1, slice0=slice0)

    @staticmethod
    def CustomBroadcast(ring_size: int) -> SwitchConfig:
        """Any permutation and broadcast of Slice sub-dimensions, Slice → Time moves innermost; the
        compiler derives the routing (a snoop bitmap) and checks `ring_size` against it.

        SwitchConfig.CustomBroadcast(ring_size=4)
        """
        return _variant("CustomBroadcast", ring_size=ring_size)

    @property
    def values(self) -> dict[str, int]:
        """The variant's fields and their values, in upstream's order."""
        return {name: getattr(self, name) for name in VARIANTS[self.kind]}

    @property
    def ring(self) -> int:
        """Slices per sub-ring: `slice1 × slice0` for a named config, 1 for Forwarding, as stated for Custom."""
        if self.kind == "Forwarding":
            return 1
        if self.kind == "CustomBroadcast":
            return self.ring_size
        return self.slice1 * self.slice0

    def __repr__(self) -> str:
        if self.kind == "Forwarding":
            return "SwitchConfig.Forwarding"
        inside = ", ".join(f"{k}={v}" for k, v in self.values.items())
        return f"SwitchConfig.{self.kind}({inside})"

    def __str__(self) -> str:
        """Upstream's spelling, as diagnostics and the schedule show it."""
        if self.kind == "Forwarding":
            return "Forwarding"
        return f"{self.kind} {{ {', '.join(f'{k}: {v}' for k, v in self.values.items())} }}"


def _variant(kind: str, **values: object) -> SwitchConfig:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise VerifyError(
                "switch-config",
                f"SwitchConfig.{kind}: `{name}` must be a non-negative integer, got {value!r}",
            )
    return SwitchConfig(kind, **values)


SwitchConfig.Forwarding = SwitchConfig("Forwarding")

_TEXT = re.compile(r"SwitchConfig\.(?P<kind>\w+)(?:\((?P<fields>[\w=, ]*)\))?\Z")


def parse_switch_config(text: str) -> SwitchConfig:
    """A config from its `repr` (how vISA and EDF carry it); ValueError if the text is not one."""
    match = _TEXT.match(text)
    if not match or match["kind"] not in VARIANTS or (match["fields"] is None) != (match["kind"] == "Forwarding"):
        raise ValueError(f"`{text}` is not a SwitchConfig")
    if match["kind"] == "Forwarding":
        return SwitchConfig.Forwarding
    values = dict(part.strip().split("=", 1) for part in match["fields"].split(",") if part.strip())
    if tuple(values) != VARIANTS[match["kind"]] or not all(v.isascii() and v.isdigit() for v in values.values()):
        raise ValueError(f"`{text}` does not give SwitchConfig.{match['kind']} its fields {VARIANTS[match['kind']]}")
    return SwitchConfig(match["kind"], **{k: int(v) for k, v in values.items()})


def fields(config: SwitchConfig) -> dict[str, int]:
    """The config as an EDF `switch` config's numbers: `config` (the variant's code) and every one of
    `FIELDS`, 0 where the variant has none."""
    return {"config": KINDS.code(config.kind), **{name: config.values.get(name) or 0 for name in FIELDS}}


def from_fields(config: int, **numbers: int) -> SwitchConfig:
    """The config `fields` gave these numbers of (the variant's code, then each of `FIELDS`); ValueError for
    an unknown variant code."""
    kind = KINDS.value(config)
    if kind == "Forwarding":
        return SwitchConfig.Forwarding
    return SwitchConfig(kind, **{name: numbers[name] for name in VARIANTS[kind]})


def from_config(config: object) -> SwitchConfig:
    """The SwitchConfig a typed `switch` engine config (`configs.records`) holds."""
    return from_fields(config.config, **{name: getattr(config, name) for name in FIELDS})
