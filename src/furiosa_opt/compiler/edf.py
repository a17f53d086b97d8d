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
import math
import numbers
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import CHIP_STRIDE, DM_BASE, Command, Lir
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.dtypes import DTypeError, dtype_by_name
from furiosa_opt.files import expression_problem, has_control, identity_problem, printable, write_atomic
from furiosa_opt.mapping import MappingError, axes
from furiosa_opt.scalar import Scalar, parse_scalar
from furiosa_opt.stages import ENDS

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
FORMAT_VERSION = 6
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
    "loops",
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
    "guard",
    "offsets",
)
_BUFFER_FIELDS = ("name", "memory", "address", "bytes", "dtype", "levels", "region", "slots")
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
    loops: tuple[dict, ...] = ()  # first, last (command indices), count, index: the device loops kept


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
        "loops": list(lir.loops),
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
    identity = identity if identity_problem(identity) is None else None  # a name fit to print, or none
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
        loops=tuple(decoded["loops"]),
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
    return identity if identity_problem(identity) is None else None


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
    "guard": _Optional(str),
    "offsets": [(str, str)],
}
_TENSOR = {"name": str, "path": str, "kind": str, "dtype": str, "levels": [str], "bytes": int, "buffer": str}
_BUFFER = {
    "name": str,
    "memory": str,
    "address": int,
    "bytes": int,
    "dtype": str,
    "levels": [str],
    "region": str,
    "slots": int,
}
_BODY = {
    "arguments": [_TENSOR],
    "axes": [(str, int)],
    "buffers": [_BUFFER],
    "cache_key": str,
    "compiler_version": str,
    "device": {"chip": int, "pe": int},
    "identity": str,
    "loops": [{"first": int, "last": int, "count": int, "index": str}],
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
    _check_text(body)
    _check_loops(body)
    _check_hardware(body)
    _check_syncs(body)


# ---- what the text and the hardware allow (before the runtime allocates anything) ----------------------

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
# Engine attributes by what they hold: a mapping `[…]`, a printed value (an op, a mode, a dtype, a number as
# text), or a count. Others may appear (the format allows any scalar); these are the ones engines read.
_MAPPING_ATTRIBUTES = {"axis", "element", "in_slice", "lane", "packet", "slice", "split_time", "tile_time", "time"}
_TEXT_ATTRIBUTES = {"config", "dtype", "guard", "int_width", "mode", "op", "operand", "rf", "zero_point"}
_COUNT_ATTRIBUTES = {"flits", "in_cols", "in_rows", "iterations", "moved", "out_rows", "packets_per_col", "ratio",
                     "ring", "steps", "valid_size"}  # fmt: skip


def _check_text(body: dict) -> None:
    """No string of the body holds a control character: names, opcodes and source lines are printed."""

    def walk(value: Any, where: str) -> None:
        if isinstance(value, str):
            if has_control(value):
                raise _Malformed(f"{where}: {value[:40]!r} holds a control character")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key, where)
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")

    walk(body, "body")


MAX_LOOP_PASSES = 1 << 20  # a reader bound: the passes a kept loop's runtime offsets are checked at
OFFSET_PATHS = ("dma.src_base", "dma.dst_base", "fill.base", "fetch.base", "commit.base", "fetch.interleave.0",
                "fetch.interleave.1")  # fmt: skip


def loop_of(body: dict) -> dict[int, dict]:
    """Each command index in a kept loop's body → that loop."""
    return {i: loop for loop in body["loops"] for i in range(loop["first"], loop["last"] + 1)}


