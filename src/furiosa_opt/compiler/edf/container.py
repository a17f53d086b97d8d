"""The EDF container: the kernel binary stage 3 writes and the NPU runtime loads (docs/edf.md, byte by byte).

A fixed 48-byte header (magic, format version, flags, body length, SHA-256 of the body) followed by a
msgpack body: the kernel identity and device, the cache key, the argument/output table, the placed
buffers, one command stream per context, the debug spans and the optional schedule. Every map is packed
with sorted keys and the body holds no floats, timestamps or paths of its own, so the same LIR gives the
same bytes in every process. `read_edf` refuses anything it cannot fully trust — a short file, another
format version, a checksum mismatch, a body unlike `schema.BODY`, numbers the hardware does not allow
(`hardware`), runs that cannot happen (`streams`) — with an `EdfError` naming the problem.
"""

from __future__ import annotations

import hashlib
import itertools
import numbers
import struct
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import msgpack

from furiosa_opt.compiler.edf.hardware import check_hardware
from furiosa_opt.compiler.edf.schema import BODY, CONTEXTS, Malformed, check, check_text, is_int
from furiosa_opt.compiler.edf.streams import check_loops, check_syncs
from furiosa_opt.compiler.lir import (
    Buffer,
    Command,
    DmaWalk,
    FillWalk,
    IndirectWalk,
    Lir,
    LoopRegion,
    Sequencer,
)
from furiosa_opt.configs.records import config_of
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import identity_problem, printable, write_atomic

MAGIC = b"FOPTEDF\0"
FORMAT_VERSION = 8
HEADER = struct.Struct("<8sHHI32s")  # magic, format version, flags, body length, SHA-256 of the body
_COMMAND_FIELDS = (
    "index",
    "kind",
    "op",
    "opcode",
    "inputs",
    "outputs",
    "dma",
    "fetch",
    "engines",
    "commit",
    "waits",
    "fill",
    "indirect",
    "guard",
    "offsets",
)
_BUFFER_FIELDS = ("name", "memory", "address", "bytes", "dtype", "levels", "region", "slots", "chips")
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)  # what msgpack can encode


class EdfError(FuriosaOptError):
    """An EDF that cannot be written or read: `problem` says what is wrong; `identity` is the kernel when
    known (the LIR being written, or a body that decoded far enough) and `path` the file when there is one."""

    def __init__(self, problem: str, *, identity: str | None = None, path: Path | str | None = None):
        self.problem, self.identity, self.path = problem, identity, path
        where = [str(path)] if path is not None else []
        kernel = [f"kernel {identity}"] if identity else []
        super().__init__(printable(": ".join([*where, *kernel, problem])))  # one line, whatever the file held


@dataclass(frozen=True)
class Leaf:
    """One leaf of the kernel's parameters, or one output: its vISA value name, its path among the
    parameters (`inputs.x`; `return.0` for outputs), its kind (`hbm`, or `view` / `view_mut` for a window
    the runtime binds at launch), element type, mapping per level (outermost first), the bytes it spans
    and the buffer (`T<n>`) that holds it."""

    name: str
    path: str
    kind: str
    dtype: str
    levels: tuple[str, ...]
    bytes: int
    buffer: str


@dataclass(frozen=True)
class Edf:
    """A decoded EDF: its commands, buffers and loops as the LIR's dataclasses, which the cost model and the
    simulator read as stage 2 wrote them."""

    compiler_version: str
    identity: str
    chip: int
    pe: int
    cache_key: str
    arguments: tuple[Leaf, ...]
    axes: tuple[tuple[str, int], ...]  # the axes the mappings in `levels` and engine configs name
    outputs: tuple[Leaf, ...]
    buffers: tuple[Buffer, ...]  # placed (no vISA value or lifetime: `first` is -1 for an argument, else 0)
    streams: dict[str, tuple[Command, ...]]  # context -> commands in issue order, each with its global index
    spans: tuple[tuple[int, str], ...]  # (command index, "file:line")
    schedule: tuple[tuple[int, int, int], ...] = ()  # (command index, start cycle, end cycle)
    loops: tuple[LoopRegion, ...] = ()  # the device loops kept

    def commands(self) -> list[Command]:
        """Every command of every stream, in index (program) order."""
        return sorted((c for stream in self.streams.values() for c in stream), key=lambda c: c.index)


