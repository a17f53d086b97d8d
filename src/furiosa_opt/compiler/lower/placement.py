"""Placement: addresses for every buffer, reusing memory once a buffer is dead.

DM buffers take the same offset in every slice (SPMD), first fit by lifetime within 512 KiB per slice;
TRF tensors take a half of the file when they fit one (so a second tensor can be loaded beside them),
else all of it; VRF tensors first fit within 8 KiB per slice; DRAM buffers are laid out in order,
arguments first, each 256-byte aligned. When the written order of the commands does not fit, the
nearest order that does is used (`place_in_fitting_order`, `order.py`); a kernel that fits in no order
is refused at the line that allocates the buffer that overflows, naming what is live there.
"""

from __future__ import annotations

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import Buffer, Command
from furiosa_opt.compiler.lower.lifetimes import Loops, lifetimes, units
from furiosa_opt.compiler.lower.order import Charge, NoOrder, Unit, fitting_orders
from furiosa_opt.diagnostics import Location, VerifyError

ALIGN = {"sram": RNGD.dma_sram_write_align, "vrf": RNGD.flit_bytes, "dram": RNGD.dma_burst_bytes}
OVERFLOWS = ("dm-overflow", "vrf-overflow", "trf-overflow")  # the refusals another order of commands may avoid


def _aligned(value: int, to: int) -> int:
    return -(-value // to) * to


def place(buffers: list[Buffer], where: dict[str, Location | None]) -> None:
    """Fill in `address` (and `region` for TRF) of every buffer; raise VerifyError on overflow."""
    dram = 0
    for buffer in sorted((b for b in buffers if b.memory == "dram"), key=lambda b: b.first):
        buffer.address = dram
        dram = _aligned(dram + buffer.span, ALIGN["dram"])
    _first_fit([b for b in buffers if b.memory == "sram"], RNGD.dm_bytes_per_slice, "sram", where)
    _first_fit([b for b in buffers if b.memory == "vrf"], RNGD.vrf_bytes_per_slice, "vrf", where)
    _trf_regions([b for b in buffers if b.memory == "trf"], where)


def place_in_fitting_order(
    commands: list[Command],
    loops: Loops,
    buffers: dict[str, Buffer],
    where: dict[str, Location | None],
    results: list[str],
) -> list[Command] | None:
    """Place every buffer with lifetimes in the written order of `commands` (None: it fits), or else in the
    nearest order of the same commands that fits (`order.fitting_orders`), returned with each command's
    index set to its place in it. A kernel is refused only when no order that keeps its data dependences
    fits; the refusal is the written order's, with a note saying so."""
    lifetimes(buffers, commands, loops, results)
    written = _overflow(buffers, where)
    if written is None:
        return None
    pieces = units(commands, loops)
    charges = {name: c for name, b in buffers.items() if (c := charge(b)) is not None}
    held = {name for name in charges if buffers[name].first < 0}
    needs = [
        Unit(frozenset(n for c in u for n in c.inputs), frozenset(n for c in u for n in c.outputs)) for u in pieces
    ]
    try:
        for order in fitting_orders(needs, charges, held, set(results)):
            arranged = [command for k in order for command in pieces[k]]
            for index, command in enumerate(arranged):
                command.index = index
            lifetimes(buffers, arranged, loops, results)
            if _overflow(buffers, where) is None:
                return arranged
    except NoOrder as none:
        why = (
            f"no other order of the kernel's commands was found to fit (the search stopped after {none.steps} steps)"
            if none.exhausted
            else "the kernel's commands fit in no order that keeps their data dependences, the written one included"
        )
        written.notes = (why, *written.notes)
        raise written from None
    raise AssertionError("fitting_orders ends with NoOrder")  # pragma: no cover


def _overflow(buffers: dict[str, Buffer], where: dict[str, Location | None]) -> VerifyError | None:
    """Place every buffer; the refusal if one overflows its memory (which another order may avoid)."""
    try:
        place(list(buffers.values()), where)
    except VerifyError as error:
        if error.rule not in OVERFLOWS:
            raise
        return error
    return None


def charge(buffer: Buffer) -> Charge | None:
    """What `buffer` holds of its memory while live, as the order search counts it (None: DRAM, which
    bounds nothing here): its aligned span of DM or VRF, and of the TRF the half or the whole it takes."""
    if buffer.memory == "trf":
        full = RNGD.trf_capacity_bytes
        return Charge("trf", full // 2 if buffer.bytes <= full // 2 else full, full)
    capacity = {"sram": RNGD.dm_bytes_per_slice, "vrf": RNGD.vrf_bytes_per_slice}.get(buffer.memory)
    return None if capacity is None else Charge(buffer.memory, _aligned(buffer.span, ALIGN[buffer.memory]), capacity)


def _overlaps(a: Buffer, b: Buffer) -> bool:
    return a.first <= b.last and b.first <= a.last


def _first_fit(buffers: list[Buffer], capacity: int, memory: str, where: dict[str, Location | None]) -> None:
    """Buffers in order of their first command; those placed earlier and still live at its first
    command are the ones it may not overlap (the dead are dropped as they expire, so this is linear
    in the number of buffers times the number live at once)."""
    placed: list[Buffer] = []
    for buffer in sorted(buffers, key=lambda b: (b.first, b.name)):
        placed = [b for b in placed if b.last >= buffer.first]
        live = sorted((b for b in placed if _overlaps(b, buffer)), key=lambda b: b.address)
        address = 0
        for other in live:
            if address + buffer.span <= other.address:
                break
            address = max(address, _aligned(other.address + other.span, ALIGN[memory]))
        if address + buffer.span > capacity:
            used = sum(b.span for b in live)
            names = ", ".join(f"{b.name} {b.span} B" for b in live) or "nothing else"
            label = {"sram": "DM", "vrf": "VRF"}[memory]
            raise VerifyError(
                f"{label.lower()}-overflow",
                f"{label} overflows: this tensor needs {buffer.span} bytes per slice while {used} are held by "
                f"live tensors ({names}); {label} holds {capacity} bytes per slice",
                notes=("end a tensor's life earlier (use it last before allocating the next), or tile the work",),
                location=where.get(buffer.name),
            )
        buffer.address = address
        placed.append(buffer)


def _trf_regions(buffers: list[Buffer], where: dict[str, Location | None]) -> None:
    half = RNGD.trf_capacity_bytes // 2
    placed: list[Buffer] = []
    for buffer in sorted(buffers, key=lambda b: (b.first, b.name)):
        placed = [b for b in placed if b.last >= buffer.first]  # the dead never overlap a later buffer
        taken = {b.region for b in placed if _overlaps(b, buffer)}
        if "full" in taken or (buffer.bytes > half and taken):
            raise VerifyError(
                "trf-overflow",
                f"TRF overflows: this tensor needs {buffer.bytes} bytes while the register file "
                f"({RNGD.trf_capacity_bytes} bytes, two halves of {half}) holds live tensors in {sorted(taken)}",
                location=where.get(buffer.name),
            )
        if buffer.bytes > half:
            buffer.region, buffer.address = "full", 0
        else:
            buffer.region = "first_half" if "first_half" not in taken else "second_half"
            if buffer.region in taken:
                raise VerifyError(
                    "trf-overflow", "TRF overflows: both halves hold live tensors", location=where.get(buffer.name)
                )
            buffer.address = 0 if buffer.region == "first_half" else half
        placed.append(buffer)
