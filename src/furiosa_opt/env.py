"""The only reader of `os.environ`: every knob of furiosa-opt, typed, with its default.

| variable | meaning | default | cache key |
|---|---|---|---|
| `FURIOSA_OPT_OUT_DIR` | artifact directory (relative to the cwd) | `<workspace>/target/furiosa-opt/kernel` | no |
| `FURIOSA_OPT_SCHEDULER` | `list` (reorders independent work) or `inorder` (program order) | `list` | yes |
"""

from __future__ import annotations

import os
from pathlib import Path

SCHEDULERS = ("list", "inorder")
KEY_VARIABLES = ("FURIOSA_OPT_SCHEDULER",)


class EnvError(ValueError):
    """A furiosa-opt environment variable holds a value it does not accept."""


def out_dir() -> Path | None:
    value = os.environ.get("FURIOSA_OPT_OUT_DIR", "").strip()
    return Path(value).resolve() if value else None


def scheduler() -> str:
    value = os.environ.get("FURIOSA_OPT_SCHEDULER", "").strip() or "list"
    if value not in SCHEDULERS:
        raise EnvError(f"FURIOSA_OPT_SCHEDULER={value!r} is not one of {', '.join(SCHEDULERS)}")
    return value


def key_environment() -> dict[str, str]:
    """The variables that can change generated code, as they are set now (for the cache key)."""
    return {name: os.environ.get(name, "") for name in KEY_VARIABLES}
