"""A kernel's search space, declared beside it in plain Python, and the assignment its module reads.

A kernel module declares named choices, each a list of integers or mapping strings whose first value is
the default (today's layout), and reads the assignment as constants when it is imported:

    choices = space(tile_i=[32, 16, 64], cluster=["1 # 2", "I / 256"])
    Slice = m[f"I / {choices.tile_i}, J / 32"]

The assignment is, in order: the one a tuning trial gave this module (`assign`, in the trial's own worker
process), else the tuned file beside the module (`gemm_kernel.tuned.json`, written by `furiosa-opt tune`),
else the defaults. The file is opened while the module is imported, so the compiler's cache records it as
data of the kernel: editing it, creating it or deleting it recompiles the kernel (`compiler/cache.py`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from furiosa_opt.diagnostics import Location, VerifyError

Value = int | str
TUNED_SUFFIX = ".tuned.json"
_ASSIGNED: dict[str, Path] = {}  # module name → the file holding a trial's assignment (set in its worker)


@dataclass(frozen=True)
class Space:
    """The declared choices (name → values, the first the default) and the assignment in force.

    Attributes read the assigned value (`choices.tile_i`); `options` and `defaults` describe the space to
    the tuner; `source` says where the assignment came from (`defaults` or a file).

    Examples:
        >>> choices = space(tile=[32, 64])
        >>> list(choices), choices.tile
        (['tile'], 32)
    """

    options: dict[str, tuple[Value, ...]]
    values: dict[str, Value]
    source: str

    def __getattr__(self, name: str) -> Value:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"the search space has no choice `{name}` (it has {', '.join(values) or 'none'})")

    def __iter__(self) -> Iterator[str]:
        return iter(self.options)

    @property
    def defaults(self) -> dict[str, Value]:
        return {name: values[0] for name, values in self.options.items()}


def space(**choices: list[Value]) -> Space:
    """Declare the module's named choices and return the assignment in force for it.

    Each keyword names a choice and lists its values, integers or mapping strings; the first is the default,
    which must reproduce the kernel as it was before it was tuned. In a kernel module:

        choices = space(tile_i=[32, 16, 64], tile_j=[32, 64, 128])
        Slice = m[f"I / {choices.tile_i}, J / {choices.tile_j}"]

    Examples:
        >>> choices = space(tile=[32, 64], split=["1 # 2", "I / 256"])
        >>> choices.tile, choices.split, choices.source  # no tuned file beside this module: the defaults
        (32, '1 # 2', 'defaults')
        >>> choices.options["tile"], choices.defaults
        ((32, 64), {'tile': 32, 'split': '1 # 2'})
    """
    caller = sys._getframe(1)
    location = Location(caller.f_code.co_filename, caller.f_lineno, caller.f_code.co_name)
    options = {name: _options(name, values, location) for name, values in choices.items()}
    if not options:
        raise VerifyError("tune-space", "space() needs at least one named choice: space(tile=[32, 64])", (), location)
    module, module_file = caller.f_globals.get("__name__", ""), caller.f_globals.get("__file__")
    file = _ASSIGNED.get(module) or (tuned_path(Path(module_file)) if module_file else None)
    values = read_assignment(file, options) if file is not None else None  # no file: a session, `exec`
    return Space(
        options, {**{n: v[0] for n, v in options.items()}, **(values or {})}, str(file) if values else "defaults"
    )


RESERVED = ("options", "values", "source", "defaults")  # the attributes of a Space itself


def _options(name: str, values: object, location: Location) -> tuple[Value, ...]:
    """The values of one choice, checked: a non-empty list of distinct integers or non-empty strings."""
    if name.startswith("_") or name in RESERVED:
        raise VerifyError(
            "tune-space", f"`{name}` cannot name a choice (reserved: {', '.join(RESERVED)})", (), location
        )
    if not isinstance(values, (list, tuple)) or not values:
        raise VerifyError("tune-space", f"choice `{name}` needs a non-empty list of values", (), location)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
            shown = repr(value)[:40]
            raise VerifyError("tune-space", f"choice `{name}`: {shown} is not an integer or a mapping string", (),
                              location)  # fmt: skip
    if len(set(values)) != len(values):
        raise VerifyError("tune-space", f"choice `{name}` lists a value twice: {list(values)}", (), location)
    return tuple(values)


def tuned_path(module_file: Path) -> Path:
    """The tuned-choices file of a kernel module: `gemm_kernel.py` → `gemm_kernel.tuned.json` beside it."""
    return module_file.with_name(module_file.stem + TUNED_SUFFIX)


def read_assignment(file: Path, options: dict[str, tuple[Value, ...]]) -> dict[str, Value] | None:
    """The choices a tuned or trial file sets, checked against the space; None when there is no file.

    The file is opened even when it may be absent, so that the cache records its absence too. A file that
    is not a JSON object with `choices`, or that names a choice or value the space does not hold, is a
    one-line error at the file (the space changed since it was tuned: tune again or delete it)."""
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        _refuse(file, f"cannot read it: {error.strerror or error}")
    try:
        record = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        _refuse(file, f"not JSON ({error})")
    chosen = record.get("choices") if isinstance(record, dict) else None
    if not isinstance(chosen, dict):
        _refuse(file, 'not a tuned-choices file (a JSON object with "choices": {name: value})')
    for name, value in chosen.items():
        if name not in options:
            _refuse(file, f"sets `{name}`, which the space does not declare ({', '.join(options)})")
        if isinstance(value, bool) or value not in options[name]:
            allowed = ", ".join(map(repr, options[name]))
            _refuse(file, f"sets `{name}` = {value!r}, not one of the space's values ({allowed})")
    return dict(chosen)


def _refuse(file: Path, problem: str) -> None:
    message = f"{file}: {problem}; tune again or delete the file"
    raise VerifyError("tune-choices", message, (), Location(str(file), 1, "<tuned choices>"))


def assign(module: str, file: Path) -> None:
    """Make `module`'s space read its assignment from `file` (a trial's, in the trial's own worker process,
    before the module is imported)."""
    _ASSIGNED[module] = Path(file)


def choices_json(choices: dict[str, Value], **facts: object) -> bytes:
    """The bytes of a tuned or trial file: the choices and what was measured with them."""
    return (json.dumps({"choices": choices, **facts}, indent=1, sort_keys=True) + "\n").encode()
