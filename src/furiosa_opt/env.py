"""The only reader of `os.environ`: every knob of furiosa-opt, typed, with its default.

| variable | meaning | default | cache key |
|---|---|---|---|
| `FURIOSA_OPT_OUT_DIR` | artifact directory (relative to the cwd) | `<workspace>/target/furiosa-opt/kernel` | no |
| `FURIOSA_OPT_SCHEDULER` | `list` (reorders independent work) or `inorder` (program order) | `list` | yes |
| `FURIOSA_OPT_BACKEND` | `cpu` or `npu` (what `launch` runs on) | `cpu` | no |
| `FURIOSA_OPT_DEVICE` | `sim` (the TCP simulator) or `rngd` (hardware: not supported by this build) | `sim` | no |
| `FURIOSA_OPT_SKIP_PRESTEP` | `1`: the wrapper runs its command without compiling (a test hook) | unset | no |
"""

from __future__ import annotations

import os
from pathlib import Path

SCHEDULERS = ("list", "inorder")
BACKENDS = ("cpu", "npu")
DEVICES = ("sim", "rngd")
KEY_VARIABLES = ("FURIOSA_OPT_SCHEDULER",)


class EnvError(ValueError):
    """A furiosa-opt environment variable holds a value it does not accept."""


def out_dir() -> Path | None:
    value = os.environ.get("FURIOSA_OPT_OUT_DIR", "").strip()
    return Path(value).resolve() if value else None


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
