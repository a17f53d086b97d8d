"""The recording launch of a plan (`lang/plan.py`): the backend that notes each call it passes to the CPU
backend (`Recorder`), and the int that follows an argument view's window through the language (`Offset`),
turning each decision taken on it into a guard."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from furiosa_opt.backend import cpu
from furiosa_opt.lang.steps import COMPARISONS, Reslice, Step, padding_of

RECORDING: list[Recorder] = []  # the recorder of the launch being recorded (Offset reports to it)


class Offset(int):
    """A window the recording follows: argument leaf `leaf`'s window plus `delta`. Adding an int keeps it
    an `Offset`; comparing it records a guard; any other arithmetic on it in the language makes the plan
    replay only for the same windows. Inside a backend call (replayed as such) it is an ordinary int."""

    def __new__(cls, value: int, leaf: int, delta: int) -> Offset:
        made = super().__new__(cls, value)
        made.leaf, made.delta = leaf, delta
        return made

    def _shifted(self, by: object, sign: int) -> int:
        recorder = _watching()
        if type(by) is int and recorder is not None:
            return Offset(_value(self) + sign * by, self.leaf, self.delta + sign * by)
        _opaque()
        return _value(self) + sign * by

    def __add__(self, other: object) -> int:
        return self._shifted(other, 1) if isinstance(other, int) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> int:
        return self._shifted(other, -1) if isinstance(other, int) else NotImplemented

    def _compared(self, other: object, name: str) -> bool:
        result = COMPARISONS[name](_value(self), other)
        recorder = _watching()
        if recorder is not None and type(other) is int:
            recorder.guards.add((self.leaf, self.delta, name, other, result))
        elif recorder is not None:
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


def _watching() -> Recorder | None:
    """The recorder that sees what the language does with a window: none outside a recording, and none
    inside a backend call (replayed as a call, so its uses of the window need no guard)."""
    recorder = RECORDING[-1] if RECORDING else None
    return recorder if recorder is not None and recorder.depth == 0 else None


def _opaque() -> None:
    recorder = _watching()
    if recorder is not None:
        recorder.opaque_windows = True


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
            self.steps.append(Step(fn, template, slots, offsets, out, view=view, padding=padding_of(fn, args, result)))
            return result

        return call
