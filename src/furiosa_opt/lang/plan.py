"""Launch plans: a CPU launch replayed as the numpy steps it took.

The first CPU launch of a kernel for given arguments runs the kernel language as written: every check,
every mapping built, every stage's rules. It also records what reached the backend (`backend/cpu.py`): a
list of steps, each a backend call whose buffers are slots and whose other arguments are the values the
language computed. A later launch with the same key replays the steps on the new arguments' buffers and
skips the language: a small kernel's launch then costs its numpy work and a little bookkeeping.

The key is what can change the steps:
  * the kernel's code, and the module-level objects its code names (read again at every launch, by
    identity; functions it calls are followed into their own modules, the package's own are not). Reloading
    the module, rebinding a name it reads or a tuned choice (read at import) gives a new key;
  * every argument's tensor kind, dtype and level mappings (a view's base as well), and which
    arguments share a base tensor.
A view argument's window (`table.view().tile(token, …)` on the host) is a value, not part of the key: the
recording follows it (`Offset`) into every window the kernel derives from it, and each decision the
language took on such a window (`window < size`, a bounds check) becomes a guard the replay checks
first. A kernel that does other arithmetic on a window is replayed only for the same windows. A kernel
that reads a buffer made outside its arguments (a module-level tensor) is never replayed.

Writes: a replayed write goes into a buffer in place exactly when the language's would (`cpu.exclusive`:
no other tensor or array holds it), else into a copy. A replay that fails (a gather's bad index) falls
back to the language, which reports the fault as it always does.

The cache holds `LIMIT` keys (least recently used dropped), with up to `PER_KEY` plans each (one per set of
window guards), each plan keeping the objects its key names.
Mutating a module-level object in place (appending to a list a kernel reads) is not seen: rebind it.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any

import numpy as np

from furiosa_opt.backend import active, cpu, using
from furiosa_opt.lang.tensors import Tensor, TensorView

LIMIT = 256  # keys kept in the process (least recently used dropped)
PER_KEY = 8  # plans kept per key, each for the windows its guards admit
_PLANS: OrderedDict[tuple, list[Plan | None]] = OrderedDict()  # [None]: recorded, but not replayable
_RECORDING: list[Recorder] = []  # the recorder of the launch being recorded (Offset reports to it)
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
            "ne": operator.ne}  # fmt: skip


COUNTS = {"recorded": 0, "replayed": 0, "unreplayable": 0}  # launches of this process, by what they did


def clear() -> None:
    """Forget every plan (tests; a process that wants its first-launch checks again)."""
    _PLANS.clear()


def cached() -> int:
    """How many keys the cache holds."""
    return len(_PLANS)


# ---- the key ----------------------------------------------------------------------------------------


def _leaves(value: object, out: list) -> None:
    """The tensors and views of a launch argument, in declaration order (tuples and dataclasses opened)."""
    if isinstance(value, Tensor | TensorView):
        out.append(value)
    elif isinstance(value, tuple):
        for item in value:
            _leaves(item, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _leaves(getattr(value, f.name), out)
    else:
        out.append(value)  # not a tensor: the language refuses it on the recording launch


def _base(leaf: object) -> object:
    return leaf.base if isinstance(leaf, TensorView) else leaf


def _leaf_key(leaf: object, bases: list) -> tuple:
    """A leaf's type (with a view's base's) and the first leaf sharing its base."""
    base = _base(leaf)
    shared = next((i for i, b in enumerate(bases) if b is base), len(bases))
    bases.append(base)
    if isinstance(leaf, TensorView):
        return type(leaf), leaf.dtype, leaf.params, type(base), base.params, shared
    if isinstance(leaf, Tensor):
        return type(leaf), leaf.dtype, leaf.params, shared
    return type(leaf), id(leaf)


def _named(fn: Callable) -> list[tuple[dict, tuple[str, ...]]]:
    """(globals, names) of the module-level names `fn`'s code (and its nested code) reads, and of those
    read by the functions it names outside this package, transitively."""
    found: dict[int, tuple[dict, list[str]]] = {}
    seen: set[int] = set()

    def visit(function: Callable) -> None:
        if id(function.__code__) in seen:
            return
        seen.add(id(function.__code__))
        scope = function.__globals__
        names = found.setdefault(id(scope), (scope, []))[1]
        for name in _names(function.__code__):
            names.append(name)
            value = scope.get(name)
            if isinstance(value, types.FunctionType) and not value.__module__.startswith("furiosa_opt."):
                visit(value)

    visit(fn)
    return [(scope, tuple(dict.fromkeys(names))) for scope, names in found.values()]