# ---- writing ----------------------------------------------------------------------------------------


def write_edf(
    lir: Lir, *, compiler_version: str, cache_key: str, schedule: list[tuple[int, int, int]] | None = None
) -> bytes:
    """The EDF bytes of `lir`: deterministic — the same LIR, version, key and schedule give the same bytes."""
    identity = lir.kernel

    def refuse(problem: str) -> EdfError:
        return EdfError(f"cannot write EDF: {problem}", identity=identity)

    if not isinstance(compiler_version, str) or not isinstance(cache_key, str):
        raise refuse("compiler_version and cache_key must be strings")
    by_name = {b.name: b for b in lir.buffers}

    def tensor(name: str, role: str, path: str, kind: str) -> dict:
        if name not in by_name:
            raise refuse(f"{role} {name} is not a buffer of the LIR")
        b = by_name[name]
        return {
            "name": b.value,
            "path": path,
            "kind": kind,
            "dtype": b.dtype,
            "levels": list(b.levels),
            "bytes": b.bytes,
            "buffer": b.name,
        }

    if len(lir.leaves) != len(lir.arguments):
        raise refuse(f"{len(lir.arguments)} arguments but {len(lir.leaves)} parameter leaves")

    streams: dict[str, list[dict]] = {context: [] for context in CONTEXTS}
    spans: list[list] = []
    starts = {int(entry[0]): int(entry[1]) for entry in schedule or () if len(entry) == 3 and is_int(entry[0])}
    for command in sorted(lir.commands, key=lambda c: (starts.get(c.index, 0), c.index)):  # the issue order
        if command.context == "none":
            continue
        if command.context not in streams:
            raise refuse(f"command {command.index} ({command.opcode}) is on unknown context {command.context!r}")
        streams[command.context].append(_command(command))
        if command.loc is not None:
            spans.append([command.index, command.loc])
    count = len(lir.commands)
    entries = []
    for entry in schedule or ():
        if len(entry) != 3 or not all(is_int(x) for x in entry):
            raise refuse(f"schedule entry {entry!r} is not (command index, start cycle, end cycle)")
        index, start, end = (int(x) for x in entry)
        if not 0 <= index < count or not 0 <= start <= end:
            raise refuse(f"schedule entry {entry!r}: index outside 0..{count - 1} or not 0 <= start <= end")
        entries.append([index, start, end])
    body = {
        "arguments": [
            tensor(name, "argument", path, kind) for name, (path, kind) in zip(lir.arguments, lir.leaves, strict=True)
        ],
        "axes": [[name, size] for name, size in lir.axes],
        "buffers": [{key: getattr(b, key) for key in _BUFFER_FIELDS} for b in lir.buffers],
        "cache_key": cache_key,
        "compiler_version": compiler_version,
        "device": {"chip": lir.chip, "pe": lir.pe},
        "identity": identity,
        "loops": list(lir.loops),
        "outputs": [tensor(name, "result", f"return.{i}", "hbm") for i, name in enumerate(lir.results)],
        "schedule": sorted(entries),
        "spans": sorted(spans),
        "streams": streams,
    }
    try:
        plain = _plain(body, "body")
        validate(plain)
    except Malformed as error:
        raise refuse(str(error)) from None
    packed = msgpack.packb(plain, use_bin_type=True)
    if len(packed) > 0xFFFF_FFFF:
        raise refuse(f"the body is {len(packed)} bytes; the header's u32 body length cannot hold it")
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(packed), hashlib.sha256(packed).digest()) + packed


def _command(command: Command) -> dict:
    """A stream command: the LIR command without its context (the stream's key) and location (a span)."""
    return {key: getattr(command, key) for key in _COMMAND_FIELDS}


