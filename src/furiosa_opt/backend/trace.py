"""The tracer: runs a `@device` function on symbolic tensors built from its annotations and records
one vISA op per kernel-language call. No data exists, so nothing is computed; every static rule runs
exactly as on the CPU backend. Python control flow over constants simply unrolls."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from furiosa_opt.compiler import visa
from furiosa_opt.diagnostics import FuriosaOptError, Location, VerifyError, collecting, user_location
from furiosa_opt.dtypes import DType
from furiosa_opt.lang import params
from furiosa_opt.lang.contraction import Contraction
from furiosa_opt.lang.device import PROCESS_CONTEXT, DeviceFunction, check_result
from furiosa_opt.lang.loops import LoopMarker, Scalar
from furiosa_opt.lang.pair import VectorPair
from furiosa_opt.lang.stream import Stream
from furiosa_opt.lang.tensors import HbmTensor, Tensor, TensorType, TensorView
from furiosa_opt.lang.vector import VectorStream
from furiosa_opt.mapping import Axis, Mapping
from furiosa_opt.mapping.factors import Comp, SymAtom


class Symbol:
    """A traced value: it has a type (on the object that holds it) but no numbers."""

    def values(self) -> Any:
        raise VerifyError(
            "data-dependent",
            "a device function cannot read tensor values while it is compiled: control flow and "
            "immediates must not depend on data",
            notes=("compute on the device, or move the decision to the host program",),
        )


_SYMBOL = Symbol()


def type_of(obj: object) -> visa.Type:
    """The vISA type of a language object."""
    if isinstance(obj, TensorView):
        kind = "view_mut" if obj.writable else "view"
        return visa.Type(kind, obj.dtype.name, (*obj.outer, obj.element))
    if isinstance(obj, Tensor):
        return visa.Type(obj.kind, obj.dtype.name, obj.params)
    if isinstance(obj, Stream):
        return visa.Type("stream", obj.dtype.name, (*obj.spatial, obj.time, obj.packet))
    if isinstance(obj, VectorStream):
        s = obj.stream
        return visa.Type("vector", s.dtype.name, (*s.spatial, s.time, s.packet))
    if isinstance(obj, VectorPair):
        s = obj.g0.stream
        return visa.Type("pair", s.dtype.name, (*s.spatial, s.time, s.packet))
    if isinstance(obj, LoopMarker):
        return visa.Type("scalar", "i32", ())
    if isinstance(obj, Contraction):
        p = obj._pending
        return visa.Type("contraction", p.acc.name, (p.trf.params[3], p.time2 or p.time, p.packet2 or p.packet))
    raise TypeError(f"no vISA type for {obj!r}")


class Tracer:
    """The backend that records instead of computing (see backend/__init__.py for the interface)."""

    def __init__(self, collect: bool = True, locate: bool = True):
        self.ops: list[visa.Op] = []
        self.names: dict[int, visa.Value] = {}
        self.alive: list[object] = []  # keeps traced objects alive so their ids stay unique
        self.errors: list[FuriosaOptError] = []
        self.collect = collect
        self.locate = locate  # find each op's user line (a replay takes the text's instead)

    # ---- values: nothing to compute ----

    def relayout(self, *args: Any, **kwargs: Any) -> Symbol:
        return _SYMBOL

    elementwise = constant = zeros = window_read = window_write = contraction = reduce = relayout
    interleave = half = dma_gather = dma_scatter = relayout

    # ---- recording ----

    def name(self, obj: object) -> visa.Value:
        value = visa.Value(f"%{len(self.names)}", type_of(obj))
        self.names[id(obj)] = value
        self.alive.append(obj)
        return value

    def fresh(self, type_: visa.Type) -> visa.Value:
        """A new SSA name of `type_` held by no language object (a `carried` op's result)."""
        holder = object()
        value = visa.Value(f"%{len(self.names)}", type_)
        self.names[id(holder)] = value
        self.alive.append(holder)
        return value

    def fold_loop(self, start: int, first: int, second: int) -> list[object]:
        """Keep the first traced pass of a device loop's body (`ops[first:second]`; the `loop` op at
        `start`), with a `carried` op after the `loop` op for each value the second pass read from the
        first (a Python variable the body rebinds, `x = step(x)`), and drop the second pass, renaming
        what later code holds of it to the first pass's values. Returns the back edges: for each
        `carried` op, the first-pass object the next pass reads in its place (`end_loop`'s operands)."""
        one, two = self.ops[first:second], self.ops[second:]
        same = len(one) == len(two) and all(
            (a.opcode, repr(a.attrs), len(a.operands), [v.type for v in a.results])
            == (b.opcode, repr(b.attrs), len(b.operands), [v.type for v in b.results])
            for a, b in zip(one, two, strict=False)
        )
        if not same:
            raise VerifyError(
                "device-loop",
                "a device loop's body must trace to the same ops on every pass: it is compiled once",
                notes=("keep Python state that changes from pass to pass out of the body",),
            )
        as_first = {
            b.name: a.name for x, y in zip(one, two, strict=True) for a, b in zip(x.results, y.results, strict=True)
        }
        made = set(as_first.values())
        carried: dict[str, str] = {}  # value before the loop → the first-pass value the next pass reads instead
        for x, y in zip(one, two, strict=True):
            for before, read in zip(x.operands, y.operands, strict=True):
                read = as_first.get(read, read)
                if read != before and (before in made or carried.setdefault(before, read) != read):
                    raise VerifyError("device-loop", f"`{x.opcode}` reads a value that changes between passes twice")
        values = {v.name: v for v in self.names.values()}
        heads = {before: self.fresh(values[before].type) for before in carried}
        head_ops = [visa.Op("carried", (heads[b],), (b,), (), self.ops[start].loc) for b in carried]
        renamed = [replace(op, operands=tuple(heads[n].name if n in heads else n for n in op.operands)) for op in one]
        self.ops[start + 1 :] = [*head_ops, *renamed]
        for key, value in list(self.names.items()):  # later code holds the second pass's values
            if value.name in as_first:
                self.names[key] = values[as_first[value.name]]
        objects = {self.names[id(obj)].name: obj for obj in self.alive}
        return [objects[read] for read in carried.values()]

    def operand(self, obj: object, op: str) -> str:
        value = self.names.get(id(obj))
        if value is None:
            what = type(obj).__name__
            raise VerifyError(
                "foreign-value",
                f"`{op}` uses a {what} that was not made inside this device function",
                notes=("a device function works on its arguments and what it derives from them",),
            )
        return value.name

    def record(self, name: str, operands: tuple, results: tuple, **attrs: Any) -> None:
        names = tuple(self.operand(obj, name) for obj in operands)
        values = tuple(self.name(obj) for obj in results)
        loc = user_location(2) if self.locate else None
        self.ops.append(visa.Op(name, values, names, tuple(attrs.items()), _loc(loc)))

    def absorb(self, error: FuriosaOptError) -> bool:
        """Keep a refused operation's error and go on (independent errors are all reported)."""
        if not self.collect:
            return False
        if error.location is None:
            error.location = user_location(3)
        self.errors.append(error)
        return True


def _loc(location: Location | None) -> visa.Loc | None:
    return visa.Loc(location.file, location.line, location.column) if location else None


def trace(
    kernel: DeviceFunction, collect: bool = True, tracer: Tracer | None = None
) -> tuple[visa.Kernel | None, list[FuriosaOptError]]:
    """The kernel's vISA and the errors found while tracing it (the IR is None if any). A `tracer` given
    (a subclass that also keeps what it records, as the language server's does) is the one that runs."""
    from furiosa_opt.backend import using

    tracer = tracer or Tracer(collect)
    try:
        leaves: list[object] = []

        def make(t: TensorType) -> object:
            leaves.append(symbolic_argument(t.cls, t.dtype, t.params))
            return leaves[-1]

        bound = [PROCESS_CONTEXT if p.type is None else params.build(p.type, make) for p in kernel.parameters]
        arg_values = tuple(tracer.name(a) for a in leaves)
        with using(tracer), collecting(tracer.absorb):
            result = kernel.fn(*bound)
            if not tracer.errors:
                check_result(kernel, result)
    except Exception as error:  # refused (not absorbed), or a Python error in the kernel body: report it
        tracer.errors.append(error)
    if tracer.errors:
        return None, tracer.errors
    outputs = result if isinstance(result, tuple) else (() if result is None else (result,))
    returned = tuple(tracer.operand(obj, "return") for obj in outputs)
    paths = tuple(path for path, _ in kernel.leaf_types)
    ir = visa.Kernel(
        kernel.identity,
        kernel.device.chip,
        kernel.device.pe,
        traced_axes(tracer),
        arg_values,
        tuple(tracer.ops),
        returned,
    )
    return _renumbered(replace(ir, paths=paths)), []


def _renumbered(ir: visa.Kernel) -> visa.Kernel:
    """SSA names in order of definition (a device loop's `carried` values are named after its body was
    traced twice), so the text replays to itself; loop indices inside runtime scalars follow."""
    names: dict[str, str] = {}

    def define(value: visa.Value) -> visa.Value:
        names[value.name] = f"%{len(names)}"
        return replace(value, name=names[value.name])

    def attr(value: object) -> object:
        if not isinstance(value, Scalar):
            return value
        return value.evaluate({n: Scalar("index", (names[n], count)) for n, count in value.indices().items()})

    args = tuple(define(v) for v in ir.args)
    ops = []
    for op in ir.ops:
        operands = tuple(names[name] for name in op.operands)
        attrs = tuple((key, attr(value)) for key, value in op.attrs)
        ops.append(replace(op, results=tuple(define(v) for v in op.results), operands=operands, attrs=attrs))
    returns = tuple(names[name] for name in ir.returns)
    return replace(ir, args=args, ops=tuple(ops), returns=returns)


def symbolic_argument(cls: type, dtype: DType, levels: tuple[Mapping, ...]) -> object:
    """A kernel argument with no data: an HBM tensor, or a view of a whole symbolic HBM tensor (the
    runtime binds the view's window, so inside the kernel it starts at position 0)."""
    if cls is HbmTensor:
        return HbmTensor(dtype, levels, _SYMBOL)
    return cls(HbmTensor(dtype, levels, _SYMBOL), levels[-1], 0)


def traced_axes(tracer: Tracer) -> tuple[Axis, ...]:
    """Every axis the kernel's types and attributes name, in order of first appearance."""
    found: dict[str, Axis] = {}

    def visit(factors) -> None:
        for f in factors:
            if isinstance(f.atom, SymAtom):
                found.setdefault(f.atom.name, Axis(f.atom.name, f.atom.n))
            elif isinstance(f.atom, Comp):
                visit(f.atom.k)

    def mapping(m: Mapping) -> None:
        visit(m.factors)
        node = m.node
        for axis in _node_axes(node):
            found.setdefault(axis.name, axis)

    for value in tracer.names.values():
        for p in value.type.params:
            mapping(p)
    for op in tracer.ops:
        for _, attr in op.attrs:
            if isinstance(attr, Mapping):
                mapping(attr)
    return tuple(found.values())


def _node_axes(node) -> list[Axis]:
    """Axes written in an expression, including ones a normal form drops (`A % 1`)."""
    from furiosa_opt.mapping.expr import Op, Pair, Sym

    if isinstance(node, Sym):
        return [node.axis]
    if isinstance(node, Pair):
        return _node_axes(node.outer) + _node_axes(node.inner)
    if isinstance(node, Op):
        return _node_axes(node.inner)
    return []
