"""`furiosa-opt new NAME`: a kernel package scaffolded from the base template.

The template is `examples/base-template`: an installed wheel carries a copy as package data (see
setup.py), a checkout reads the example itself. Every `base_template` / `base-template` in paths and
text becomes the new package's import / distribution name, so its kernels, host programs and tests
work at once (`cd NAME && pytest`).
"""

from __future__ import annotations

import argparse
import keyword
import re
import shutil
import sys
from importlib import resources
from pathlib import Path

import furiosa_opt

SKIP = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache", "target")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


class NewError(Exception):
    """A package that cannot be created here; the message says why."""


def template() -> Path:
    """The base template: the wheel's copy, else the checkout's example package."""
    packaged = resources.files(furiosa_opt) / "templates" / "base-template"
    checkout = Path(furiosa_opt.__file__).resolve().parents[2] / "examples" / "base-template"
    for candidate in (Path(str(packaged)), checkout):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    raise NewError("the base template is missing from this installation (reinstall furiosa-opt)")


def names(name: str) -> tuple[str, str]:
    """(distribution name, import name) of NAME, or a NewError saying what is wrong with it."""
    if not _NAME.match(name):
        raise NewError(f"`{name}` is not a package name: use letters, digits, `-` and `_`, starting with a letter")
    module = name.replace("-", "_").lower()
    if keyword.iskeyword(module) or module in sys.stdlib_module_names or module in {"furiosa_opt", "base_template"}:
        raise NewError(f"`{name}` would shadow the module `{module}`; choose another name")
    return module.replace("_", "-"), module


def create(name: str, parent: Path) -> Path:
    """Copy the template to `parent/NAME`, renamed; refuses to touch an existing path."""
    distribution, module = names(name)
    root = parent / name
    if root.exists():
        raise NewError(f"`{root}` already exists")
    staging = parent / f".{name}.new"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(template(), staging, ignore=SKIP)
    (staging / "src" / "base_template").rename(staging / "src" / module)
    for path in staging.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".toml", ".md"}:
            text = path.read_text()
            path.write_text(text.replace("base_template", module).replace("base-template", distribution))
    staging.rename(root)  # the package appears whole or not at all
    return root


def run_new(options: argparse.Namespace) -> int:
    try:
        root = create(options.name, Path.cwd())
    except (NewError, OSError) as error:
        print(f"error: furiosa-opt new: {error}", file=sys.stderr)
        return 1
    print(f"     Created kernel package `{options.name}` in {root}", file=sys.stderr)
    print(f"        Next cd {options.name} && pytest && furiosa-opt compile", file=sys.stderr)
    return 0
