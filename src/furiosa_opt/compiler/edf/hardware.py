"""What an EDF's numbers may be, checked against `arch` before the runtime allocates anything: the device and
axes, each buffer within its memory, each table entry in DRAM, every DMA walk, sequencer and engine chain
within the hardware's limits and its buffers' address spaces, and no text a parser would evaluate."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.edf.schema import CONTEXTS, Malformed
from furiosa_opt.compiler.edf.streams import loop_of, offset_ranges
from furiosa_opt.compiler.lir import CHIP_STRIDE, DM_BASE
from furiosa_opt.configs import records
from furiosa_opt.dtypes import DTypeError, dtype_by_name
from furiosa_opt.files import axis_problem, expression_problem, identity_problem
from furiosa_opt.stages import ENDS

MEMORIES = ("dram", "sram", "trf", "vrf")
COMMAND_KINDS = ("dma", "exec", "memset", "indirect", "pcopy", "sync")
TENSOR_KINDS = ("hbm", "view", "view_mut")
# A DMA walk's loops: at most 6 inside a slice (lower/addresses.py), the chip, cluster and slice loops of each
# side, and the splits of loops longer than `max_entry_iterations`; compiled kernels use up to 7. A bound of
# this reader, not a hardware number: it keeps every walk a numpy view (at most 64 dimensions).
MAX_DESCRIPTOR_LOOPS = 16
_REGIONS = {"trf": ("full", "first_half", "second_half")}
_PER_SLICE = {"sram": RNGD.dm_bytes_per_slice, "trf": RNGD.trf_capacity_bytes, "vrf": RNGD.vrf_bytes_per_slice}
_SLICES = RNGD.clusters_per_chip * RNGD.slices_per_cluster
# The walk each kind of command needs (a config that must not be nil) and its fewest inputs and outputs.
_NEEDS = {"dma": ("dma", 1, 1), "pcopy": ("dma", 1, 1), "memset": ("fill", 0, 1), "indirect": ("indirect", 2, 1)}


def _check_expressions(body: dict) -> None:
    """Every mapping a parser will read (buffer and table levels, engine attributes' text) is one a
    compiler prints: no `{…}` Python escape, no special name, no string (`files.expression_problem`)."""
    texts = [(f"body.buffers[{i}].levels", b["levels"]) for i, b in enumerate(body["buffers"])]
    texts += [(f"body.{t}[{i}].levels", x["levels"]) for t in ("arguments", "outputs") for i, x in enumerate(body[t])]
    for where, strings in texts:
        for text in strings:
            problem = expression_problem(text)
            if problem is not None:
                raise Malformed(f"{where}: {text[:40]!r} {problem}")


def _check_engines(command: dict, bad: Callable[[str, str], Malformed]) -> None:
    """A Tensor Unit command starts at its fetch (with a fetch sequencer), only its last stage may end the
    pipeline (`stages.ENDS`), every config is exactly its stage's record (`configs.records.problem`: each
    declared field present and within its width, nothing else, the layout numbers consistent and every
    code one its stage runs) and a register-file port names one of the command's inputs. Whether the
    stages may follow one another is the simulator's check (a fault naming the command), as it is the
    language's."""
    engines = command["engines"]
    if command["fetch"] is None or not engines or engines[0]["stage"] != "fetch":
        raise bad(".engines", "a Tensor Unit command starts with its `fetch` stage and has a fetch sequencer")
    if engines[-1]["stage"] in ("commit", "commit_view") and command["commit"] is None:
        raise bad(".commit", f"a pipeline that ends in `{engines[-1]['stage']}` has a commit sequencer")
    for k, config in enumerate(engines[:-1]):
        if config["stage"] in ENDS:
            raise bad(f".engines[{k}].stage", f"`{config['stage']}` ends a pipeline; it can only be the last stage")
    for k, config in enumerate(engines):
        found = records.problem(config)
        if found is not None:
            raise bad(f".engines[{k}].{found[0]}", found[1])
        if config.get("rf", -1) >= len(command["inputs"]):
            raise bad(f".engines[{k}].rf", f"input {config['rf']}, the command reads {len(command['inputs'])}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _dtype(name: str, where: str) -> None:
    try:
        dtype_by_name(name)
    except DTypeError:
        raise Malformed(f"{where}: unknown element type {name!r}") from None


def footprint(memory: str, size: int, chip: int) -> int:
    """The bytes a buffer of `size` spans on the device: a DRAM buffer's total, a per-slice buffer's in
    every slice."""
    return size if memory == "dram" else size * _SLICES * chip


def address_space(memory: str, chip: int) -> tuple[int, int]:
    """[low, high) of a memory's virtual byte addresses (docs/lir.md, "Addresses"): DRAM from 0 and DM from
    DM_BASE, chip c at c·CHIP_STRIDE; a TRF or VRF from 0 to its per-slice capacity."""
    if memory == "dram":
        return 0, chip * CHIP_STRIDE
    if memory == "sram":
        return DM_BASE, DM_BASE + chip * CHIP_STRIDE
    return 0, _PER_SLICE[memory]


def check_hardware(body: dict) -> None:
    """Every number against `arch`: the device, the axes, each buffer within its memory's capacity, each
    table entry in DRAM, and every command's walk (see `_check_command`)."""
    chip, pe = body["device"]["chip"], body["device"]["pe"]
    if chip < 1:
        raise Malformed(f"body.device.chip: {chip} chips; a kernel runs on at least one")
    if pe not in RNGD.pe_counts:
        raise Malformed(f"body.device.pe: {pe} PEs; a kernel runs on {', '.join(map(str, RNGD.pe_counts))} per chip")
    problem = identity_problem(body["identity"])
    if problem is not None:
        raise Malformed(f"body.identity: {problem}")
    seen: set[str] = set()
    for i, (name, size) in enumerate(body["axes"]):
        problem = axis_problem(name, size)
        if problem is not None:
            raise Malformed(f"body.axes[{i}]: {problem}")
        if name in seen:
            raise Malformed(f"body.axes[{i}]: axis {name} is declared twice")
        seen.add(name)
    hbm = chip * RNGD.hbm_bytes_per_chip
    for i, b in enumerate(body["buffers"]):
        where, memory = f"body.buffers[{i}]", b["memory"]
        if memory not in MEMORIES:
            raise Malformed(f"{where}.memory: {memory!r} is not one of {', '.join(MEMORIES)}")
        _dtype(b["dtype"], f"{where}.dtype")
        if b["region"] not in _REGIONS.get(memory, ("",)):
            raise Malformed(f"{where}.region: {b['region']!r} is not a region of {memory}")
        if b["address"] < 0 or b["bytes"] < 0:
            raise Malformed(f"{where}: address {b['address']} and size {b['bytes']} must not be negative")
        if b["slots"] not in (1, 2) or (b["slots"] == 2 and memory != "sram"):
            raise Malformed(f"{where}.slots: {b['slots']}; a buffer has 1 slot, or 2 in DM (a value a loop carries)")
        capacity = hbm if memory == "dram" else _PER_SLICE[memory]
        if b["address"] + b["bytes"] * b["slots"] > capacity:
            room = f"HBM of {chip} chip(s)" if memory == "dram" else f"{memory.upper()} of a slice"
            raise Malformed(
                f"{where}.bytes: {b['bytes']} bytes at {b['address']:#x} do not fit the {capacity} bytes of {room}"
            )
        if not 1 <= b["chips"] <= (chip if memory == "dram" else 1):
            spans = f"1 to {chip} chips" if memory == "dram" else "1 chip (it is per slice)"
            raise Malformed(f"{where}.chips: {b['chips']}; a {memory} buffer spans {spans}")
        if memory == "dram" and not b["levels"]:
            raise Malformed(f"{where}.levels: a DRAM buffer needs its chip level")
        if memory != "dram" and len(b["levels"]) < 4:
            raise Malformed(f"{where}.levels: a {memory} buffer has chip, cluster, slice and element levels")
    dram = sum(b["bytes"] for b in body["buffers"] if b["memory"] == "dram")
    if dram > hbm:
        raise Malformed(f"body.buffers: the DRAM buffers take {dram} bytes, the HBM of {chip} chip(s) holds {hbm}")
    buffers = {b["name"]: b for b in body["buffers"]}
    for table in ("arguments", "outputs"):
        for i, t in enumerate(body[table]):
            where, buffer = f"body.{table}[{i}]", buffers[t["buffer"]]
            kinds = TENSOR_KINDS if table == "arguments" else ("hbm",)
            if t["kind"] not in kinds:
                raise Malformed(f"{where}.kind: {t['kind']!r} is not one of {', '.join(kinds)}")
            _dtype(t["dtype"], f"{where}.dtype")
            if buffer["memory"] != "dram":
                raise Malformed(
                    f"{where}.buffer: {t['buffer']} is in {buffer['memory']}; the table's tensors are in DRAM"
                )
            if not 0 <= t["bytes"] <= buffer["bytes"]:
                raise Malformed(f"{where}.bytes: {t['bytes']} bytes, its buffer {t['buffer']} holds {buffer['bytes']}")
    loops = loop_of(body)
    for context in CONTEXTS:
        for i, command in enumerate(body["streams"][context]):
            moves = offset_ranges(command, loops.get(command["index"]))
            _check_command(command, f"body.streams.{context}[{i}]", buffers, chip, moves)
    _check_expressions(body)


def _check_command(
    command: dict, where: str, buffers: dict[str, dict], chip: int, moves: dict[str, tuple[int, int]]
) -> None:
    """A command's kind and the configs it needs; every DMA walk (a descriptor, a memset's fill, a gather or
    scatter) within the loop and packet limits, inside its memories' address spaces, and moving no more
    bytes than its destination spans; every sequencer within the entry limits, based in DM."""
    kind = command["kind"]
    label = f"command {command['index']} ({command['opcode']})"

    def bad(field: str, problem: str) -> Malformed:
        return Malformed(f"{where}{field}: {label}: {problem}")

    if kind not in COMMAND_KINDS:
        raise bad(".kind", f"{kind!r} is not one of {', '.join(COMMAND_KINDS)}")
    if kind != "sync" and command["waits"]:
        raise bad(".waits", "only a sync waits")
    if kind == "exec":
        if not command["inputs"] or not command["outputs"]:
            raise bad("", "a Tensor Unit command reads at least one buffer and writes one")
        _check_engines(command, bad)
    elif command["engines"]:
        raise bad(".engines", f"a {kind} command has no engines")
    if kind in _NEEDS:
        config, inputs, outputs = _NEEDS[kind]
        if command[config] is None:
            raise bad(f".{config}", f"a {kind} command needs its `{config}` walk")
        if len(command["inputs"]) < inputs or len(command["outputs"]) < outputs:
            raise bad("", f"a {kind} command reads at least {inputs} buffer(s) and writes at least {outputs}")
    walk = {"dma": command["dma"], "fill": command["fill"], "indirect": command["indirect"]}
    for name, config in walk.items():
        if config is None:
            continue
        if kind not in _NEEDS or _NEEDS[kind][0] != name:
            raise bad(f".{name}", f"a {kind} command has no `{name}` walk")
        target = buffers[command["outputs"][0]]
        source = buffers[command["inputs"][0]] if command["inputs"] else target
        loops = config["loops"]
        if len(loops) > MAX_DESCRIPTOR_LOOPS:
            raise bad(f".{name}.loops", f"{len(loops)} loops; a walk has at most {MAX_DESCRIPTOR_LOOPS}")
        span = max(address_space(memory, chip)[1] for memory in ("dram", "sram"))
        for k, loop in enumerate(loops):
            if not 0 <= loop["size"] <= RNGD.max_entry_iterations:
                raise bad(
                    f".{name}.loops[{k}].size",
                    f"{loop['size']} iterations; a DMA loop runs 0 to {RNGD.max_entry_iterations} times",
                )
            if max(abs(loop["src"]), abs(loop["dst"])) >= span:
                raise bad(
                    f".{name}.loops[{k}]", f"a stride of {loop['src']} or {loop['dst']} bytes leaves every memory"
                )
        if not 0 <= config["packet"] <= RNGD.dma_max_packet_bytes:
            raise bad(f".{name}.packet", f"{config['packet']} bytes; a packet is 0 to {RNGD.dma_max_packet_bytes}")
        moved = math.prod(loop["size"] for loop in loops) * config["packet"]
        spans = footprint(target["memory"], target["bytes"], chip)
        if moved > spans:
            raise bad(f".{name}.loops", f"moves {moved} bytes into {target['name']}, which spans {spans} on the device")
        if name == "fill":
            if not config["pattern"] or not all(0 <= byte <= 255 for byte in config["pattern"]):
                raise bad(".fill.pattern", "a fill pattern is one or more bytes (0 to 255)")
            strides = [loop["dst"] for loop in loops]
            _reach(bad, ".fill.base", config["base"], strides, config, target, chip, moves.get("fill.base", (0, 0)))
            continue
        spread = {"src": (0, 0), "dst": (0, 0)}
        if name == "indirect":
            _check_indirect(bad, config, buffers[command["inputs"][1]], chip)
            rows = (0, max(0, config["rows"] - 1) * config["row_stride"])
            offsets = (min(config["offsets"], default=0), max(config["offsets"], default=0))
            indexed = config["indexed"]
            spread = {indexed: rows, ("dst" if indexed == "src" else "src"): offsets}
        for side, buffer in (("src", source), ("dst", target)):
            strides = [loop[side] for loop in loops]
            low, high = moves.get(f"{name}.{side}_base", (0, 0))
            reach = (spread[side][0] + low, spread[side][1] + high)
            _reach(bad, f".{name}.{side}_base", config[f"{side}_base"], strides, config, buffer, chip, reach)
    for side in ("fetch", "commit"):
        sequencer = command[side]
        if sequencer is None:
            continue
        if kind != "exec":
            raise bad(f".{side}", f"a {kind} command has no {side} sequencer")
        entries = sequencer["time"] + sequencer["packet"]
        if len(entries) > RNGD.max_sequencer_entries:
            raise bad(f".{side}", f"{len(entries)} entries; a sequencer table holds {RNGD.max_sequencer_entries}")
        if len(sequencer["interleave"]) > 2:
            raise bad(f".{side}.interleave", "a pair-mode fetch selects between two tensors")
        low, high = address_space("sram", chip)
        for k, entry in enumerate(entries):
            if abs(entry["stride"]) >= high - low:
                raise bad(f".{side}.entries[{k}].stride", f"{entry['stride']} bytes leaves DM")
            if not 0 <= entry["size"] <= RNGD.max_entry_iterations or entry["memory"] not in (0, 1):
                raise bad(
                    f".{side}.entries[{k}]",
                    f"size {entry['size']} in memory {entry['memory']}; an entry runs 0 to "
                    f"{RNGD.max_entry_iterations} times in memory 0 or 1",
                )
        if sequencer["access"] not in RNGD.fetch_read_bytes:
            raise bad(f".{side}.access", f"{sequencer['access']} bytes; an access is one of {RNGD.fetch_read_bytes}")
        if buffers[sequencer["buffer"]]["memory"] != "sram":
            raise bad(f".{side}.buffer", f"{sequencer['buffer']} is not in DM; a sequencer walks DM")
        paths = [f"{side}.base", *(f"{side}.interleave.{k}" for k in range(len(sequencer["interleave"])))]
        for path, base in zip(paths, (sequencer["base"], *sequencer["interleave"]), strict=True):
            least, most = moves.get(path, (0, 0))
            if not low <= base + least <= base + most < high:
                raise bad(
                    f".{side}.base", f"address {base:#x} (+{least} to {most}) is outside DM ({low:#x} to {high:#x})"
                )


def _check_indirect(bad: Callable[[str, str], Malformed], config: dict, index: dict, chip: int) -> None:
    if config["indexed"] not in ("src", "dst"):
        raise bad(".indirect.indexed", f"{config['indexed']!r} is not `src` (a gather) or `dst` (a scatter)")
    if config["divisor"] < 1 or config["rows"] < 0:
        raise bad(".indirect", f"divisor {config['divisor']} and rows {config['rows']}: a positive divisor, rows >= 0")
    if len(config["entries"]) != len(config["offsets"]):
        raise bad(".indirect.offsets", f"{len(config['offsets'])} offsets for {len(config['entries'])} index cells")
    low, high = address_space(index["memory"], chip)
    for k, entry in enumerate(config["entries"]):
        if not low <= entry <= high - 4:
            raise bad(f".indirect.entries[{k}]", f"address {entry:#x} is outside {index['memory']}")


def _reach(
    bad: Callable[[str, str], Malformed],
    field: str,
    base: int,
    strides: list[int],
    config: dict,
    buffer: dict,
    chip: int,
    spread: tuple[int, int] = (0, 0),
) -> None:
    """The lowest and highest byte a walk visits from `base` (plus `spread`, a gather's rows or offsets) lie
    in its buffer's memory; whether they stay inside the buffer itself is the simulator's check, which
    names the first address outside."""
    sizes = [loop["size"] for loop in config["loops"]]
    if 0 in sizes or config["packet"] == 0:
        return
    low = base + spread[0] + sum(min(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    high = base + spread[1] + sum(max(0, (n - 1) * s) for n, s in zip(sizes, strides, strict=True))
    high += config["packet"] - 1
    start, end = address_space(buffer["memory"], chip)
    if low < start or high >= end:
        raise bad(
            field,
            f"the walk reaches {low:#x} to {high:#x}, outside {buffer['memory']} ({start:#x} to {end:#x}) of "
            f"{buffer['name']}",
        )
