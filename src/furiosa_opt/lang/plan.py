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

Before a plan is kept, its unread steps are dropped and its chains of views fused (`lang/fusion.py`).

Writes: a replayed write goes into a buffer in place exactly when the language's would (`cpu.exclusive`:
no other tensor or array holds it), else into a copy. A replay that fails (a gather's bad index) falls
back to the language, which reports the fault as it always does.

The cache holds `LIMIT` keys (least recently used dropped), with up to `PER_KEY` plans each (one per set of
window guards), each plan keeping the objects its key names.
Mutating a module-level object in place (appending to a list a kernel reads) is not seen: rebind it.
"""

from __future__ import annotations

import dataclasses
import dis
import re
import types
from collections import OrderedDict
from collections.abc import Callable
from itertools import chain, repeat
from typing import Any

from furiosa_opt.backend import active, cpu, using
from furiosa_opt.lang.fusion import fused
from furiosa_opt.lang.recorder import RECORDING, Offset, Recorder
from furiosa_opt.lang.steps import Plan, Step, base_of, window_of
from furiosa_opt.lang.tensors import Tensor, TensorView

LIMIT = 256  # keys kept in the process (least recently used dropped)
PER_KEY = 8  # plans kept per key, each for the windows its guards admit
_PLANS: OrderedDict[tuple, list[Plan | None]] = OrderedDict()  # [None]: recorded, but not replayable
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


def _leaf_key(leaf: object, bases: list) -> tuple:
    """A leaf's type (with a view's base's) and the first leaf sharing its base."""
    base = base_of(leaf)
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
    """The global names a code object reads (not its attribute names: `ctx.main` reads no global `main`),
    and the identifiers in its string constants (`m["A % 8"]` resolves the axis `A` in the module's
    globals when it runs)."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_READS]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names(const)
        elif isinstance(const, str):
            names += _IDENTIFIER.findall(const)
    return list(dict.fromkeys(names))


_MISSING = object()
_GLOBAL_READS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"}
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _key(kernel: Any, leaves: list, names: list[tuple[dict, tuple[str, ...]]]) -> tuple:
    bases: list = []
    leaf_keys = tuple(_leaf_key(leaf, bases) for leaf in leaves)
    code = tuple(chain.from_iterable(map(id, map(scope.get, group, repeat(_MISSING))) for scope, group in names))
    return id(kernel), id(kernel.fn.__code__), code, leaf_keys


# ---- building a plan from a recording -----------------------------------------------------------------


def _build(recorder: Recorder, leaves: list, inputs: list[tuple[int, int]], result: Any, keep: tuple) -> Plan | None:
    """The plan of a recorded launch, or None when it cannot be replayed."""
    if recorder.foreign:
        return None
    finals = []
    for i, slot in dict(inputs).items():
        now = recorder.slot_of(base_of(leaves[i]).data)
        if now is None:
            return None
        if now != slot:
            finals.append((i, now))
    results = []
    for value in result if isinstance(result, tuple) else (() if result is None else (result,)):
        leaf = next((i for i, x in enumerate(leaves) if base_of(x) is value), None)
        slot = recorder.slot_of(value.data) if isinstance(value, Tensor) else None
        if leaf is not None:
            results.append(("leaf", leaf))
        elif slot is not None:
            results.append(("new", type(value), value.dtype, value.params, slot))
        else:
            return None
    guards = sorted(recorder.guards)
    if recorder.opaque_windows:
        guards = [(i, 0, "eq", window_of(leaf), True) for i, leaf in enumerate(leaves) if isinstance(leaf, TensorView)]
    steps, constants = _folded(recorder)
    handed = {s for _, s in finals} | {spec[-1] for spec in results if spec[0] == "new"}
    kept = handed | {s for s, _ in constants}
    steps = fused(steps, kept)
    _releases(steps, kept)
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
    key = _key(kernel, leaves, names)
    plans = _PLANS.get(key)
    if plans is not None:
        _PLANS.move_to_end(key)
        if plans and plans[0] is None:
            COUNTS["unreplayable"] += 1
            return run(kernel, ctx, args)
        windows = [window_of(leaf) for leaf in leaves]
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
    replayable = all(isinstance(leaf, Tensor | TensorView) and type(base_of(leaf).data) is cpu.Buf for leaf in leaves)
    inputs = []
    for i, leaf in enumerate(leaves):
        if replayable and not any(base_of(leaves[j]) is base_of(leaf) for j in range(i)):
            inputs.append((i, recorder.new_slot(base_of(leaf).data)))
            recorder.varying.add(inputs[-1][1])
    windows = {i: view.window for i, view in views}
    for i, view in views:
        view.window = Offset(view.window, i, 0)
    RECORDING.append(recorder)
    try:
        with using(recorder):
            result = run(kernel, ctx, args)
    finally:
        RECORDING.pop()
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
