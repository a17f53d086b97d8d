"""How an EDF's commands run, checked before anything runs: kept loops and their runtime values (guards and
address offsets: programs of `furiosa_opt.programs` over the loop's index alone) and the syncs between the
streams (no deadlock)."""

from __future__ import annotations

from typing import Any

import numpy as np

from furiosa_opt import programs
from furiosa_opt.compiler.edf.schema import CONTEXTS, Malformed

MAX_LOOP_PASSES = 1 << 20  # a reader bound: the passes a kept loop's runtime offsets are checked at
OFFSET_PATHS = ("dma.src_base", "dma.dst_base", "fill.base", "fetch.base", "commit.base", "fetch.interleave.0",
                "fetch.interleave.1")  # fmt: skip


def loop_of(body: dict) -> dict[int, dict]:
    """Each command index in a kept loop's body → that loop."""
    return {i: loop for loop in body["loops"] for i in range(loop["first"], loop["last"] + 1)}


def check_loops(body: dict) -> None:
    """Kept loops in command order, apart, each over commands of the file with a pass count the reader
    bounds; a guard or runtime offset only inside a loop, a valid program (`programs.problem`) reading that
    loop's index (level 0, the only one), at a config address the command has, dividing by no zero."""
    indices = sorted(c["index"] for stream in body["streams"].values() for c in stream)
    last = -1
    for k, loop in enumerate(body["loops"]):
        where = f"body.loops[{k}]"
        if not last < loop["first"] <= loop["last"] or (indices and loop["last"] > indices[-1]):
            raise Malformed(f"{where}: commands {loop['first']} to {loop['last']} overlap an earlier loop or the end")
        if not 1 <= loop["count"] <= MAX_LOOP_PASSES:
            raise Malformed(f"{where}.count: {loop['count']} passes; a kept loop runs 1 to {MAX_LOOP_PASSES} times")
        last = loop["last"]
    loops = loop_of(body)
    for context in CONTEXTS:
        for i, command in enumerate(body["streams"][context]):
            where = f"body.streams.{context}[{i}]"
            loop = loops.get(command["index"])
            runtime = [(".guard", command["guard"])] if command["guard"] is not None else []
            for k, (path, program) in enumerate(command["offsets"]):
                runtime.append((f".offsets[{k}][1]", program))
                if path not in OFFSET_PATHS or config_at(command, path) is None:
                    raise Malformed(f"{where}.offsets[{k}]: {path!r} is not an address of this command")
            for field, program in runtime:
                if loop is None:
                    raise Malformed(f"{where}{field}: a runtime value outside a kept loop")
                problem = programs.problem(program, levels=1)
                if problem is not None:
                    raise Malformed(f"{where}{field}: {problem}")
                if 0 not in programs.reads(program):
                    raise Malformed(f"{where}{field}: {describe(program, loop)} does not read its loop's index")
                if field == ".guard":
                    pass_values(program, loop, f"{where}{field}")


def config_at(command: dict, path: str) -> Any:
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
    for path, program in command["offsets"]:
        values = pass_values(program, loop, f"command {command['index']}")
        found[path] = (int(values.min()), int(values.max()))
    return found


def pass_values(program: list[int], loop: dict, where: str) -> np.ndarray:
    """A checked program's value on every pass of the loop."""
    try:
        return programs.evaluate(program, [np.arange(loop["count"], dtype=np.int64)])
    except ZeroDivisionError:
        raise Malformed(f"{where}: {describe(program, loop)} divides by zero") from None


def describe(program: list[int], loop: dict) -> str:
    """A checked program as messages print it, its loop level named by the loop's index (`%3`)."""
    return f"`{programs.describe(program, [loop['index']])}`"


def check_syncs(body: dict) -> None:
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
        raise Malformed(
            f"{where[sync]}.waits: command {sync} ({commands[sync]['opcode']}) waits for command "
            f"{waits[0] if waits else '?'}, which cannot end before it starts: the streams deadlock "
            f"({len(stuck)} commands never run)"
        )
