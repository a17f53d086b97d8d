"""The EDF body's shape: every key and type, exactly (docs/edf.md). A schema is `int`, `str`, a dict (a map
with exactly these keys), a one-element list (a list of that), a tuple (a fixed-length list), `Optional(schema)`
or a callable check; `check` walks a decoded body against `BODY` and raises `Malformed` at the first
difference, naming where it is."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from furiosa_opt.files import has_control

CONTEXTS = ("main", "sub", "tdma", "pdma")  # the contexts that own a command stream (views have none)


class Malformed(Exception):
    """A body that is not what this format version writes; the message names where."""


@dataclass(frozen=True)
class Optional:
    schema: Any


def _engine(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise Malformed(f"{where}: expected a map, found {kind(value)}")
    if not isinstance(value.get("stage"), str):
        raise Malformed(f"{where}: an engine config needs a string 'stage'")
    for key, item in value.items():
        if key != "stage" and not (is_int(item) or (isinstance(item, list) and all(map(is_int, item)))):
            raise Malformed(f"{where}.{key}: an engine config's fields are integers or lists of integers")


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
    "dma": Optional(_DMA),
    "fetch": Optional(_SEQUENCER),
    "engines": [_engine],
    "commit": Optional(_SEQUENCER),
    "waits": [int],
    "fill": Optional(_FILL),
    "indirect": Optional(_INDIRECT),
    "guard": Optional([int]),
    "offsets": [(str, [int])],
}
_LEAF = {"name": str, "path": str, "kind": str, "dtype": str, "levels": [str], "bytes": int, "buffer": str}
_BUFFER = {
    "name": str,
    "memory": str,
    "address": int,
    "bytes": int,
    "dtype": str,
    "levels": [str],
    "region": str,
    "slots": int,
    "chips": int,
}
BODY = {
    "arguments": [_LEAF],
    "axes": [(str, int)],
    "buffers": [_BUFFER],
    "cache_key": str,
    "compiler_version": str,
    "device": {"chip": int, "pe": int},
    "identity": str,
    "loops": [{"first": int, "last": int, "count": int, "index": str}],
    "outputs": [_LEAF],
    "schedule": [(int, int, int)],
    "spans": [(int, str)],
    "streams": {context: [_COMMAND] for context in CONTEXTS},
}
BODY_KEYS = tuple(sorted(BODY))


def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def kind(value: Any) -> str:
    return {dict: "a map", list: "a list", str: "a string", int: "an integer", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def check(value: Any, schema: Any, where: str) -> None:
    if schema is int:
        if not is_int(value):
            raise Malformed(f"{where}: expected an integer, found {kind(value)}")
    elif schema is str:
        if not isinstance(value, str):
            raise Malformed(f"{where}: expected a string, found {kind(value)}")
    elif isinstance(schema, Optional):
        if value is not None:
            check(value, schema.schema, where)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            raise Malformed(f"{where}: expected a map, found {kind(value)}")
        missing = [key for key in schema if key not in value]
        if missing:
            raise Malformed(f"{where}: missing key {missing[0]!r}")
        extra = sorted(str(key) for key in value if key not in schema)
        if extra:
            raise Malformed(f"{where}: unknown key {extra[0]!r}")
        for key, item in schema.items():
            check(value[key], item, f"{where}.{key}")
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise Malformed(f"{where}: expected a list, found {kind(value)}")
        for i, item in enumerate(value):
            check(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, tuple):
        if not isinstance(value, list) or len(value) != len(schema):
            raise Malformed(f"{where}: expected a list of {len(schema)} items, found {kind(value)}")
        for i, (item, part) in enumerate(zip(value, schema, strict=True)):
            check(item, part, f"{where}[{i}]")
    elif callable(schema):
        schema(value, where)
    else:  # pragma: no cover — a schema bug
        raise TypeError(f"bad schema {schema!r}")


def check_text(body: dict) -> None:
    """No string of the body holds a control character: names, opcodes and source lines are printed."""

    def walk(value: Any, where: str) -> None:
        if isinstance(value, str):
            if has_control(value):
                raise Malformed(f"{where}: {value[:40]!r} holds a control character")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key, where)
                walk(item, f"{where}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")

    walk(body, "body")
