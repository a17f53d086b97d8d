"""Buffer lifetimes in a command order, and the pieces of that order another order may move.

A buffer lives from the first command that writes it to the last that reads or writes it; what a kept
loop's body uses of earlier work it uses on every pass, so that lives to the loop's end, and a result
lives past the last command. These are the intervals placement packs (`placement.py`)."""

from __future__ import annotations

from furiosa_opt.compiler.lir import Buffer, Command

Loops = list[tuple[Command, Command, int, str]]  # (first command, last command, passes, index) per kept loop


def lifetimes(buffers: dict[str, Buffer], commands: list[Command], loops: Loops, results: list[str]) -> None:
    """Set each buffer's `first` and `last` from `commands`, whose indices are their places in the list."""
    written: dict[str, int] = {}  # buffer → first command writing it
    used: dict[str, int] = {}  # buffer → last command reading or writing it
    for c in commands:
        for name in c.outputs:
            written.setdefault(name, c.index)
        for name in (*c.inputs, *c.outputs):
            used[name] = c.index
    for buffer in buffers.values():
        if buffer.first >= 0:
            buffer.first = written.get(buffer.name, buffer.first)
        buffer.last = used.get(buffer.name, buffer.first)
    for first, last, _, _ in loops:  # what a body reads of earlier work, it reads on every pass
        for c in commands[first.index : last.index + 1]:
            for name in (*c.inputs, *c.outputs):
                if buffers[name].first < first.index:
                    buffers[name].last = max(buffers[name].last, last.index)
    for name in results:
        buffers[name].last = len(commands)


def units(commands: list[Command], loops: Loops) -> list[list[Command]]:
    """The commands in the pieces an order may move: a command with the views written just before it, or a
    kept loop's whole body (views that end the kernel are a piece of their own)."""
    ends = {id(first): last for first, last, _, _ in loops}
    units: list[list[Command]] = []
    views: list[Command] = []
    at = 0
    while at < len(commands):
        command = commands[at]
        if id(command) in ends:
            stop = ends[id(command)].index + 1  # a command's index is its place in the list here
        elif command.kind == "view":
            views.append(command)
            at += 1
            continue
        else:
            stop = at + 1
        units.append([*views, *commands[at:stop]])
        views, at = [], stop
    return [*units, views] if views else units