def _check_loops(body: dict) -> None:
    """Kept loops in command order, apart, each over commands of the file with a pass count the reader
    bounds; a guard or runtime offset only inside a loop, reading that loop's index alone, at a config
    address the command has."""
    indices = sorted(c["index"] for stream in body["streams"].values() for c in stream)
    last = -1
    for k, loop in enumerate(body["loops"]):
        where = f"body.loops[{k}]"
        if not last < loop["first"] <= loop["last"] or (indices and loop["last"] > indices[-1]):
            raise _Malformed(f"{where}: commands {loop['first']} to {loop['last']} overlap an earlier loop or the end")
        if not 1 <= loop["count"] <= MAX_LOOP_PASSES:
            raise _Malformed(f"{where}.count: {loop['count']} passes; a kept loop runs 1 to {MAX_LOOP_PASSES} times")
        last = loop["last"]
    loops = loop_of(body)
    for context in CONTEXTS:
        for i, command in enumerate(body["streams"][context]):
            where = f"body.streams.{context}[{i}]"
            loop = loops.get(command["index"])
            texts = [(".guard", command["guard"])] if command["guard"] is not None else []
            for k, (path, text) in enumerate(command["offsets"]):
                texts.append((f".offsets[{k}]", text))
                if path not in OFFSET_PATHS or _config_at(command, path) is None:
                    raise _Malformed(f"{where}.offsets[{k}]: {path!r} is not an address of this command")
            for field, text in texts:
                if loop is None:
                    raise _Malformed(f"{where}{field}: a runtime value outside a kept loop")
                try:
                    reads = parse_scalar(text).indices()
                except (ValueError, RecursionError) as error:
                    raise _Malformed(f"{where}{field}: {error}") from None
                if reads != {loop["index"]: loop["count"]}:
                    raise _Malformed(f"{where}{field}: {text!r} does not read its loop's index {loop['index']}")
                if field == ".guard":
                    _values(parse_scalar(text), loop, f"{where}{field}")


def _config_at(command: dict, path: str) -> Any:
    """The value at a dotted path of the command (`fetch.interleave.0`), or None."""
    value: Any = command
    for key in path.split("."):
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isascii() and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def offset_ranges(command: dict, loop: dict | None) -> dict[str, tuple[int, int]]:
    """The least and greatest runtime offset of each address path over the loop's passes (none: 0)."""
    found: dict[str, tuple[int, int]] = {}
    for path, text in command["offsets"]:
        values = _values(parse_scalar(text), loop, f"command {command['index']}")
        found[path] = (int(values.min()), int(values.max()))
    return found


def _values(scalar: Scalar, loop: dict, where: str) -> np.ndarray:
    """The runtime value on every pass of the loop."""
    try:
        return scalar.on_passes(loop["index"], loop["count"])
    except ZeroDivisionError:
        raise _Malformed(f"{where}: {scalar!r} divides by zero") from None


def _check_expressions(body: dict) -> None:
    """Every mapping and printed value a parser will read (buffer and table levels, engine attributes)
    is one a compiler prints: no `{…}` Python escape, no special name, no string (`files.expression_problem`)."""
    texts = [(f"body.buffers[{i}].levels", b["levels"]) for i, b in enumerate(body["buffers"])]
    texts += [(f"body.{t}[{i}].levels", x["levels"]) for t in ("arguments", "outputs") for i, x in enumerate(body[t])]
    for context in CONTEXTS:
        for i, command in enumerate(body["streams"][context]):
            for k, config in enumerate(command["engines"]):
                strings = [v for v in config.values() if isinstance(v, str)]
                texts.append((f"body.streams.{context}[{i}].engines[{k}]", strings))
    for where, strings in texts:
        for text in strings:
            problem = expression_problem(text)
            if problem is not None:
                raise _Malformed(f"{where}: {text[:40]!r} {problem}")


