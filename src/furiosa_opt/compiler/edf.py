"""EDF: the kernel binary stage 3 writes and the NPU runtime loads (documented byte by byte in docs/edf.md).

A fixed 48-byte header (magic, format version, flags, body length, SHA-256 of the body) followed by a
msgpack body: the kernel identity and device, the cache key, the argument/output table, the placed
buffers, one command stream per context, the debug spans and the optional schedule. Every map is packed
with sorted keys and the body holds no floats, timestamps or paths of its own, so the same LIR gives the
same bytes in every process. `read_edf` refuses anything it cannot fully trust — a short file, another
format version, a checksum mismatch, an unexpected key or type — with an `EdfError` naming the problem.
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

from furiosa_opt.compiler.lir import Command, Lir
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import write_atomic

__all__ = [
    "CONTEXTS",
    "FORMAT_VERSION",
    "HEADER",
    "MAGIC",
    "Edf",
    "EdfError",
    "Tensor",
    "read_edf",
    "read_edf_file",
    "write_edf",
    "write_edf_file",
]

MAGIC = b"FOPTEDF\0"
FORMAT_VERSION = 5
HEADER = struct.Struct("<8sHHI32s")  # magic, format version, flags, body length, SHA-256 of the body
CONTEXTS = ("main", "sub", "tdma", "pdma")  # the contexts that own a command stream (views have none)
_BODY_KEYS = (
    "arguments",
    "axes",
    "buffers",
    "cache_key",
    "compiler_version",
    "device",
    "identity",
    "outputs",
    "schedule",
    "spans",
    "streams",
)
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
)
_BUFFER_FIELDS = ("name", "memory", "address", "bytes", "dtype", "levels", "region")
_INT_RANGE = (-(1 << 63), (1 << 64) - 1)  # what msgpack can encode


class EdfError(FuriosaOptError):
    """An EDF that cannot be written or read: `problem` says what is wrong; `identity` is the kernel when
    known (the LIR being written, or a body that decoded far enough) and `path` the file when there is one."""

    def __init__(self, problem: str, *, identity: str | None = None, path: Path | str | None = None):
        self.problem, self.identity, self.path = problem, identity, path
        where = [str(path)] if path is not None else []
        kernel = [f"kernel {identity}"] if identity else []
        super().__init__(": ".join([*where, *kernel, problem]))


@dataclass(frozen=True)
class Tensor:
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
    compiler_version: str
    identity: str
    chip: int
    pe: int
    cache_key: str
    arguments: tuple[Tensor, ...]
    axes: tuple[tuple[str, int], ...]  # the axes the mappings in `levels` and engine configs name
    outputs: tuple[Tensor, ...]
    buffers: tuple[dict, ...]  # name, memory, address, bytes, dtype, levels, region
    streams: dict[str, tuple[dict, ...]]  # context -> commands in issue order, each with its global index
    spans: tuple[tuple[int, str], ...]  # (command index, "file:line")
    schedule: tuple[tuple[int, int, int], ...] = ()  # (command index, start cycle, end cycle)


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
    starts = {int(entry[0]): int(entry[1]) for entry in schedule or () if len(entry) == 3 and _is_int(entry[0])}
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
        if len(entry) != 3 or not all(_is_int(x) for x in entry):
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
        "outputs": [tensor(name, "result", f"return.{i}", "hbm") for i, name in enumerate(lir.results)],
        "schedule": sorted(entries),
        "spans": sorted(spans),
        "streams": streams,
    }
    try:
        plain = _plain(body, "body")
        _validate(plain)
    except _Malformed as error:
        raise refuse(str(error)) from None
    packed = msgpack.packb(plain, use_bin_type=True)
    if len(packed) > 0xFFFF_FFFF:
        raise refuse(f"the body is {len(packed)} bytes; the header's u32 body length cannot hold it")
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(packed), hashlib.sha256(packed).digest()) + packed


def _command(command: Command) -> dict:
    """A stream command: the LIR command without its context (the stream's key) and location (a span)."""
    return {key: getattr(command, key) for key in _COMMAND_FIELDS}


class _Malformed(Exception):
    pass


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
            raise _Malformed(f"{where}: integer {number} does not fit in 64 bits")
        return number
    if isinstance(value, float):
        raise _Malformed(f"{where}: float {value!r} (an EDF holds no floats; encode numbers as ints or strings)")
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f"{where}.{f.name}") for f in sorted(fields(value), key=_name)}
    if isinstance(value, Mapping):
        bad = [key for key in value if not isinstance(key, str)]
        if bad:
            raise _Malformed(f"{where}: map key {bad[0]!r} is not a string")
        return {str.__str__(key): _plain(value[key], f"{where}.{key}") for key in sorted(value)}
    if isinstance(value, list | tuple):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise _Malformed(f"{where}: cannot encode a value of type {type(value).__name__}")


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
    identity = identity if isinstance(identity, str) else None
    try:
        _validate(decoded)
    except _Malformed as error:
        raise EdfError(f"malformed EDF: {error}", identity=identity) from None
    return Edf(
        compiler_version=decoded["compiler_version"],
        identity=decoded["identity"],
        chip=decoded["device"]["chip"],
        pe=decoded["device"]["pe"],
        cache_key=decoded["cache_key"],
        arguments=tuple(_tensor(t) for t in decoded["arguments"]),
        axes=tuple((name, size) for name, size in decoded["axes"]),
        outputs=tuple(_tensor(t) for t in decoded["outputs"]),
        buffers=tuple(decoded["buffers"]),
        streams={context: tuple(decoded["streams"][context]) for context in CONTEXTS},
        spans=tuple((index, loc) for index, loc in decoded["spans"]),
        schedule=tuple((index, start, end) for index, start, end in decoded["schedule"]),
    )


