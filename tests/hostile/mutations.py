"""Hypothesis strategies that damage valid documents the way a hostile or broken file would: replace a
value anywhere in a nested body with an extreme integer, a string holding control characters, a wrong
type; delete or add a key; drop, repeat or reorder a list item. Shared by the EDF, schedule and pyproject
fuzzers (`test_fuzz.py`, `fuzz_simulator.py`)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import msgpack
from hypothesis import strategies as st

from furiosa_opt.compiler.edf import FORMAT_VERSION, HEADER, MAGIC

EDGE_INTS = [0, 1, -1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 255, 256, 4095, 4096, 4097, 65535, 65536, 65537,
             1 << 20, (1 << 31) - 1, 1 << 31, 1 << 32, 1 << 38, 1 << 40, 1 << 48, 10**9, 1 << 60, (1 << 63) - 1,
             -(1 << 63), (1 << 64) - 1, 0x1000_0000, 0x1000_0000 + (4 << 20)]  # fmt: skip
EDGE_TEXT = ["", " ", "T0", "T99", "%0", "dma", "exec", "sync", "memset", "indirect", "pcopy", "main", "tdma",
             "dram", "sram", "trf", "vrf", "full", "i32", "bf16", "i4", "nope", "[A % 8]", "[A / 0]", "[Z]", "[",
             "[A # 99999999999]", "A", "fetch", "commit", "contract_outer", "vector_fxp", "\x1b]0;pwned\x07",
             "\x1b[2J", "a\nb", "../../x", "/tmp/x", "src/k.py:1", "é", "\u202e"]  # fmt: skip

ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers(-(1 << 63), (1 << 64) - 1), st.integers(-9, 300))
texts = st.one_of(st.sampled_from(EDGE_TEXT), st.text(max_size=12))
scalars = st.one_of(ints, texts, st.none(), st.booleans())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                      max_leaves=6)  # fmt: skip


def slots(document: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a nested document, the document's own slot excluded."""
    found, stack = [], [document]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            found.append((node, key))
            stack.append(value)
    return found


@st.composite
def damaged(draw: st.DrawFn, seeds: list[Any], edits: tuple[int, int] = (1, 4)) -> Any:
    """A deep copy of one of `seeds` with a few edits anywhere in it."""
    document = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(*edits))):
        places = slots(document)
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        old = container[key]
        action = draw(st.sampled_from(["replace", "nudge", "delete", "add", "repeat", "swap", "type"]))
        if action == "nudge" and isinstance(old, int) and not isinstance(old, bool):
            container[key] = old + draw(st.sampled_from([-4097, -256, -32, -8, -1, 1, 8, 32, 256, 4096, 1 << 20]))
        elif action == "nudge" and isinstance(old, int):
            container[key] = not old
        elif action == "delete":
            del container[key]
        elif action == "add" and isinstance(container, dict):
            container[draw(texts)] = draw(values)
        elif action == "add" and isinstance(container, list):
            container.insert(key, draw(values))
        elif action == "repeat" and isinstance(container, list):
            container.insert(key, copy.deepcopy(old))
        elif action == "swap" and isinstance(container, list) and len(container) > 1:
            other = draw(st.integers(0, len(container) - 1))
            container[key], container[other] = container[other], container[key]
        elif action == "type":
            container[key] = draw(st.sampled_from([None, [], {}, "", 0, True, [old], {"x": old}]))
        else:
            container[key] = draw(values) if not isinstance(old, int) or isinstance(old, bool) else draw(ints)
    return document


def edf_bytes(body: Any) -> bytes:
    """A body packed as an EDF with a valid header and checksum, so the reader's later checks are reached;
    integers msgpack cannot hold are clamped into its range."""
    packed = msgpack.packb(_packable(body), use_bin_type=True)
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(packed), hashlib.sha256(packed).digest()) + packed


def _packable(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-(1 << 63), min((1 << 64) - 1, value))
    if isinstance(value, dict):
        return {k: _packable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_packable(v) for v in value]
    return value


def edf_body(data: bytes) -> dict:
    return msgpack.unpackb(data[HEADER.size :], raw=False)