def _check_engines(command: dict, bad: Callable[[str, str], _Malformed]) -> None:
    """A Tensor Unit command starts at its fetch (with a fetch sequencer), only its last stage may end the
    pipeline (`stages.ENDS`), and its engines' mappings, printed values and counts have the types the
    engines read. Whether the stages may follow one another is the simulator's check (a fault naming the
    command), as it is the language's."""
    engines = command["engines"]
    if command["fetch"] is None or not engines or engines[0]["stage"] != "fetch":
        raise bad(".engines", "a Tensor Unit command starts with its `fetch` stage and has a fetch sequencer")
    for k, config in enumerate(engines[:-1]):
        if config["stage"] in ENDS:
            raise bad(f".engines[{k}].stage", f"`{config['stage']}` ends a pipeline; it can only be the last stage")
    for k, config in enumerate(engines):
        for key, value in config.items():
            if key in _MAPPING_ATTRIBUTES and not (isinstance(value, str) and value[:1] == "[" and value[-1:] == "]"):
                raise bad(f".engines[{k}].{key}", f"{_shown(value)} is not a mapping `[…]`")
            if key in _TEXT_ATTRIBUTES and not isinstance(value, str):
                raise bad(f".engines[{k}].{key}", f"{_shown(value)} is not a printed value (a string)")
            if key in _COUNT_ATTRIBUTES and not (_is_int(value) and 0 <= value <= RNGD.max_entry_iterations):
                raise bad(
                    f".engines[{k}].{key}", f"{_shown(value)} is not a count from 0 to {RNGD.max_entry_iterations}"
                )
        if len(config.get("sources") or ()) > _SLICES * RNGD.max_entry_iterations:
            raise bad(f".engines[{k}].sources", "more routing entries than a switch ring has")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _dtype(name: str, where: str) -> None:
    try:
        dtype_by_name(name)
    except DTypeError:
        raise _Malformed(f"{where}: unknown element type {name!r}") from None


def footprint(buffer: dict, chip: int) -> int:
    """The bytes a buffer spans on the device: a DRAM buffer's total, a per-slice buffer's in every slice."""
    return buffer["bytes"] if buffer["memory"] == "dram" else buffer["bytes"] * _SLICES * chip


def address_space(memory: str, chip: int) -> tuple[int, int]:
    """[low, high) of a memory's virtual byte addresses (docs/lir.md, "Addresses"): DRAM from 0 and DM from
    DM_BASE, chip c at c·CHIP_STRIDE; a TRF or VRF from 0 to its per-slice capacity."""
    if memory == "dram":
        return 0, chip * CHIP_STRIDE
    if memory == "sram":
        return DM_BASE, DM_BASE + chip * CHIP_STRIDE
    return 0, _PER_SLICE[memory]


