"""The only reader of `os.environ`: every knob of furiosa-opt, typed, with its default.

| variable | meaning | default | cache key |
|---|---|---|---|
| `FURIOSA_OPT_OUT_DIR` | artifact directory (relative to the cwd) | `<workspace>/target/furiosa-opt/kernel` | no |
| `FURIOSA_OPT_SCHEDULER` | `list` (reorders independent work) or `inorder` (program order) | `list` | yes |
| `FURIOSA_OPT_BACKEND` | `cpu` or `npu` (what `launch` runs on) | `cpu` | no |
| `FURIOSA_OPT_DEVICE` | `sim` (the TCP simulator) or `rngd` (hardware: not supported by this build) | `sim` | no |
| `FURIOSA_OPT_SKIP_PRESTEP` | `1`: the wrapper runs its command without compiling (a test hook) | unset | no |
| `FURIOSA_OPT_SIM_MEMORY` | host memory the simulator may plan to use (`512M`, `4G`) | `sim_memory_budget` | no |
| `FURIOSA_OPT_PROFILE` | `info`, `debug`: launches log spans (or upstream's `TUC_PROFILE_LEVEL`) | `off` | no |
| `FURIOSA_OPT_PROFILE_OUT` | a file: launches write a Perfetto trace of the simulated run there | unset | no |
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

SCHEDULERS = ("list", "inorder")
PROFILE_LEVELS = ("off", "info", "debug", "trace")  # upstream's `trace` records what `debug` does here
BACKENDS = ("cpu", "npu")
DEVICES = ("sim", "rngd")
KEY_VARIABLES = ("FURIOSA_OPT_SCHEDULER",)


class EnvError(ValueError):
    """A furiosa-opt environment variable holds a value it does not accept."""


def out_dir() -> Path | None:
    """The artifact directory the variable names (resolved), or None when unset; refused when it names
    something that is not a directory."""
    value = os.environ.get("FURIOSA_OPT_OUT_DIR", "").strip()
    if not value:
        return None
    if "\0" in value:
        raise EnvError("FURIOSA_OPT_OUT_DIR holds a NUL character")
    path = Path(value).resolve()
    if path.exists() and not path.is_dir():
        raise EnvError(f"FURIOSA_OPT_OUT_DIR={value!r} is not a directory")
    return path


def _choice(name: str, choices: tuple[str, ...]) -> str:
    """The variable's value (its first choice when unset), refusing anything else by name."""
    value = os.environ.get(name, "").strip() or choices[0]
    if value not in choices:
        raise EnvError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def scheduler() -> str:
    return _choice("FURIOSA_OPT_SCHEDULER", SCHEDULERS)


def backend() -> str:
    return _choice("FURIOSA_OPT_BACKEND", BACKENDS)


def device() -> str:
    return _choice("FURIOSA_OPT_DEVICE", DEVICES)


_SIZE = re.compile(r"(\d+)\s*([KMGT]?)(i?B)?\Z", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
SIM_MEMORY_CEILING = 16 << 30  # the default budget never exceeds this, whatever the machine has


def parse_size(text: str) -> int:
    """A byte count written `4096`, `512K`, `64M`, `4G`, `1T` (binary units; `MiB`, `GB` accepted);
    a ValueError says what is wrong."""
    found = _SIZE.match(text.strip())
    if not found or int(found[1]) < 1:
        raise ValueError(f"{text!r} is not a size (a positive number of bytes, or with K, M, G or T: `512M`, `4G`)")
    return int(found[1]) * _UNITS[found[2].upper()]


def sim_memory_budget() -> int:
    """How much host memory `python -m furiosa_opt.sim` may plan to use: `FURIOSA_OPT_SIM_MEMORY`, else half
    of the machine's physical memory, at most half the process's address-space limit and at most
    `SIM_MEMORY_CEILING`."""
    value = os.environ.get("FURIOSA_OPT_SIM_MEMORY", "").strip()
    if value:
        try:
            return parse_size(value)
        except ValueError as error:
            raise EnvError(f"FURIOSA_OPT_SIM_MEMORY: {error}") from None
    budget = SIM_MEMORY_CEILING
    with contextlib.suppress(AttributeError, ValueError, OSError):  # not knowable here: the ceiling stands
        budget = min(budget, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY:
            budget = min(budget, limit // 2)
    return budget


def profile_level() -> str:
    """How much NPU launches record: `FURIOSA_OPT_PROFILE`, else upstream's `TUC_PROFILE_LEVEL` (any case)."""
    for name in ("FURIOSA_OPT_PROFILE", "TUC_PROFILE_LEVEL"):
        value = os.environ.get(name, "").strip().lower()
        if value:
            if value not in PROFILE_LEVELS:
                raise EnvError(f"{name}={value!r} is not one of {', '.join(PROFILE_LEVELS)}")
            return value
    return "off"


def profile_out() -> Path | None:
    """Where NPU launches write their Perfetto trace (`FURIOSA_OPT_PROFILE_OUT`), or None."""
    value = os.environ.get("FURIOSA_OPT_PROFILE_OUT", "").strip()
    if "\0" in value:
        raise EnvError("FURIOSA_OPT_PROFILE_OUT holds a NUL character")
    return Path(value).resolve() if value else None


def skip_prestep() -> bool:
    """Test hook: lets a test show that the runtime never compiles what the wrapper did not."""
    return os.environ.get("FURIOSA_OPT_SKIP_PRESTEP", "").strip() == "1"


def child_environment(out: Path, sources: list[Path]) -> dict[str, str]:
    """The environment of a command the wrapper runs: the NPU backend, its artifacts, the packages importable."""
    python_path = [str(p) for p in sources] + [p for p in [os.environ.get("PYTHONPATH", "")] if p]
    extra = {"FURIOSA_OPT_BACKEND": "npu", "FURIOSA_OPT_OUT_DIR": str(out), "PYTHONPATH": os.pathsep.join(python_path)}
    return {**os.environ, **extra}


def key_environment() -> dict[str, str]:
    """The variables that can change generated code, as they are set now (for the cache key)."""
    return {name: os.environ.get(name, "") for name in KEY_VARIABLES}