def _plain(value: Any, where: str) -> Any:
    """`value` as msgpack-ready data with every map's keys sorted: dataclasses become maps, tuples lists,
    str/int subclasses (enums) plain str/int. Floats and other types are refused."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        if not _INT_RANGE[0] <= number <= _INT_RANGE[1]:
            raise Malformed(f"{where}: integer {number} does not fit in 64 bits")
        return number
    if isinstance(value, float):
        raise Malformed(f"{where}: float {value!r} (an EDF holds no floats; encode numbers as ints or strings)")
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f"{where}.{f.name}") for f in sorted(fields(value), key=_name)}
    if isinstance(value, Mapping):
        bad = [key for key in value if not isinstance(key, str)]
        if bad:
            raise Malformed(f"{where}: map key {bad[0]!r} is not a string")
        return {str.__str__(key): _plain(value[key], f"{where}.{key}") for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise Malformed(f"{where}: cannot encode a value of type {type(value).__name__}")


def _name(f: Any) -> str:
    return f.name


# ---- reading ----------------------------------------------------------------------------------------


def read_edf(data: bytes) -> Edf:
    """Decode and validate an EDF. Refuses, with an `EdfError` naming the problem: a short or truncated
    file, another magic or format version, a checksum mismatch, a body that is not exactly this version's."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"read_edf expects bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) < HEADER.size:
        if not MAGIC.startswith(data[: len(MAGIC)]):
            raise EdfError("not an EDF file (bad magic)")
        raise EdfError(f"truncated EDF: {len(data)} bytes, shorter than the {HEADER.size}-byte header")
    magic, version, flags, length, digest = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise EdfError("not an EDF file (bad magic)")
    body = data[HEADER.size :]
    if version != FORMAT_VERSION:
        raise EdfError(
            f"EDF format version {version} is not supported by this build (expects {FORMAT_VERSION}); "
            "recompile it with `furiosa-opt compile`",
            identity=_guess_identity(body),
        )
    if flags != 0:
        raise EdfError(f"malformed EDF: header flags are {flags:#06x}, this build knows none (expects 0)")
    if len(body) < length:
        raise EdfError(f"truncated EDF: the header declares {length} body bytes, the file holds {len(body)}")
    if len(body) > length:
        raise EdfError(f"corrupted EDF: {len(body) - length} bytes after the {length}-byte body the header declares")
    if hashlib.sha256(body).digest() != digest:
        raise EdfError("corrupted EDF: checksum mismatch (the body's SHA-256 differs from the header's)")
    try:
        decoded = msgpack.unpackb(body, raw=False, use_list=True, strict_map_key=True)
    except Exception as error:  # msgpack raises several unrelated types on bad input
        raise EdfError(f"malformed EDF: the body is not valid msgpack ({type(error).__name__}: {error})") from None
    identity = decoded.get("identity") if isinstance(decoded, dict) else None
    identity = identity if identity_problem(identity) is None else None  # a name fit to print, or none
    try:
        validate(decoded)
    except Malformed as error:
        raise EdfError(f"malformed EDF: {error}", identity=identity) from None
    spans = dict(decoded["spans"])
    arguments = {t["buffer"] for t in decoded["arguments"]}
    return Edf(
        compiler_version=decoded["compiler_version"],
        identity=decoded["identity"],
        chip=decoded["device"]["chip"],
        pe=decoded["device"]["pe"],
        cache_key=decoded["cache_key"],
        arguments=tuple(_leaf(t) for t in decoded["arguments"]),
        axes=tuple((name, size) for name, size in decoded["axes"]),
        outputs=tuple(_leaf(t) for t in decoded["outputs"]),
        buffers=tuple(_buffer(b, b["name"] in arguments) for b in decoded["buffers"]),
        streams={
            context: tuple(_command_of(c, context, spans.get(c["index"])) for c in decoded["streams"][context])
            for context in CONTEXTS
        },
        spans=tuple((index, loc) for index, loc in decoded["spans"]),
        schedule=tuple((index, start, end) for index, start, end in decoded["schedule"]),
        loops=tuple(LoopRegion(**loop) for loop in decoded["loops"]),
    )


def _buffer(record: dict, argument: bool) -> Buffer:
    placed = {key: record[key] for key in ("address", "bytes", "region", "slots", "chips")}
    return Buffer(record["name"], "", record["memory"], record["dtype"], list(record["levels"]),
                  first=-1 if argument else 0, last=-1, **placed)  # fmt: skip