def _check_hardware(body: dict) -> None:
    """Every number against `arch`: the device, the axes, each buffer within its memory's capacity, each
    table entry in DRAM, and every command's walk (see `_check_command`)."""
    chip, pe = body["device"]["chip"], body["device"]["pe"]
    if chip < 1:
        raise _Malformed(f"body.device.chip: {chip} chips; a kernel runs on at least one")
    if pe not in RNGD.pe_counts:
        raise _Malformed(f"body.device.pe: {pe} PEs; a kernel runs on {', '.join(map(str, RNGD.pe_counts))} per chip")
    problem = identity_problem(body["identity"])
    if problem is not None:
        raise _Malformed(f"body.identity: {problem}")
    seen: set[str] = set()
    for i, (name, size) in enumerate(body["axes"]):
        try:
            axes(**{name: size})
        except MappingError as error:
            raise _Malformed(f"body.axes[{i}]: {error}") from None
        if name in seen:
            raise _Malformed(f"body.axes[{i}]: axis {name} is declared twice")
        seen.add(name)
    hbm = chip * RNGD.hbm_bytes_per_chip
    for i, b in enumerate(body["buffers"]):
        where, memory = f"body.buffers[{i}]", b["memory"]
        if memory not in MEMORIES:
            raise _Malformed(f"{where}.memory: {memory!r} is not one of {', '.join(MEMORIES)}")
        _dtype(b["dtype"], f"{where}.dtype")
        if b["region"] not in _REGIONS.get(memory, ("",)):
            raise _Malformed(f"{where}.region: {b['region']!r} is not a region of {memory}")
        if b["address"] < 0 or b["bytes"] < 0:
            raise _Malformed(f"{where}: address {b['address']} and size {b['bytes']} must not be negative")
        if b["slots"] not in (1, 2) or (b["slots"] == 2 and memory != "sram"):
            raise _Malformed(f"{where}.slots: {b['slots']}; a buffer has 1 slot, or 2 in DM (a value a loop carries)")
        capacity = hbm if memory == "dram" else _PER_SLICE[memory]
        if b["address"] + b["bytes"] * b["slots"] > capacity:
            room = f"HBM of {chip} chip(s)" if memory == "dram" else f"{memory.upper()} of a slice"
            raise _Malformed(
                f"{where}.bytes: {b['bytes']} bytes at {b['address']:#x} do not fit the {capacity} bytes of {room}"
            )
        if memory == "dram" and not b["levels"]:
            raise _Malformed(f"{where}.levels: a DRAM buffer needs its chip level")
        if memory != "dram" and len(b["levels"]) < 4:
            raise _Malformed(f"{where}.levels: a {memory} buffer has chip, cluster, slice and element levels")
    dram = sum(b["bytes"] for b in body["buffers"] if b["memory"] == "dram")
    if dram > hbm:
        raise _Malformed(f"body.buffers: the DRAM buffers take {dram} bytes, the HBM of {chip} chip(s) holds {hbm}")
    buffers = {b["name"]: b for b in body["buffers"]}
    for table in ("arguments", "outputs"):
        for i, t in enumerate(body[table]):
            where, buffer = f"body.{table}[{i}]", buffers[t["buffer"]]
            kinds = TENSOR_KINDS if table == "arguments" else ("hbm",)
            if t["kind"] not in kinds:
                raise _Malformed(f"{where}.kind: {t['kind']!r} is not one of {', '.join(kinds)}")
            _dtype(t["dtype"], f"{where}.dtype")
            if buffer["memory"] != "dram":
                raise _Malformed(
                    f"{where}.buffer: {t['buffer']} is in {buffer['memory']}; the table's tensors are in DRAM"
                )
            if not 0 <= t["bytes"] <= buffer["bytes"]:
                raise _Malformed(f"{where}.bytes: {t['bytes']} bytes, its buffer {t['buffer']} holds {buffer['bytes']}")
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

    def bad(field: str, problem: str) -> _Malformed:
        return _Malformed(f"{where}{field}: {label}: {problem}")

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
        if moved > footprint(target, chip):
            raise bad(
                f".{name}.loops",
                f"moves {moved} bytes into {target['name']}, which spans {footprint(target, chip)} on the device",
            )
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


def _check_indirect(bad: Callable[[str, str], _Malformed], config: dict, index: dict, chip: int) -> None:
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
    bad: Callable[[str, str], _Malformed],
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


def _check_syncs(body: dict) -> None:
    """The streams cannot deadlock: each context issues its commands in order and a sync starts once every
    command it waits for has ended, so the graph of stream order and waits must have no cycle."""
    after: dict[int, list[int]] = {}  # command → the commands that cannot start before it ends
    pending: dict[int, int] = {}  # command → how many commands it still waits on
    where: dict[int, str] = {}
    for context in CONTEXTS:
        stream = body["streams"][context]
        for i, command in enumerate(stream):
            index = command["index"]
            where[index] = f"body.streams.{context}[{i}]"
            before = ([stream[i - 1]["index"]] if i else []) + list(dict.fromkeys(command["waits"]))
            pending[index] = len(before)
            for earlier in before:
                after.setdefault(earlier, []).append(index)
    ready = [index for index, count in pending.items() if count == 0]
    while ready:
        for later in after.get(ready.pop(), ()):
            pending[later] -= 1
            if pending[later] == 0:
                ready.append(later)
    stuck = sorted(index for index, count in pending.items() if count)
    if stuck:
        commands = {c["index"]: c for stream in body["streams"].values() for c in stream}
        sync = next((i for i in stuck if any(w in stuck for w in commands[i]["waits"])), stuck[0])
        waits = [w for w in commands[sync]["waits"] if w in stuck]
        raise _Malformed(
            f"{where[sync]}.waits: command {sync} ({commands[sync]['opcode']}) waits for command "
            f"{waits[0] if waits else '?'}, which cannot end before it starts: the streams deadlock "
            f"({len(stuck)} commands never run)"
        )


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