def _names(code: types.CodeType) -> list[str]:
    """The global names a code object reads, and the identifiers in its string constants (`m["A % 8"]`
    resolves the axis `A` in the module's globals when it runs)."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names(const)
        elif isinstance(const, str):
            names += _IDENTIFIER.findall(const)
    return list(dict.fromkeys(names))


_MISSING = object()
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _key(kernel: Any, leaves: list, names: list[tuple[dict, tuple[str, ...]]]) -> tuple:
    bases: list = []
    leaf_keys = tuple(_leaf_key(leaf, bases) for leaf in leaves)
    code = tuple(chain.from_iterable(map(id, map(scope.get, group, repeat(_MISSING))) for scope, group in names))
    return id(kernel), id(kernel.fn.__code__), code, leaf_keys


# ---- recording ----------------------------------------------------------------------------------------


class Offset(int):
    """A window the recording follows: argument leaf `leaf`'s window plus `delta`. Adding an int keeps it
    an `Offset`; comparing it records a guard; any other arithmetic on it in the language makes the plan
    replay only for the same windows. Inside a backend call (replayed as such) it is an ordinary int."""

    def __new__(cls, value: int, leaf: int, delta: int) -> Offset:
        made = super().__new__(cls, value)
        made.leaf, made.delta = leaf, delta
        return made

    def _shifted(self, by: object, sign: int) -> int:
        if type(by) is int and not _inside():
            return Offset(_value(self) + sign * by, self.leaf, self.delta + sign * by)
        _opaque()
        return _value(self) + sign * by

    def __add__(self, other: object) -> int:
        return self._shifted(other, 1) if isinstance(other, int) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> int:
        return self._shifted(other, -1) if isinstance(other, int) else NotImplemented

    def _compared(self, other: object, name: str) -> bool:
        result = _COMPARE[name](_value(self), other)
        if not _inside():
            recorder = _RECORDING[-1] if _RECORDING else None
            if recorder is not None:
                if type(other) is int:
                    recorder.guards.add((self.leaf, self.delta, name, other, result))
                else:
                    recorder.opaque_windows = True
        return result

    def __lt__(self, other: object) -> bool:
        return self._compared(other, "lt")

    def __le__(self, other: object) -> bool:
        return self._compared(other, "le")

    def __gt__(self, other: object) -> bool:
        return self._compared(other, "gt")

    def __ge__(self, other: object) -> bool:
        return self._compared(other, "ge")

    def __eq__(self, other: object) -> bool:
        return self._compared(other, "eq")

    def __ne__(self, other: object) -> bool:
        return self._compared(other, "ne")

    def __bool__(self) -> bool:
        return self._compared(0, "ne")

    __hash__ = int.__hash__


def _opaque_op(name: str) -> Callable:
    method = getattr(int, name)

    def op(self: Offset, *args: object) -> object:
        _opaque()
        return method(_value(self), *args)

    return op


for _name in ("__mul__", "__rmul__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__truediv__",
              "__rtruediv__", "__divmod__", "__rdivmod__", "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__",
              "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__",
              "__rshift__", "__rrshift__", "__rsub__", "__invert__", "__int__", "__float__", "__index__"):  # fmt: skip
    setattr(Offset, _name, _opaque_op(_name))


def _value(offset: Offset) -> int:
    """The plain int (not through `__int__`, which the recording watches)."""
    return int.__int__(offset)


def _inside() -> bool:
    return bool(_RECORDING) and _RECORDING[-1].depth > 0


def _opaque() -> None:
    if _RECORDING and not _inside():
        _RECORDING[-1].opaque_windows = True


@dataclasses.dataclass
class Step:
    """One backend call: `fn(*args)` with `slots` (argument position → slot) filled in and `offsets`
    (position → (leaf, delta)) resolved; its result goes to slot `out`; `release` slots are dropped after."""

    fn: Callable
    args: list
    slots: list[tuple[int, int]]
    offsets: list[tuple[int, int, int]]
    out: int | None
    release: tuple[int, ...] = ()
    release_base: bool = False  # a write step: its base buffer is read by no later step
    view: Reslice | None = None  # a relayout that was a view of its input: redone as that view

    def run(self, slots: list, windows: list[int]) -> object:
        args = list(self.args)
        for position, slot in self.slots:
            args[position] = slots[slot]
        for position, leaf, delta in self.offsets:
            args[position] = windows[leaf] + delta
        if self.view is not None:
            made = self.view.apply(args[0], args[1])
            if made is not None:
                return made
        return self.fn(*args)


@dataclasses.dataclass(frozen=True)
class Reslice:
    """A relayout whose result was a strided view of its input's array: the same view of a new input
    array of the same shape and strides, without deriving the view again. `grid`: the input was read as
    its live grid (`Buf.grid`), else as its values."""

    grid: bool
    array: tuple  # (dtype, shape, strides) of the array read
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int  # bytes from the read array's first element
    layout: Any  # the result's layout

    @staticmethod
    def of(buf: object, src: Any, result: object) -> Reslice | None:
        if not (type(buf) is cpu.Buf and type(result) is cpu.Buf and result.layout is not None):
            return None
        grid = buf.layout == src and buf.index is None
        read = buf.base if grid else (buf.values() if buf.layout is None and buf.index is None else None)
        out = result.base
        if read is None or not read.flags.c_contiguous or _root(out) is not _root(read):
            return None
        offset = out.__array_interface__["data"][0] - read.__array_interface__["data"][0]
        if offset < 0 or (out.size and offset + _reach(out) > read.nbytes):
            return None
        return Reslice(grid, (read.dtype, read.shape, read.strides), out.shape, out.strides, offset, result.layout)

    def apply(self, buf: object, src: Any) -> cpu.Buf | None:
        """The view of `buf`, or None when `buf` is not read the way the recorded input was."""
        if type(buf) is not cpu.Buf or buf.index is not None:
            return None
        if self.grid:
            if buf.layout != src:
                return None
            read = buf.base
        elif buf.layout is None:
            read = buf.base
        else:
            return None
        if (read.dtype, read.shape, read.strides) != self.array or not read.flags.c_contiguous:
            return None
        view = np.ndarray(self.shape, read.dtype, buffer=read, offset=self.offset, strides=self.strides)
        view.flags.writeable = False
        return cpu.Buf(view, layout=self.layout)


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _reach(array: np.ndarray) -> int:
    """Bytes from a view's first element to just past its last."""
    return sum((n - 1) * s for n, s in zip(array.shape, array.strides, strict=True) if s > 0) + array.itemsize


