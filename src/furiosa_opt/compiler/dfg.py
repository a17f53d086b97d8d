"""The data-flow graph of a vISA kernel (`--dump-dfg`): one node per op, one edge per use of a value."""

from __future__ import annotations

import msgpack

from furiosa_opt.compiler import visa


def dfg(kernel: visa.Kernel) -> dict:
    producer = {}
    nodes, edges = [], []
    for index, op in enumerate(kernel.ops):
        for value in op.results:
            producer[value.name] = index
        for position, name in enumerate(op.operands):
            source = producer.get(name)
            edge = {"from": source, "to": index, "value": name, "operand": position}
            edges.append(edge if source is not None else edge | {"from": None, "argument": name})
        nodes.append(
            {
                "id": index,
                "op": op.opcode,
                "results": [{"name": v.name, "type": str(v.type)} for v in op.results],
                "loc": str(op.loc) if op.loc else None,
            }
        )
    arguments = [{"name": v.name, "type": str(v.type)} for v in kernel.args]
    returns = [{"value": name, "from": producer.get(name)} for name in kernel.returns]
    return {
        "format": "furiosa-opt-dfg",
        "version": 1,
        "kernel": kernel.identity,
        "arguments": arguments,
        "nodes": nodes,
        "edges": edges,
        "returns": returns,
    }


def dump_dfg(kernel: visa.Kernel) -> bytes:
    return msgpack.packb(dfg(kernel), use_bin_type=True)
