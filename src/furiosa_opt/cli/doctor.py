"""`furiosa-opt doctor`: what this machine gives furiosa-opt, and what is wrong with it.

One line per check — Python, dependencies, environment variables, device, output directory, the
workspace and its cache — marked `ok`, `note` or `problem`; any problem makes the exit status 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import sys
from importlib import metadata
from pathlib import Path

from furiosa_opt import __version__, env
from furiosa_opt.cli.compile import targets
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.workspace import Package, WorkspaceError, locate, select
from furiosa_opt.files import printable

REQUIRED = ("numpy", "ml_dtypes", "msgpack", "rich")
FOR_TESTS = ("pytest", "hypothesis", "playwright")
PYTHON_FLOOR = (3, 11)


class Report:
    def __init__(self) -> None:
        self.problems = 0

    def line(self, status: str, what: str, detail: str) -> None:
        self.problems += status == "problem"
        print(f"{status:>8}  {what:<22} {detail}")


def run_doctor(options: argparse.Namespace) -> int:
    report = Report()
    _python(report)
    _dependencies(report)
    _environment(report)
    _workspace(report, options.package)
    verdict = "no problems found" if not report.problems else f"{report.problems} problem(s)"
    print(f"\nfuriosa-opt {__version__}: {verdict}")
    return 1 if report.problems else 0


def _python(report: Report) -> None:
    ok = sys.version_info[:2] >= PYTHON_FLOOR
    floor = ".".join(map(str, PYTHON_FLOOR))
    detail = f"{platform.python_version()} at {sys.executable}" + ("" if ok else f" (furiosa-opt needs ≥ {floor})")
    report.line("ok" if ok else "problem", "python", detail)


def _dependencies(report: Report) -> None:
    for name in REQUIRED + FOR_TESTS:
        try:
            report.line("ok", name, metadata.version(name))
        except metadata.PackageNotFoundError:
            needed = "required" if name in REQUIRED else "needed by `make test` only"
            report.line("problem" if name in REQUIRED else "note", name, f"not installed ({needed})")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    report.line("ok" if browser else "note", "chromium", browser or "not found (the viewer's browser tests need it)")


def _environment(report: Report) -> None:
    for name, read in (("FURIOSA_OPT_BACKEND", env.backend), ("FURIOSA_OPT_DEVICE", env.device),
                       ("FURIOSA_OPT_SCHEDULER", env.scheduler)):  # fmt: skip
        try:
            report.line("ok", name, read())
        except env.EnvError as error:
            report.line("problem", name, str(error))
    if os.environ.get("FURIOSA_OPT_DEVICE", "").strip() == "rngd":
        report.line("problem", "device", "rngd needs FuriosaAI's SDK and binary format, which this build lacks")
    else:
        report.line("ok", "device", "sim: with FURIOSA_OPT_BACKEND=npu kernels run from their EDF on the TCP simulator")


def _workspace(report: Report, names: list[str]) -> None:
    try:
        workspace = locate(Path.cwd())
        packages = select(workspace, names)
    except WorkspaceError as error:
        if error.diagnostic.code == "no-package":
            report.line("note", "workspace", f"none here ({error})")
        else:  # a pyproject.toml that does not parse or holds a wrong value, a package without its sources
            span = next(iter(error.diagnostic.spans), None)
            where = f"{span.file}:{span.line}: " if span is not None else ""
            report.line("problem", "workspace", printable(f"{where}{error}"))
        return
    report.line("ok", "workspace", f"{workspace.root} ({', '.join(p.name for p in packages) or 'no packages'})")
    for package in packages:
        _installed(report, package)
    try:
        out = cache.out_dir(workspace.root)
    except env.EnvError as error:
        report.line("problem", "output directory", str(error))
        return
    writable = _writable(out)
    report.line("ok" if writable else "problem", "output directory", f"{out}" + ("" if writable else " (not writable)"))
    found, problems = targets(packages)
    for problem in problems:
        report.line("problem", "source", problem.message)
    fresh = 0
    for target in found:
        try:
            fresh += not cache.changes(target.source, target.package.root, target.package.source, out)
        except (cache.ArtifactError, OSError) as error:
            report.line("problem", "kernel", printable(f"{target.source.identity}: {error}"))
    report.line("ok", "kernels", f"{len(found)} found, {fresh} compiled and up to date, {len(found) - fresh} not")


def _installed(report: Report, package: Package) -> None:
    """Whether `python -m PKG.module` finds this package: installed, and importing from these sources."""
    install = f"`pip install -e {package.root}`"
    try:
        metadata.distribution(package.name)
        spec = importlib.util.find_spec(package.imports[0])
    except (metadata.PackageNotFoundError, ImportError, ValueError):
        report.line("problem", "installed", f"{package.name} is not installed: `python -m {package.imports[0]}."
                    f"…` cannot find it; run {install}")  # fmt: skip
        return
    origin = Path(spec.origin or "").resolve() if spec is not None else None
    if origin is None or not origin.is_relative_to(package.source.resolve()):
        report.line("problem", "installed", printable(f"`import {package.imports[0]}` loads {origin}, not this "
                    f"package's {package.source}; run {install}"))  # fmt: skip
        return
    report.line("ok", "installed", f"{package.name} (editable, from {package.source})")


def _writable(folder: Path) -> bool:
    """Whether artifacts could be written under `folder` (it may not exist yet)."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    return existing is not None and existing.is_dir() and os.access(existing, os.W_OK)
