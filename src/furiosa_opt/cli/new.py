"""`furiosa-opt new NAME`: a kernel package scaffolded from the base template.

The template is `examples/base-template`: an installed wheel carries a copy as package data (see
setup.py), a checkout reads the example itself. Every `base_template` / `base-template` in paths and
text becomes the new package's import / distribution name, so its kernels, host programs and tests
work at once (`cd NAME && pytest`).
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import re
import shutil
import sys
from importlib import metadata, resources
from pathlib import Path

import furiosa_opt
from furiosa_opt.files import printable

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
    """(distribution name, import name) of NAME, or a NewError saying what is wrong with it: a name that is
    not one, a keyword, or a module of the standard library, of furiosa-opt or of its dependencies (the
    package would shadow it: `import numpy` inside it would find the new package)."""
    if not _NAME.match(name):
        raise NewError(
            f"`{printable(name)}` is not a package name: use letters, digits, `-` and `_`, starting with a letter"
        )
    module = name.replace("-", "_").lower()
    if keyword.iskeyword(module) or module in sys.stdlib_module_names:
        raise NewError(f"`{name}` would shadow the standard library's module `{module}`; choose another name")
    if module in {"furiosa_opt", "base_template"} or module in dependencies():
        raise NewError(f"`{name}` would shadow `{module}`, which furiosa-opt needs; choose another name")
    return module.replace("_", "-"), module


def dependencies() -> set[str]:
    """The import names of furiosa-opt's dependencies — every requirement, extras included, and what those
    need in turn — as installed here, plus the names of the requirements themselves."""
    wanted, seen = [_requirements("furiosa-opt", extras=True)], set()
    while wanted:
        for distribution in wanted.pop():
            if distribution not in seen:
                seen.add(distribution)
                wanted.append(_requirements(distribution, extras=False))
    found = {d.replace("-", "_") for d in seen}
    for module, owners in metadata.packages_distributions().items():
        if any(_normal(owner) in seen for owner in owners):
            found.add(module.lower())
    return found


def _requirements(distribution: str, extras: bool) -> list[str]:
    """The normalised names of what a distribution requires (with its optional extras, or without)."""
    try:
        requirements = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return []
    kept = [r for r in requirements if extras or "extra" not in r.partition(";")[2]]
    return [_normal(found[0]) for r in kept if (found := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r))]


def _normal(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def installed_elsewhere(module: str) -> str | None:
    """Where an installed module of that name lives (the new package would be imported instead of it
    inside its own directory), or None."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return None if spec is None else str(spec.origin or (list(spec.submodule_search_locations or []) or ["?"])[0])


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
        _, module = names(options.name)
    except NewError as error:
        print(f"error: furiosa-opt new: {error}", file=sys.stderr)
        return 2
    elsewhere = installed_elsewhere(module)
    if elsewhere is not None:
        print(
            f"warning: furiosa-opt new: an installed module is also called `{module}` ({printable(elsewhere)}); "
            "inside the new package `import " + module + "` finds the package instead",
            file=sys.stderr,
        )
    try:
        root = create(options.name, Path.cwd())
    except (NewError, OSError) as error:
        print(f"error: furiosa-opt new: {printable(str(error))}", file=sys.stderr)
        return 1
    print(f"     Created kernel package `{options.name}` in {root}", file=sys.stderr)
    print(f"        Next cd {options.name} && pytest && furiosa-opt compile", file=sys.stderr)
    return 0