class Recorder:
    """The backend during a recording launch: calls the CPU backend and notes each call as a `Step`.

    It holds the buffers it sees weakly (a write may still go in place while recording, as it would
    without plans), and strongly only the results that no argument reaches: the plan's constants."""

    writes_in_place = True  # as the CPU backend's: `cpu.exclusive` decides, on the language's references

    def __init__(self):
        self.steps: list[Step] = []
        self.slot: dict[int, int] = {}  # id(buffer) → slot, while `refs[slot]` is alive
        self.refs: list[weakref.ref] = []
        self.constants: dict[int, object] = {}  # slot → a result no argument reaches
        self.varying: set[int] = set()  # slots an argument reaches
        self.guards: set[tuple] = set()
        self.opaque_windows = False
        self.foreign = False  # the kernel read a buffer made outside its arguments
        self.depth = 0

    def slot_of(self, buf: object) -> int | None:
        slot = self.slot.get(id(buf))
        return slot if slot is not None and self.refs[slot]() is buf else None

    def new_slot(self, buf: object) -> int:
        known = self.slot_of(buf)
        if known is not None:
            return known
        self.refs.append(weakref.ref(buf))
        self.slot[id(buf)] = len(self.refs) - 1
        return self.slot[id(buf)]

    def record(self, name: str, operands: tuple, results: tuple, **attrs) -> None:
        """The language's note of an operation: nothing to replay."""

    def __getattr__(self, name: str) -> Callable:
        fn = getattr(cpu, name)

        def call(*args: object) -> object:
            template, slots, offsets = [], [], []
            for position, arg in enumerate(args):
                if isinstance(arg, cpu.Buf):
                    slot = self.slot_of(arg)
                    if slot is None:
                        self.foreign = True
                        slot = self.new_slot(arg)
                    slots.append((position, slot))
                    template.append(None)
                elif type(arg) is Offset:
                    offsets.append((position, arg.leaf, arg.delta))
                    template.append(None)
                else:
                    template.append(arg)
            self.depth += 1
            try:
                result = fn(*args)
            finally:
                self.depth -= 1
            known = self.slot_of(result)
            out = known if known is not None else self.new_slot(result)
            relaid = fn is cpu.relayout and out != slots[0][1]
            view = Reslice.of(args[0], args[1], result) if relaid else None
            varies = bool(offsets) or fn is cpu.window_write or any(s in self.varying for _, s in slots)
            if varies:
                self.varying.add(out)
            elif known is None:
                self.constants[out] = result
            if fn is cpu.window_write:
                template = template[:6]  # whether in place is decided again at every replay
            self.steps.append(Step(fn, template, slots, offsets, out, view=view))
            return result

        return call


