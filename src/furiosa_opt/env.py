"""The only reader of `os.environ`: every knob of furiosa-opt, typed, with its default.

| variable | meaning | default | cache key |
|---|---|---|---|
| `FURIOSA_OPT_OUT_DIR` | artifact directory (relative to the cwd) | `<workspace>/target/furiosa-opt/kernel` | no |
| `FURIOSA_OPT_SCHEDULER` | `list` (reorders independent work) or `inorder` (program order) | `list` | yes |
| `FURIOSA_OPT_BACKEND` | `cpu` or `npu` (what `launch` runs on) | `cpu` | no |
| `FURIOSA_OPT_DEVICE` | `sim` (the TCP simulator) or `rngd` (hardware: not supported by this build) | `sim` | no |
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


def key_environment() -> dict[str, str]:
    """The variables that can change generated code, as they are set now (for the cache key)."""
    return {name: os.environ.get(name, "") for name in KEY_VARIABLES}
