"""Errors that point at the user's source: every refused program goes through `VerifyError`.

An error records the first stack frame outside the furiosa_opt package (the kernel line that asked
for the operation), names the rule it broke, and renders like rustc. The traceback is cut so that the
user's frames are what they see, not the checker's.
"""

from __future__ import annotations

import dis
import functools
import linecache
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int
    function: str
    column: int = 1  # 1-based, of the expression that made the call
    end_line: int = 0
    end_column: int = 0

    @property
    def source(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_PASS_THROUGH: list[str] = []  # libraries that call back into furiosa_opt (torch's dispatcher): not the user's code


def pass_through(directory: str | Path) -> None:
    """Treat a library's frames as furiosa_opt's own: an error raised where that library called back into
    furiosa_opt points at the user's call into the library, and its frames leave the traceback.

        pass_through(Path(torch.__file__).parent)   # what furiosa_opt.torch does
    """
    _PASS_THROUGH.append(str(Path(directory).resolve()))
    is_internal.cache_clear()


@functools.lru_cache(maxsize=4096)
def is_internal(filename: str) -> bool:
    """Whether a code object's file is furiosa_opt's own, or a pass-through library's (resolved once per
    file name: every traced op walks its frames)."""
    resolved = str(Path(filename).resolve())
    return resolved.startswith(_PACKAGE_DIR) or any(resolved.startswith(d) for d in _PASS_THROUGH)


def user_location(depth: int = 1) -> Location | None:
    """The innermost frame that is not furiosa_opt's own code."""
    frame = sys._getframe(depth)
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    line, end_line, column, end_column = _position(code, frame.f_lasti, frame.f_lineno)
    return Location(code.co_filename, line, code.co_name, column, end_line, end_column)


def _position(code: types.CodeType, lasti: int, fallback_line: int) -> tuple[int, int, int, int]:
    """Where the call being executed is written. For a method call the span starts at the method's
    name (`.collect(` inside a long chain), not at the start of the chain."""
    call, methods = None, []
    for instruction in _instructions(code):
        if instruction.offset > lasti:
            break
        position = instruction.positions
        if instruction.opname in ("LOAD_METHOD", "LOAD_ATTR") and position is not None:
            methods.append((instruction, position))
        call = position  # the last instruction at or before lasti (which may point into its inline cache)
    if call is None or call.lineno is None or call.col_offset is None:
        return fallback_line, fallback_line, 1, 1
    end = (call.end_lineno or call.lineno, (call.end_col_offset or call.col_offset) + 1)
    for instruction, position in reversed(methods):  # the callee `….name` starts where the call starts
        if (position.lineno, position.col_offset) == (call.lineno, call.col_offset) and position.end_col_offset:
            start = position.end_col_offset - len(str(instruction.argval))
            return position.end_lineno or call.lineno, end[0], start + 1, end[1]
    return call.lineno, end[0], call.col_offset + 1, end[1]


@functools.lru_cache(maxsize=1024)
def _instructions(code: types.CodeType) -> tuple[dis.Instruction, ...]:
    return tuple(dis.get_instructions(code))


class FuriosaOptError(Exception):
    """Base of the errors furiosa-opt raises on purpose; `location` is the user's line when known.

    Examples:
        >>> I = axes(I=8)
        >>> try:
        ...     m["I / 3"]
        ... except FuriosaOptError as error:                # every error raised on purpose
        ...     print(type(error).__name__)
        MappingSyntaxError
    """

    location: Location | None = None


class VerifyError(FuriosaOptError):
    """A program that breaks a static rule of the hardware or of the vISA.

    `rule` is a stable kebab-case code (`collect-packet-mismatch`), `message` says what is wrong in the
    user's terms, `notes` add help lines; `location` is the user's line that asked for it.

    Examples:
        >>> error = VerifyError("collect-packet-mismatch", "Collect packet mismatch")
        >>> error.rule, str(error).splitlines()[0]
        ('collect-packet-mismatch', 'error[collect-packet-mismatch]: Collect packet mismatch')
    """

    def __init__(self, rule: str, message: str, notes: tuple[str, ...] = (), location: Location | None = None):
        self.rule, self.message, self.notes = rule, message, tuple(notes)
        self.location = location or user_location(2)
        super().__init__(message)

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        lines = [f"error[{self.rule}]: {self.message}"]
        if self.location is not None:
            number = str(self.location.line)
            pad = " " * len(number)
            lines += [
                f"{pad}--> {self.location}",
                f"{pad} |",
                f"{number} | {self.location.source}",
                f"{pad} |",
            ]
        lines += [f"  = note: {note}" for note in self.notes]
        return "\n".join(lines)


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The same traceback without furiosa_opt's frames (user code the error passed through stays)."""
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = [t for t in frames if not is_internal(t.tb_frame.f_code.co_filename)]
    result = None
    for t in reversed(kept):
        result = types.TracebackType(result, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return result


F = TypeVar("F")

ErrorCollector = Callable[[FuriosaOptError], bool]
"""Takes a refused operation's error; True means it was kept and the program may go on."""

# The collector of the tracer that is running, if any. It lives here rather than being looked up on the
# active backend so that this bottom-layer module imports nothing above it: the tracer installs itself.
_COLLECTOR: ContextVar[ErrorCollector | None] = ContextVar("furiosa_opt_error_collector", default=None)


@contextmanager
def collecting(collector: ErrorCollector) -> Iterator[None]:
    """Hand errors raised by `user_facing` entry points to `collector` for the duration of the block."""
    token = _COLLECTOR.set(collector)
    try:
        yield
    finally:
        _COLLECTOR.reset(token)


_depth = threading.local()


def user_facing(function: F) -> F:
    """Public entry points re-raise furiosa-opt errors with the checker's frames removed.

    While a tracer collects diagnostics (several independent errors per kernel, see `collecting`),
    the outermost entry point hands the error to it and returns a poisoned value instead; calls on or
    with poisoned values are skipped, so one mistake is reported once."""

    @functools.wraps(function)  # type: ignore[arg-type]
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        absorb = _COLLECTOR.get()
        if absorb is not None and any(isinstance(a, Poisoned) for a in (*args, *kwargs.values())):
            return POISONED
        outermost = getattr(_depth, "value", 0) == 0
        _depth.value = getattr(_depth, "value", 0) + 1
        try:
            return function(*args, **kwargs)  # type: ignore[operator]
        except FuriosaOptError as error:
            if absorb is not None and outermost and absorb(error):
                return POISONED
            raise error.with_traceback(_user_traceback(error.__traceback__)) from None
        finally:
            _depth.value -= 1

    return wrapper  # type: ignore[return-value]


class Poisoned:
    """What a refused operation returns while diagnostics are being collected: absorbs every use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self

    def __repr__(self) -> str:
        return "<poisoned: an earlier operation was refused>"


POISONED = Poisoned()
