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
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import has_control, printable


class WorkspaceError(FuriosaOptError):
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
                if not all(part.isidentifier() for part in parts):
                    continue  # not importable as a module (`my file.py`, `1st.py`): it holds no kernel
                module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                found.append((module, path))
        return found


@dataclass
class Workspace:
    root: Path
    packages: list[Package]
    default: list[Package]


def _read(path: Path) -> dict:
    """The pyproject.toml as TOML, with the tables and keys furiosa-opt reads checked (`check_config`); a
    file that cannot be read, is not UTF-8, is not TOML or holds a wrong value is a WorkspaceError at the
    file (and at the line of the key when it can be found)."""
    data = b""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
        for number, line in enumerate(text.split("\n"), 1):
            if has_control(line.replace("\t", " ").removesuffix("\r")):  # TOML allows none; do not echo it
                problem = f"cannot read {path.name}: line {number} holds a control character"
                raise WorkspaceError(Diagnostic("pyproject", f"{path}: {problem}", "workspace"))
        config = tomllib.loads(text)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise _problem(path, f"cannot read {path.name}: it is not UTF-8 text (byte {error.start})", line) from None
    except (OSError, tomllib.TOMLDecodeError, RecursionError) as error:
        where = re.search(r"line (\d+), column (\d+)", str(error))
        line, column = (int(where[1]), int(where[2])) if where else (1, 1)
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise _problem(path, f"cannot read {path.name}: {reason}", line, column) from None
    found = check_config(config)
    if found is not None:
        problem, key = found
        raise _problem(path, f"{path.name}: {problem}", _line_of(text, key))
    return config


def _problem(path: Path, message: str, line: int = 1, column: int = 1) -> WorkspaceError:
    span = Span(str(path), line, column)
    return WorkspaceError(Diagnostic("pyproject", printable(message), "workspace", spans=[span]))


def _line_of(text: str, key: str) -> int:
    """The first line that assigns `key` (`key = …`, `"key" = …`) or opens its table, else 1."""
    pattern = re.compile(rf"\s*(\"?{re.escape(key)}\"?\s*=|\[+[^\]]*\b{re.escape(key)}\b)")
    return next((number for number, line in enumerate(text.splitlines(), 1) if pattern.match(line)), 1)


def _table(config: object, *keys: str) -> object:
    for key in keys:
        config = config.get(key) if isinstance(config, dict) else None
    return config


def check_config(config: dict) -> tuple[str, str] | None:
    """(what is wrong, the key) with the values furiosa-opt reads from a pyproject.toml, or None: a kernel
    package's `project.name` a distribution name, `[tool.furiosa-opt]` a table with a boolean
    `kernel-package` and a `bins` table of module names, `[tool.furiosa-opt-workspace] members` a list of
    relative glob patterns."""
    for keys in (("project",), ("tool",), ("tool", "furiosa-opt"), ("tool", "furiosa-opt-workspace")):
        value = _table(config, *keys)
        if value is not None and not isinstance(value, dict):
            return f"`{'.'.join(keys)}` must be a table, not {_kind(value)}", keys[-1]
    name = _table(config, "project", "name")
    flag = _table(config, "tool", "furiosa-opt", "kernel-package")
    if flag is True and name is not None and not (isinstance(name, str) and _DISTRIBUTION.match(name)):
        return (
            f"`project.name` must be a distribution name (letters, digits, `-`, `_`, `.`), not {_shown(name)}",
            "name",
        )
    if flag is not None and not isinstance(flag, bool):
        return f"`[tool.furiosa-opt] kernel-package` must be true or false, not {_shown(flag)}", "kernel-package"
    bins = _table(config, "tool", "furiosa-opt", "bins")
    if bins is not None and not isinstance(bins, dict):
        return f'`[tool.furiosa-opt] bins` must be a table of NAME = "module", not {_kind(bins)}', "bins"
    for key, module in (bins or {}).items():
        if not (isinstance(module, str) and all(part.isidentifier() for part in module.split("."))):
            shown = printable(key)
            return f"`[tool.furiosa-opt.bins] {shown}` must name a module (`package.module`), not {_shown(module)}", key
    members = _table(config, "tool", "furiosa-opt-workspace", "members")
    if members is not None:
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            return f"`[tool.furiosa-opt-workspace] members` must be a list of glob patterns, not {_shown(members)}", (
                "members"
            )
        for pattern in members:
            parts = Path(pattern).parts  # `.` has none: the workspace itself, which globbing cannot name
            if not parts or Path(pattern).is_absolute() or ".." in parts or "\0" in pattern:
                return f"`[tool.furiosa-opt-workspace] members`: {_shown(pattern)} is not a relative glob pattern", (
                    "members"
                )
    return None


_DISTRIBUTION = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?\Z")


def _kind(value: object) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list"}.get(
        type(value), "a table" if isinstance(value, dict) else type(value).__name__
    )


def _shown(value: object) -> str:
    text = printable(repr(value))
    return text if len(text) <= 40 else text[:37] + "..."


def _package(root: Path, config: dict) -> Package:
    source = root / "src" if (root / "src").is_dir() else root
    imports = tuple(sorted(p.parent.name for p in source.glob("*/__init__.py") if p.parent.name.isidentifier()))
    name = _table(config, "project", "name") or root.name
    bins = _table(config, "tool", "furiosa-opt", "bins") or {}
    if not imports:
        raise WorkspaceError(
            Diagnostic(
                "package-layout",
                printable(
                    f"kernel package `{name}` has no importable package under {source} (expected <name>/__init__.py)"
                ),
                "workspace",
            )
        )
    return Package(printable(name), root, source, imports, dict(bins))


def _is_kernel_package(config: dict) -> bool:
    return _table(config, "tool", "furiosa-opt", "kernel-package") is True


def _members(root: Path, config: dict) -> list[Package]:
    globs = _table(config, "tool", "furiosa-opt-workspace", "members") or []
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
    below = [f"`cd {printable(name)}`" for name in _packages_below(start)]
    nearby = [f"a kernel package is right below: {' or '.join(below)}"] if below else []
    raise WorkspaceError(
        Diagnostic(
            "no-package",
            f"no kernel package or workspace found from {start} (a "
            "pyproject.toml with [tool.furiosa-opt] kernel-package = true)",
            "workspace",
            help=[*nearby, "make one with `furiosa-opt new NAME` and `cd NAME`, or cd into a kernel package"],
        )
    )


def _packages_below(start: Path) -> list[str]:
    """The directories right below `start` that hold a kernel package or workspace: where a user who ran
    `furiosa-opt new NAME` and not yet `cd NAME` meant to be. One that cannot be read is left out."""
    found = []
    for project in sorted(start.glob("*/pyproject.toml")):
        try:
            config = _read(project)
        except WorkspaceError:
            continue
        if _is_kernel_package(config) or "furiosa-opt-workspace" in config.get("tool", {}):
            found.append(project.parent.name)
    return found


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