def _tensor(record: dict) -> Tensor:
    return Tensor(
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
    return identity if isinstance(identity, str) else None


# ---- the body schema ----------------------------------------------------------------------------------
# A schema is `int`, `str`, a dict (a map with exactly these keys), a one-element list (a list of that),
# a tuple (a fixed-length list), `_Optional(schema)` or a callable check.


@dataclass(frozen=True)
class _Optional:
    schema: Any


def _engine(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise _Malformed(f"{where}: expected a map, found {_kind(value)}")
    if not isinstance(value.get("stage"), str):
        raise _Malformed(f"{where}: an engine config needs a string 'stage'")
    for key, item in value.items():
        scalar = item is None or isinstance(item, str | bool) or _is_int(item)
        if not isinstance(key, str) or not (scalar or (isinstance(item, list) and all(map(_is_int, item)))):
            raise _Malformed(
                f"{where}.{key}: engine attributes are strings, integers, booleans, null or lists of integers"
            )


_ENTRY = {"size": int, "stride": int, "memory": int}
_SEQUENCER = {"buffer": str, "base": int, "time": [_ENTRY], "packet": [_ENTRY], "access": int, "interleave": [int]}
_LOOPS = [{"size": int, "src": int, "dst": int}]
_DMA = {"src_base": int, "dst_base": int, "packet": int, "loops": _LOOPS}
_FILL = {"base": int, "packet": int, "loops": _LOOPS, "pattern": [int]}
_INDIRECT = {
    "src_base": int,
    "dst_base": int,
    "packet": int,
    "loops": _LOOPS,
    "indexed": str,
    "entries": [int],
    "offsets": [int],
    "divisor": int,
    "rows": int,
    "row_stride": int,
}
_COMMAND = {
    "index": int,
    "kind": str,
    "op": int,
    "opcode": str,
    "inputs": [str],
    "outputs": [str],
    "dma": _Optional(_DMA),
    "fetch": _Optional(_SEQUENCER),
    "engines": [_engine],
    "commit": _Optional(_SEQUENCER),
    "waits": [int],
    "fill": _Optional(_FILL),
    "indirect": _Optional(_INDIRECT),
}
_TENSOR = {"name": str, "path": str, "kind": str, "dtype": str, "levels": [str], "bytes": int, "buffer": str}
_BUFFER = {"name": str, "memory": str, "address": int, "bytes": int, "dtype": str, "levels": [str], "region": str}
_BODY = {
    "arguments": [_TENSOR],
    "axes": [(str, int)],
    "buffers": [_BUFFER],
    "cache_key": str,
    "compiler_version": str,
    "device": {"chip": int, "pe": int},
    "identity": str,
    "outputs": [_TENSOR],
    "schedule": [(int, int, int)],
    "spans": [(int, str)],
    "streams": {context: [_COMMAND] for context in CONTEXTS},
}
assert tuple(sorted(_BODY)) == _BODY_KEYS


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", int: "an integer", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _check(value: Any, schema: Any, where: str) -> None:
    if schema is int:
        if not _is_int(value):
            raise _Malformed(f"{where}: expected an integer, found {_kind(value)}")
    elif schema is str:
        if not isinstance(value, str):
            raise _Malformed(f"{where}: expected a string, found {_kind(value)}")
    elif isinstance(schema, _Optional):
        if value is not None:
            _check(value, schema.schema, where)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            raise _Malformed(f"{where}: expected a map, found {_kind(value)}")
        missing = [key for key in schema if key not in value]
        if missing:
            raise _Malformed(f"{where}: missing key {missing[0]!r}")
        extra = sorted(str(key) for key in value if key not in schema)
        if extra:
            raise _Malformed(f"{where}: unknown key {extra[0]!r}")
        for key, item in schema.items():
            _check(value[key], item, f"{where}.{key}")
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise _Malformed(f"{where}: expected a list, found {_kind(value)}")
        for i, item in enumerate(value):
            _check(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, tuple):
        if not isinstance(value, list) or len(value) != len(schema):
            raise _Malformed(f"{where}: expected a list of {len(schema)} items, found {_kind(value)}")
        for i, (item, part) in enumerate(zip(value, schema, strict=True)):
            _check(item, part, f"{where}[{i}]")
    elif callable(schema):
        schema(value, where)
    else:  # pragma: no cover — a schema bug
        raise TypeError(f"bad schema {schema!r}")


def _validate(body: Any) -> None:
    """The body's shape (keys and types, exactly) and its cross references: buffer names unique and every
    named buffer defined, command indices unique, every sync waiting on a command of the file, spans in
    order, schedule entries with start <= end."""
    _check(body, _BODY, "body")
    names = [b["name"] for b in body["buffers"]]
    if len(set(names)) != len(names):
        raise _Malformed("body.buffers: duplicate buffer names")
    known = set(names)

    def defined(name: str, where: str) -> None:
        if name not in known:
            raise _Malformed(f"{where}: buffer {name!r} is not in body.buffers")

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
                raise _Malformed(f"{where}.index: {index} is repeated")
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
            raise _Malformed(f"{where}: command {wait} is not in any stream")
    indices = [index for index, _ in body["spans"]]
    if any(b <= a for a, b in itertools.pairwise(indices)):
        raise _Malformed("body.spans: command indices repeated or out of order")
    for i, (_, start, end) in enumerate(body["schedule"]):
        if not 0 <= start <= end:
            raise _Malformed(f"body.schedule[{i}]: start {start} and end {end} are not 0 <= start <= end")


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
