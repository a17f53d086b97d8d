"""Which kernels a wrapped command needs (docs/design.md, "The furiosa-opt command"): those its targets import.

A command's targets are the files it will run (a host program, test files and their conftest.py); the
kernels it needs are the `@device` functions of every module those files import, transitively, read
from source with the import resolution the cache key uses (`cache.import_closure`: `import a.b`, `from
a import b` as name or submodule, relative imports, `from .kernel import *` re-exports). Nothing is
imported. Granularity is the module: a module the targets import brings all its kernels, one they never
import brings none.
"""

from __future__ import annotations

from pathlib import Path

from furiosa_opt.cli.compile import Target
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.workspace import Package

PYTHON_VALUE_OPTIONS = ("-W", "-X")  # python options that take the next argument


def needed(found: list[Target], files: list[Path], packages: list[Package]) -> list[Target]:
    """The kernels of `found` that `files` import, transitively, within the packages' source trees.

    A target outside the source trees (a test) has its directory as a root too, as pytest puts it on
    sys.path; a module inside them resolves its imports from its source tree alone."""
    sources = [p.source for p in packages]
    roots = sources + sorted({f.parent for f in files if not any(s in f.parents for s in sources)})
    reached = set(cache.import_closure(files, roots))
    return [t for t in found if t.source.file in reached]


def module_file(name: str, packages: list[Package]) -> Path | None:
    """The file of a dotted module name in one of the packages, if it is one of theirs."""
    return next((f for p in packages for f in cache.module_files(name, p.source)), None)


def bins(packages: list[Package]) -> dict[str, str]:
    """Host-program name → module, over the selected packages' `[tool.furiosa-opt.bins]`."""
    return {name: module for p in packages for name, module in p.bins.items()}


def run_files(target: str, packages: list[Package], cwd: Path) -> list[Path]:
    """`run NAME|MODULE|FILE`: the host program's file (none if it is not found)."""
    found = module_file(bins(packages).get(target, target), packages)
    path = cwd / target
    return [found] if found else [path.resolve()] if path.is_file() else []


def tested_files(args: list[str], cwd: Path) -> list[Path]:
    """pytest arguments that name test files, directories or node ids (`file.py::test`), with the
    conftest.py files pytest would load for them."""
    files: list[Path] = []
    for arg in args:
        path = (cwd / arg.split("::")[0]).resolve()
        if arg.startswith("-") or not path.exists():
            continue
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py"))
            files += sorted(path.rglob("conftest.py"))
        elif path.suffix == ".py":
            files.append(path)
        top = path if path.is_dir() else path.parent
        files += [d / "conftest.py" for d in (top, *top.parents) if cwd.resolve() in (d, *d.parents)]
    return sorted({f for f in files if f.is_file()})


def python_files(args: list[str], packages: list[Package], cwd: Path) -> list[Path]:
    """`python FILE`, `python -m MODULE` or `python -m pytest …` (anything else, such as `-c`, has no file target)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-m" and index + 1 < len(args) and args[index + 1] == "pytest":
            return tested_files(args[index + 2 :], cwd)
        if arg == "-m" and index + 1 < len(args):
            found = module_file(args[index + 1], packages)
            return [found] if found else []
        if arg == "-c" or arg == "-":
            return []
        if not arg.startswith("-"):
            path = cwd / arg
            return [path.resolve()] if path.is_file() else []
        index += 2 if arg in PYTHON_VALUE_OPTIONS else 1
    return []
