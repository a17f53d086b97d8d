"""`furiosa-opt new NAME`: a kernel package scaffolded from the base template.

The template is `examples/base-template`: an installed wheel carries a copy as package data (see
setup.py), a checkout reads the example itself. Every `base_template` / `base-template` in paths and
text becomes the new package's import / distribution name, so its kernels, host programs and tests
work at once (`cd NAME && pytest`). Only the template's own files are copied: in a checkout those git
tracks, so what running the example leaves behind (`schedule.json`, `.benchmarks/`) stays out of every
new package. `python -m NAME.gemm` needs the package installed, which `new` says (`pip install -e .`).
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata, resources
from pathlib import Path

import furiosa_opt
from furiosa_opt.files import printable

SKIP = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache", "target")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_DESCRIPTION = re.compile(r"^description = .*$", re.MULTILINE)


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
    wanted, seen = [_requirements("furiosa-opt", extras=True)], {"furiosa-opt"}  # an extra may name its own
    while wanted:
        for distribution in wanted.pop():
            if distribution not in seen:
                seen.add(distribution)
                wanted.append(_requirements(distribution, extras=False))
    seen.discard("furiosa-opt")
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
    source = template()
    for relative in template_files(source):
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / relative, target)
    (staging / "src" / "base_template").rename(staging / "src" / module)
    for path in staging.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".toml", ".md"}:
            text = path.read_text()
            path.write_text(text.replace("base_template", module).replace("base-template", distribution))
    project = staging / "pyproject.toml"
    described = f'description = "RNGD kernels of {distribution}, written with furiosa-opt"'
    project.write_text(_DESCRIPTION.sub(described, project.read_text(), count=1))
    staging.rename(root)  # the package appears whole or not at all
    return root


def template_files(source: Path) -> list[Path]:
    """The template's files, relative to it: those git tracks when it lies in a checkout (what following
    the docs in the example leaves there is not the template), else every file but build leftovers."""
    try:
        listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z", "--", "."],
                                capture_output=True, check=True).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):  # no git, or not a checkout (an installed wheel's copy)
        listed = b""
    tracked = [Path(os.fsdecode(name)) for name in listed.split(b"\0") if name]
    if tracked:
        return sorted(p for p in tracked if (source / p).is_file())  # not one deleted in the work tree
    found = []
    for folder, directories, files in os.walk(source):
        skipped = SKIP(folder, directories + files)
        directories[:] = [d for d in directories if d not in skipped]
        found += [Path(folder, f).relative_to(source) for f in files if f not in skipped]
    return sorted(found)


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
    print(f"        Next cd {options.name} && pip install -e .", file=sys.stderr)
    print(f"             (so that `python -m {module}.gemm` finds the package from anywhere)", file=sys.stderr)
    print("        Then pytest (CPU backend), furiosa-opt test (NPU backend, on the simulator), furiosa-opt run gemm",
          file=sys.stderr)  # fmt: skip
    return 0