# ---- the plan -----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Plan:
    """What a launch did, to be done again on new buffers."""

    slots: int
    inputs: list[tuple[int, int]]  # (leaf whose base's buffer fills the slot, slot)
    steps: list[Step]
    finals: list[tuple[int, int]]  # (leaf whose base ends holding the slot, slot)
    results: list[tuple[Any, ...]]  # ("leaf", i) or ("new", cls, dtype, params, slot)
    single: bool  # the kernel returned one tensor (not a tuple)
    guards: list[tuple]  # (leaf, delta, comparison, other, outcome)
    constants: list[tuple[int, object]]  # (slot, buffer) of what no argument reaches: computed once
    keep: tuple  # the objects the key names by identity, kept alive

    def holds(self, windows: list[int]) -> bool:
        return all(
            _COMPARE[name](windows[leaf] + delta, other) == outcome for leaf, delta, name, other, outcome in self.guards
        )

    def replay(self, leaves: list, windows: list[int]) -> Any:
        slots: list[object] = [None] * self.slots
        for leaf, slot in self.inputs:
            slots[slot] = _base(leaves[leaf]).data
        for slot, value in self.constants:
            slots[slot] = value
        for step in self.steps:
            if step.fn is cpu.window_write:
                slots[step.out] = _write(step, slots, leaves, windows)
            elif step.out is not None:
                slots[step.out] = step.run(slots, windows)
            for slot in step.release:
                slots[slot] = None
        for leaf, slot in self.finals:
            _base(leaves[leaf]).data = slots[slot]
        made = [_result(spec, leaves, slots) for spec in self.results]
        if not made:
            return None
        return made[0] if self.single else tuple(made)


def _write(step: Step, slots: list, leaves: list, windows: list[int]) -> object:
    """A `window_write` step: into its base buffer in place when nothing else holds it (the language's
    rule, `cpu.exclusive`, on the same references: the slot and any argument tensor holding it let go)."""
    (_, base_slot), *rest = step.slots
    data = slots[base_slot]
    slots[base_slot] = None
    holders = [b for b in (_base(leaf) for leaf in leaves) if b.data is data]
    for b in holders:
        b.data = None
    args = list(step.args)
    for position, slot in rest:
        args[position] = slots[slot]
    for position, leaf, delta in step.offsets:
        args[position] = windows[leaf] + delta
    try:
        in_place = step.release_base and cpu.exclusive(data)
        return cpu.window_write(data, *args[1:6], in_place)
    finally:
        for b in holders:
            b.data = data
        if not step.release_base:
            slots[base_slot] = data


def _result(spec: tuple, leaves: list, slots: list) -> object:
    if spec[0] == "leaf":
        return _base(leaves[spec[1]])
    _, cls, dtype, params, slot = spec
    tensor = cls.__new__(cls)
    tensor.dtype, tensor.params, tensor.data = dtype, params, slots[slot]
    return tensor


def _build(recorder: Recorder, leaves: list, inputs: list[tuple[int, int]], result: Any, keep: tuple) -> Plan | None:
    """The plan of a recorded launch, or None when it cannot be replayed."""
    if recorder.foreign:
        return None
    finals = []
    for i, slot in dict(inputs).items():
        now = recorder.slot_of(_base(leaves[i]).data)
        if now is None:
            return None
        if now != slot:
            finals.append((i, now))
    results = []
    for value in result if isinstance(result, tuple) else (() if result is None else (result,)):
        leaf = next((i for i, x in enumerate(leaves) if _base(x) is value), None)
        slot = recorder.slot_of(value.data) if isinstance(value, Tensor) else None
        if leaf is not None:
            results.append(("leaf", leaf))
        elif slot is not None:
            results.append(("new", type(value), value.dtype, value.params, slot))
        else:
            return None
    guards = sorted(recorder.guards)
    if recorder.opaque_windows:
        guards = [(i, 0, "eq", _window(leaf), True) for i, leaf in enumerate(leaves) if isinstance(leaf, TensorView)]
    steps, constants = _folded(recorder)
    handed = {s for _, s in finals} | {spec[-1] for spec in results if spec[0] == "new"}
    _releases(steps, handed | {s for s, _ in constants})
    single = not isinstance(result, tuple)
    return Plan(len(recorder.refs), inputs, steps, finals, results, single, guards, constants, keep)


