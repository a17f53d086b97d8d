"""Errors that point at the user's source: every refused program goes through `VerifyError`.

An error records the first stack frame outside the furiosa_opt package (the kernel line that asked
for the operation), names the rule it broke, and renders like rustc. The traceback is cut so that the
user's frames are what they see, not the checker's.
"""

from __future__ import annotations

import functools
import linecache
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

_PACKAGE_DIR = str(Path(__file__).resolve().parent)


@dataclass(frozen=True, slots=True)
class Location:
    file: str
    line: int
    function: str

    @property
    def source(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def _internal(filename: str) -> bool:
    return str(Path(filename).resolve()).startswith(_PACKAGE_DIR)


def user_location(depth: int = 1) -> Location | None:
    """The innermost frame that is not furiosa_opt's own code."""
    frame = sys._getframe(depth)
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return Location(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)


class FuriosaOptError(Exception):
    """Base of the errors furiosa-opt raises on purpose."""


class VerifyError(FuriosaOptError):
    """A program that breaks a static rule of the hardware or of the vISA.

    `rule` is a stable kebab-case code (`collect-packet-mismatch`), `message` says what is wrong in the
    user's terms, `notes` add help lines; `location` is the user's line that asked for it."""

    def __init__(self, rule: str, message: str, notes: tuple[str, ...] = (), location: Location | None = None):
        self.rule, self.message, self.notes = rule, message, tuple(notes)
        self.location = location or user_location(2)
        super().__init__(self.render())

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
    kept = [t for t in frames if not _internal(t.tb_frame.f_code.co_filename)]
    result = None
    for t in reversed(kept):
        result = types.TracebackType(result, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return result


F = TypeVar("F")


def user_facing(function: F) -> F:
    """Public entry points re-raise furiosa-opt errors with the checker's frames removed."""

    @functools.wraps(function)  # type: ignore[arg-type]
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)  # type: ignore[operator]
        except FuriosaOptError as error:
            raise error.with_traceback(_user_traceback(error.__traceback__)) from None

    return wrapper  # type: ignore[return-value]
