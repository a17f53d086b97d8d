"""Where an op is in the user's source, as stage 2 reports it: a refusal's location (`location`, `at`) and a
command's `file:line` (`loc_text`, relative to the package root when the file is under it, so the LIR does
not depend on where the package lives)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from furiosa_opt.compiler import visa
from furiosa_opt.diagnostics import Location, VerifyError


def location(op: visa.Op | None) -> Location | None:
    """`op`'s line (None for no op, or an op with no source location)."""
    if op is None or op.loc is None:
        return None
    return Location(op.loc.file, op.loc.line, op.opcode, op.loc.column)


@contextmanager
def at(op: visa.Op | None) -> Iterator[None]:
    """Refusals raised inside point at `op`'s line."""
    try:
        yield
    except VerifyError as error:
        error.location = location(op)
        raise


def loc_text(loc: visa.Loc | None, root: Path | None) -> str | None:
    """`file:line` of a source location, the file relative to `root` when it lies under it."""
    if loc is None:
        return None
    path = Path(loc.file)
    if root is not None and path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
        path = path.resolve().relative_to(root.resolve())
    return f"{path.as_posix()}:{loc.line}"
