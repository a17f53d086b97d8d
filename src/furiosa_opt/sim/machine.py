"""Run an EDF: load the arguments into HBM, execute every command stream, read the outputs back.

The four contexts' streams are merged in command-index order, which is the kernel's program order and
honours every sync; a DMA descriptor is one strided copy (`memory`), Tensor Unit commands run in
`tensor_unit`. A command that reaches outside its kernel's memory, or a stage this simulator lacks, is a
`SimulatorError` naming the kernel, the command and the user's source line.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from furiosa_opt.compiler.edf import Edf
from furiosa_opt.compiler.lir import Buffer, Command, LoopRegion
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.dtypes import dtype_by_name
from furiosa_opt.programs import evaluate
from furiosa_opt.sim.memory import Fault, Memories
from furiosa_opt.sim.tensor_unit import TensorUnit, Unsupported


class SimulatorError(FuriosaOptError):
    """The simulator cannot run this EDF as given."""


def commands_run(edf: Edf) -> Iterator[Command]:
    """The commands as the kernel runs them: a kept loop's body once per pass, skipping what a guard rules
    out, and each runtime offset added to its address (docs/edf.md, "Loops")."""
    ordered = edf.commands()
    indices = [command.index for command in ordered]
    at = 0
    for loop in edf.loops:
        first, end = bisect_left(indices, loop.first), bisect_right(indices, loop.last)
        yield from ordered[at:first]
        body = [(command, *_runtime(command, loop)) for command in ordered[first:end]]
        for k in range(loop.count):
            for command, runs, offsets in body:
                if runs is None or runs[k]:
                    yield _moved(command, offsets, k) if offsets else command
        at = end
    yield from ordered[at:]


def _runtime(command: Command, loop: LoopRegion) -> tuple[np.ndarray | None, list[tuple[str, np.ndarray]]]:
    """(whether each pass runs the command, or None: every pass; each runtime offset on each pass)."""
    passes = [np.arange(loop.count, dtype=np.int64)]  # loop level 0: the kept loop's index
    runs = evaluate(command.guard, passes) != 0 if command.guard else None
    return runs, [(path, evaluate(program, passes)) for path, program in command.offsets]


def _moved(command: Command, offsets: list[tuple[str, np.ndarray]], k: int) -> Command:
    """The command with each runtime offset added at its path (`dma.src_base`, `fetch.interleave.1`, …)."""
    configs: dict[str, object] = {}
    for path, offset in offsets:
        name, key, *item = path.split(".")
        config = configs.get(name, getattr(command, name))
        if item:  # an interleave base
            bases = list(getattr(config, key))
            bases[int(item[0])] += int(offset[k])
            configs[name] = replace(config, **{key: bases})
        else:
            configs[name] = replace(config, **{key: getattr(config, key) + int(offset[k])})
    return replace(command, **configs)


def run(edf: Edf, arguments: list[bytes]) -> list[bytes]:
    """The bytes of each output (in the EDF's output order), given each argument's bytes in wire order,
    on fresh memory: what `python -m furiosa_opt.sim` does with files."""
    if len(arguments) != len(edf.arguments):
        raise SimulatorError(f"kernel {edf.identity} takes {len(edf.arguments)} arguments, got {len(arguments)}")
    dram = {b.name: np.zeros(b.bytes, dtype=np.uint8) for b in edf.buffers if b.memory == "dram"}
    for tensor, data in zip(edf.arguments, arguments, strict=True):
        if len(data) != tensor.bytes:
            raise SimulatorError(
                f"kernel {edf.identity}: argument {tensor.path} is {tensor.bytes} bytes, got {len(data)}"
            )
        dram[tensor.buffer][:] = np.frombuffer(data, dtype=np.uint8)
    execute(edf, dram)
    return [dram[tensor.buffer].tobytes() for tensor in edf.outputs]


def execute(edf: Edf, dram: dict[str, np.ndarray]) -> None:
    """Run the kernel with every DRAM buffer bound to its bytes in device memory (`dram`: buffer name →
    writable uint8 array of the buffer's size). Arguments are read and written in place; the outputs are
    in their buffers' arrays afterwards."""
    buffers = {b.name: b for b in edf.buffers}
    for b in buffers.values():
        bound = dram.get(b.name) if b.memory == "dram" else None
        if b.memory == "dram" and (bound is None or bound.dtype != np.uint8 or len(bound) != b.bytes):
            raise SimulatorError(f"kernel {edf.identity}: DRAM buffer {b.name} ({b.bytes} bytes) is not bound")
    try:
        memories = Memories(edf.buffers, dram, {b.name: b.chips for b in edf.buffers}, edf.chip)
    except Fault as error:
        raise SimulatorError(f"kernel {edf.identity}: {error}") from None
    memories.computing(_dm_spans(commands_run(edf), buffers))
    unit = TensorUnit(memories, buffers)
    for command in commands_run(edf):
        try:
            if command.kind in ("dma", "pcopy"):
                _dma(memories, command, buffers)
            elif command.kind == "exec":
                unit.run(command)
            elif command.kind == "indirect":
                memories.indirect(*(buffers[name] for name in command.inputs[:2]), buffers[command.outputs[0]],
                                  command.indirect)  # fmt: skip
            elif command.kind == "memset":
                memories.fill(buffers[command.outputs[0]], command.fill)
        except (Fault, Unsupported, KeyError) as error:
            where = command.loc or "no source line"
            raise SimulatorError(
                f"kernel {edf.identity}: command {command.index} ({command.opcode} on {command.context}, {where}): "
                f"{_problem(error)}"
            ) from None


def _dm_spans(commands: Iterator[Command], buffers: dict[str, Buffer]) -> list[tuple[int, int]] | None:
    """The DM offsets each DMA and fill reaches (`Memories.computing`); None if an indirect move touches
    DM, whose rows are known only when its index is read."""
    spans = []
    for command in commands:
        if command.kind in ("dma", "pcopy"):
            walk = command.dma
            sides = [
                (buffers[command.inputs[0]], walk.src_base, "src"),
                (buffers[command.outputs[0]], walk.dst_base, "dst"),
            ]
        elif command.kind == "memset":
            walk = command.fill
            sides = [(buffers[command.outputs[0]], walk.base, "dst")]
        elif command.kind == "indirect":
            if any(buffers[name].memory == "sram" for name in (*command.inputs, *command.outputs)):
                return None
            continue
        else:
            continue
        for buffer, base, side in sides:
            span = Memories.dm_span(buffer, base, walk.loops, walk.packet, side)
            if span is not None:
                spans.append(span)
    return spans


def _dma(memories: Memories, command: Command, buffers: dict[str, Buffer]) -> None:
    source, target = buffers[command.inputs[0]], buffers[command.outputs[0]]
    memories.dma(source, target, command.dma, max(1, dtype_by_name(source.dtype).bits // 8))


def _problem(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"its configs name {error}, which the EDF does not define"
    return str(error)