def _folded(recorder: Recorder) -> tuple[list[Step], list[tuple[int, object]]]:
    """The steps an argument reaches (its buffer or its window), and the recorded results of the others
    (constants, zeros, what is computed from them alone), which the replay reuses."""
    steps = [step for step in recorder.steps if step.out in recorder.varying]
    return steps, list(recorder.constants.items())


def _releases(steps: list[Step], kept: set[int]) -> None:
    """Mark each slot's last reader to drop it, and a result no step reads as soon as it is made (so that
    a replayed write sees the references the language's would), except the slots the plan hands back."""
    last: dict[int, int] = {}
    for n, step in enumerate(steps):
        for _, s in step.slots:
            last[s] = n
    for n, step in enumerate(steps):
        done = {s for _, s in step.slots if last[s] == n and s not in kept and s != step.out}
        if step.out is not None and step.out not in last and step.out not in kept:
            done.add(step.out)
        if step.fn is cpu.window_write:
            base = step.slots[0][1]
            step.release_base = base in done
            done.discard(base)
        step.release = tuple(sorted(done))


def _window(leaf: object) -> int:
    return leaf.window if isinstance(leaf, TensorView) else 0


# ---- launch -------------------------------------------------------------------------------------------


def launch(kernel: Any, ctx: Any, args: tuple, run: Callable[[Any, Any, tuple], Any]) -> Any:
    """`run(kernel, ctx, args)` (the language running the kernel), or the replay of its plan."""
    if active() is not cpu:  # inside a tracer or a recording: the language runs as it is
        return run(kernel, ctx, args)
    names = kernel.__dict__.get("_plan_names")
    if names is None:
        names = kernel._plan_names = _named(kernel.fn)
    leaves: list = []
    for arg in args:
        _leaves(arg, leaves)
    try:
        key = _key(kernel, leaves, names)
    except TypeError:  # an unhashable argument: the language refuses it
        return run(kernel, ctx, args)
    plans = _PLANS.get(key)
    if plans is not None:
        _PLANS.move_to_end(key)
        if plans and plans[0] is None:
            COUNTS["unreplayable"] += 1
            return run(kernel, ctx, args)
        windows = [_window(leaf) for leaf in leaves]
        for plan in plans:
            if plan.holds(windows):
                try:
                    replayed = plan.replay(leaves, windows)
                    COUNTS["replayed"] += 1
                    return replayed
                except Exception:  # the language reports the fault in its own words
                    return run(kernel, ctx, args)
    return _record(kernel, ctx, key, leaves, names, args, run)


def _record(kernel: Any, ctx: Any, key: tuple, leaves: list, names: list, args: tuple, run: Callable) -> Any:
    """The language's launch under a `Recorder`, its plan kept under `key` (beside plans for other
    windows), or None kept when it cannot be replayed."""
    recorder = Recorder()
    views = [(i, leaf) for i, leaf in enumerate(leaves) if isinstance(leaf, TensorView) and type(leaf.window) is int]
    replayable = all(isinstance(leaf, Tensor | TensorView) and type(_base(leaf).data) is cpu.Buf for leaf in leaves)
    inputs = []
    for i, leaf in enumerate(leaves):
        if replayable and not any(_base(leaves[j]) is _base(leaf) for j in range(i)):
            inputs.append((i, recorder.new_slot(_base(leaf).data)))
            recorder.varying.add(inputs[-1][1])
    windows = {i: view.window for i, view in views}
    for i, view in views:
        view.window = Offset(view.window, i, 0)
    _RECORDING.append(recorder)
    try:
        with using(recorder):
            result = run(kernel, ctx, args)
    finally:
        _RECORDING.pop()
        for i, view in views:
            view.window = windows[i]
    keep = (kernel, kernel.fn.__code__, *(scope.get(name, _MISSING) for scope, group in names for name in group))
    plan = _build(recorder, leaves, inputs, result, keep) if replayable else None
    COUNTS["recorded"] += 1
    plans = _PLANS.setdefault(key, [])
    if plan is None:
        plans[:] = [None]
    elif len(plans) < PER_KEY:
        plans.append(plan)
    if len(_PLANS) > LIMIT:
        _PLANS.popitem(last=False)
    return result
