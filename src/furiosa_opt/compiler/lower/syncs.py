"""Syncs between the contexts: each context runs its commands in order, and a sync makes one wait for another's."""

from __future__ import annotations

from furiosa_opt.compiler.lir import Buffer, Command, overlapping


def with_syncs(commands: list[Command], buffers: dict[str, Buffer]) -> list[Command]:
    """Insert a sync before each command that must wait for work on another context: it reads what
    another context wrote, or writes memory another context still reads or writes (address overlap).

    A context runs its commands in order, so waiting for another context's latest conflicting access
    covers its earlier ones: per memory footprint (memory, address, bytes — buffers reusing one place
    share it) and context, only the latest read and write are kept, which keeps this linear."""
    footprint = {name: b.footprint for name, b in buffers.items()}
    near = overlapping(set(footprint.values()))
    latest: dict[tuple, dict[str, list[int | None]]] = {}  # footprint → context → [last read, last write]
    final: list[Command] = []
    for command in commands:
        if command.kind == "view":
            command.index = len(final)
            final.append(command)
            continue
        waits: set[int] = set()
        for names, both in ((command.inputs, False), (command.outputs, True)):
            for name in names:
                for spot in near[footprint[name]]:
                    for context, (read, wrote) in latest.get(spot, {}).items():
                        if context != command.context:
                            waits.update(i for i in ((read, wrote) if both else (wrote,)) if i is not None)
        if waits:
            final.append(Command(len(final), command.context, "sync", -1, "sync", command.loc, waits=sorted(waits)))
        command.index = len(final)
        final.append(command)
        for names, slot in ((command.inputs, 0), (command.outputs, 1)):
            for name in names:
                latest.setdefault(footprint[name], {}).setdefault(command.context, [None, None])[slot] = command.index
    return final