def _command_of(record: dict, context: str, loc: str | None) -> Command:
    """A stream command as the LIR dataclass, on its stream's context and at its span's source line."""

    def walk(kind: type, key: str) -> object:
        return None if record[key] is None else kind.from_dict(record[key])

    return Command(
        record["index"],
        context,
        record["kind"],
        record["op"],
        record["opcode"],
        loc,
        list(record["inputs"]),
        list(record["outputs"]),
        walk(DmaWalk, "dma"),
        walk(Sequencer, "fetch"),
        [config_of(config) for config in record["engines"]],
        walk(Sequencer, "commit"),
        list(record["waits"]),
        walk(FillWalk, "fill"),
        walk(IndirectWalk, "indirect"),
        None if record["guard"] is None else list(record["guard"]),
        [(path, list(program)) for path, program in record["offsets"]],
    )


def _leaf(record: dict) -> Leaf:
    return Leaf(
        record["name"],
        record["path"],
        record["kind"],
        record["dtype"],
        tuple(record["levels"]),
        record["bytes"],
        record["buffer"],
    )


def _guess_identity(body: bytes) -> str | None:
    """The kernel identity of a body of another format version, if it happens to be readable."""
    try:
        decoded = msgpack.unpackb(body, raw=False)
    except Exception:  # best effort only
        return None
    identity = decoded.get("identity") if isinstance(decoded, dict) else None
    return identity if identity_problem(identity) is None else None


def validate(body: Any) -> None:
    """The body's shape (keys and types, exactly) and its cross references: buffer names unique and every
    named buffer defined, command indices unique, every sync waiting on a command of the file, spans in
    order, schedule entries with start <= end."""
    check(body, BODY, "body")
    names = [b["name"] for b in body["buffers"]]
    if len(set(names)) != len(names):
        raise Malformed("body.buffers: duplicate buffer names")
    known = set(names)

    def defined(name: str, where: str) -> None:
        if name not in known:
            raise Malformed(f"{where}: buffer {name!r} is not in body.buffers")

    for table in ("arguments", "outputs"):
        for i, t in enumerate(body[table]):
            defined(t["buffer"], f"body.{table}[{i}].buffer")
    seen: set[int] = set()
    waited: list[tuple[str, int]] = []
    for context in CONTEXTS:
        for i, command in enumerate(body["streams"][context]):
            where = f"body.streams.{context}[{i}]"
            index = command["index"]
            if index in seen:
                raise Malformed(f"{where}.index: {index} is repeated")
            seen.add(index)
            waited += [(f"{where}.waits", w) for w in command["waits"]]
            for side in ("inputs", "outputs"):
                for name in command[side]:
                    defined(name, f"{where}.{side}")
            for side in ("fetch", "commit"):
                if command[side] is not None:
                    defined(command[side]["buffer"], f"{where}.{side}.buffer")
    for where, wait in waited:
        if wait not in seen:
            raise Malformed(f"{where}: command {wait} is not in any stream")
    indices = [index for index, _ in body["spans"]]
    if any(b <= a for a, b in itertools.pairwise(indices)):
        raise Malformed("body.spans: command indices repeated or out of order")
    for i, (_, start, end) in enumerate(body["schedule"]):
        if not 0 <= start <= end:
            raise Malformed(f"body.schedule[{i}]: start {start} and end {end} are not 0 <= start <= end")
    check_text(body)
    check_loops(body)
    check_hardware(body)
    check_syncs(body)


# ---- files --------------------------------------------------------------------------------------------


def write_edf_file(path: Path, data: bytes) -> None:
    """Write an EDF atomically (files.write_atomic); a failure is an EdfError naming the path."""
    try:
        write_atomic(Path(path), data)
    except OSError as error:
        raise EdfError(f"cannot write EDF: {error.strerror or error}", path=Path(path)) from error


def read_edf_file(path: Path) -> Edf:
    """Read and validate the EDF at `path`; every refusal is an `EdfError` naming the path."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise EdfError("no such EDF file; compile the kernel with `furiosa-opt compile`", path=path) from None
    except OSError as error:
        raise EdfError(f"cannot read EDF: {error.strerror or error}", path=path) from None
    try:
        return read_edf(data)
    except EdfError as error:
        raise EdfError(error.problem, identity=error.identity, path=path) from None
