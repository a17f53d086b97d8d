"""Kernel packages and workspaces (docs/design.md, same title): finding them, selecting them, importing them.

A kernel package is a Python project whose pyproject.toml says `[tool.furiosa-opt] kernel-package =
true`; a workspace's pyproject.toml lists member globs under `[tool.furiosa-opt-workspace]`. Selection
follows cargo: inside a member the default is that member, at the workspace root every member, and
`-p NAME` picks by import name or distribution name.
"""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from furiosa_opt.compiler.diagnostics import Diagnostic, Span, from_error


class WorkspaceError(Exception):
    """A workspace or package that cannot be used; carries its diagnostic."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic
        super().__init__(diagnostic.message)


@dataclass
class Package:
    name: str  # distribution name
    root: Path
    source: Path  # the directory that holds the import packages (src/ or the root)
    imports: tuple[str, ...]  # import package names
    bins: dict[str, str] = field(default_factory=dict)

    def modules(self) -> list[tuple[str, Path]]:
        """(module name, file) of every module of the import packages, in a stable order."""
        found = []
        for name in self.imports:
            for path in sorted((self.source / name).rglob("*.py")):
                parts = path.relative_to(self.source).with_suffix("").parts
                module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                found.append((module, path))
        return found


@dataclass
class Workspace:
    root: Path
    packages: list[Package]
    default: list[Package]


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        where = re.search(r"line (\d+), column (\d+)", str(error))
        line, column = (int(where[1]), int(where[2])) if where else (1, 1)
        raise WorkspaceError(
            Diagnostic(
                "pyproject", f"cannot read {path.name}: {error}", "workspace", spans=[Span(str(path), line, column)]
            )
        ) from None


def _package(root: Path, config: dict) -> Package:
    source = root / "src" if (root / "src").is_dir() else root
    imports = tuple(sorted(p.parent.name for p in source.glob("*/__init__.py")))
    name = config.get("project", {}).get("name") or root.name
    bins = config.get("tool", {}).get("furiosa-opt", {}).get("bins", {})
    if not imports:
        raise WorkspaceError(
            Diagnostic(
                "package-layout",
                f"kernel package `{name}` has no importable package under {source} (expected <name>/__init__.py)",
                "workspace",
            )
        )
    return Package(name, root, source, imports, dict(bins))


def _is_kernel_package(config: dict) -> bool:
    return bool(config.get("tool", {}).get("furiosa-opt", {}).get("kernel-package", False))


def _members(root: Path, config: dict) -> list[Package]:
    globs = config.get("tool", {}).get("furiosa-opt-workspace", {}).get("members", [])
    found = []
    for pattern in globs:
        for path in sorted(root.glob(pattern)):
            project = path / "pyproject.toml"
            if project.is_file():
                member = _read(project)
                if _is_kernel_package(member):
                    found.append(_package(path, member))
    return found


def locate(start: Path) -> Workspace:
    """The workspace (or lone package) around `start`, with the default selection."""
    start = start.resolve()
    member: Package | None = None
    for directory in (start, *start.parents):
        project = directory / "pyproject.toml"
        if not project.is_file():
            continue
        config = _read(project)
        if "furiosa-opt-workspace" in config.get("tool", {}):
            packages = _members(directory, config)
            chosen = [p for p in packages if member and p.root == member.root]
            return Workspace(directory, packages, chosen or packages)
        if member is None and _is_kernel_package(config):
            member = _package(directory, config)
    if member is not None:
        return Workspace(member.root, [member], [member])
    raise WorkspaceError(
        Diagnostic(
            "no-package",
            f"no kernel package or workspace found from {start} (a "
            "pyproject.toml with [tool.furiosa-opt] kernel-package = true)",
            "workspace",
        )
    )


def select(workspace: Workspace, names: list[str]) -> list[Package]:
    if not names:
        return workspace.default
    chosen = []
    for name in names:
        matches = [p for p in workspace.packages if name == p.name or name in p.imports]
        if not matches:
            known = ", ".join(sorted(p.name for p in workspace.packages)) or "none"
            raise WorkspaceError(
                Diagnostic(
                    "unknown-package", f"package `{name}` is not in the workspace (packages: {known})", "workspace"
                )
            )
        chosen += [p for p in matches if p not in chosen]
    return chosen


def import_module(package: Package, module_name: str, path: Path) -> tuple[object | None, Diagnostic | None]:
    """Import one module of the package; a failure is a diagnostic at the user's line."""
    if str(package.source) not in sys.path:
        sys.path.insert(0, str(package.source))
    try:
        return importlib.import_module(module_name), None
    except SyntaxError as error:
        span = Span(str(path), error.lineno or 1, error.offset or 1)
        return None, Diagnostic("syntax-error", f"{error.msg}", "import", module_name, [span])
    except Exception as error:  # an import failure inside user code: report it, keep going
        return None, from_error(error, "import", module_name)
