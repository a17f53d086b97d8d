"""Atomic file writes — every artifact, cache record and dump furiosa-opt writes goes through here — and the
checks on names and text that come from files: kernel identities (which name artifact files), paths kept
inside a folder, and control characters escaped before they reach a terminal."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that a reader sees the old file or the new one, never a partial one:
    a fresh temporary file in the same directory (created with the usual permission mask), fsync,
    `os.replace`, fsync of the directory. Missing parent directories are created; on failure the
    temporary file is removed and the OSError propagates, naming `path` (or the directory it could not
    create), never the temporary name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _write_through(path, data)
    except OSError as error:
        temporary = error.filename is None or Path(error.filename).name.startswith(f".{path.name}.")
        if temporary and error.strerror is not None:
            raise type(error)(error.errno, error.strerror, str(path)) from error
        raise


def _write_through(path: Path, data: bytes) -> None:
    temporary: Path | None = None
    try:
        while True:
            temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
                break
            except FileExistsError:
                continue
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        temporary = None
        _fsync_directory(path.parent)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                temporary.unlink()


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable where the platform allows opening a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


# ---- names and text that come from files ---------------------------------------------------------------

# C0 and C1 controls, DEL, and the Unicode bidirectional overrides and isolates: what can move a terminal's
# cursor, change its colours, set its title (OSC) or make text read in another order than it is stored.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_IDENTITY_PART = re.compile(r"[\w-]+\Z")  # a module or function name (pytest's importlib names may hold `-`)
IDENTITY_BYTES = 200  # a kernel identity plus `.json` must fit a file name (255 bytes on common file systems)


def printable(text: str) -> str:
    """`text` safe to show on a terminal: every control character (escape sequences, carriage return, bell,
    newline, bidirectional overrides) is written as its Python escape, `\\x1b`, `\\n`, `\\u202e`."""
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


def identity_problem(identity: object) -> str | None:
    """Why `identity` cannot name a kernel (and so its artifact files), or None: a kernel identity is dotted
    names (`package.module.function`), each made of letters, digits, `_` and `-`; nothing that a path
    could read as a separator, a parent directory or a root."""
    if not isinstance(identity, str) or not identity:
        return "a kernel identity is a non-empty string"
    if len(identity.encode("utf-8", "surrogatepass")) > IDENTITY_BYTES:
        return f"a kernel identity is at most {IDENTITY_BYTES} bytes"
    if not all(_IDENTITY_PART.match(part) for part in identity.split(".")):
        return f"`{printable(identity)}` is not a kernel identity (dotted names: `package.module.function`)"
    return None


AXIS_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*\Z")


def axis_problem(name: object, size: object) -> str | None:
    """Why `name = size` cannot declare an axis (in a kernel or a file that lists its axes), or None."""
    if not isinstance(name, str) or not AXIS_NAME.match(name):
        return f"axis name `{name}` must start with an uppercase ASCII letter followed by letters, digits or `_`"
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return f"axis `{name}` needs a positive integer size, got {size!r}"
    return None


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` lies inside `folder` once both are resolved (symbolic links and `..` followed)."""
    return Path(path).resolve().is_relative_to(Path(folder).resolve())


# A mapping's `{…}` escape runs Python (mapping/parse.py), so from a file (an EDF, a vISA text) only the
# padding markers `#{*}`, `#{!}`, `#{0}` may use braces. No printed value or mapping spells a special name or
# a string either, so a file's text that does is refused before any reader sees it.
_PAD_MARKER = re.compile(r"#\s*\{\s*[*!0]\s*\}")
_NOT_PRINTED = re.compile(r"__|['\"`\\]")


def expression_problem(text: str) -> str | None:
    """Why a mapping or printed value from a file must not be parsed (it could run code), or None."""
    if "{" in _PAD_MARKER.sub("", text) or "}" in _PAD_MARKER.sub("", text):
        return "holds a `{…}` Python expression, which only source code may"
    found = _NOT_PRINTED.search(text)
    if found is not None:
        return f"holds `{found.group()}`, which no printed value or mapping has"
    return None
