"""The per-kernel artifact cache in `FURIOSA_OPT_OUT_DIR` (docs/design.md, "Artifacts, cache and formats").

`<out>/<import package>/<kernel identity>.edf` is the artifact; beside it `<identity>.json` records the
keys. The *fast key* hashes what can change the kernel without importing anything: the source closure
(the kernel's module and every package module it imports, by static import analysis), the compiler
version, the device and the key environment. On a fast-key miss stage 1 runs; if the vISA digest is the
one recorded, the artifact is still right (a comment-only edit) and is left untouched. Writes are atomic
(staged, then renamed), so concurrent builds of one kernel leave one valid artifact.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from furiosa_opt import __version__, env


@dataclass(frozen=True)
class KernelSource:
    """A kernel found by reading source, not by importing it."""

    identity: str
    module: str
    file: Path
    chip: int
    pe: int


def find_kernels(module: str, file: Path) -> list[KernelSource]:
    """Module-level functions decorated with `@device` / `@device(chip=…, pe=…)` (a module that does not
    parse raises SyntaxError: its kernels cannot be known)."""
    tree = ast.parse(file.read_text(), str(file))
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call else decorator
            if (isinstance(target, ast.Name) and target.id == "device") or (
                isinstance(target, ast.Attribute) and target.attr == "device"
            ):
                options = {k.arg: k.value.value for k in (call.keywords if call else ()) if
                           isinstance(k.value, ast.Constant)}  # fmt: skip
                found.append(KernelSource(f"{module}.{node.name}", module, file, options.get("chip", 1),
                                          options.get("pe", 8)))  # fmt: skip
    return found


def source_closure(file: Path, source_root: Path) -> list[Path]:
    """The file and every module under `source_root` it imports, transitively (plus parent packages)."""
    return import_closure([file], [source_root])


def import_closure(files: list[Path], roots: list[Path]) -> list[Path]:
    """The files and every module under one of `roots` they import, transitively (plus parent packages).

    A file resolves its relative imports against the deepest root that holds it; a start file outside
    every root (a test file) still has its absolute imports followed."""
    seen: set[Path] = set()
    stack = list(files)
    while stack:
        path = stack.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        root = root_of(path, roots)
        package: list[str] = []  # the package a relative import starts from (for __init__.py: itself)
        if root is not None:
            stack += _parents(path, root)
            package = list(path.relative_to(root).with_suffix("").parts)[:-1]
        try:
            tree = ast.parse(path.read_text(), str(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            for name in _imported(node, package):
                stack += [f for r in roots for f in module_files(name, r)]
    return sorted(seen)


def root_of(path: Path, roots: list[Path]) -> Path | None:
    """The deepest of `roots` that holds `path` (its imports resolve from there), if any."""
    return max((r for r in roots if r in path.parents), key=lambda r: len(r.parts), default=None)


def _parents(path: Path, root: Path) -> list[Path]:
    return [p / "__init__.py" for p in path.parents if p != root and root in p.parents]


def _imported(node: ast.AST, package: list[str]) -> list[str]:
    """Module names a statement may load (`from a import b` may mean the module `a.b`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = from_module(node, package)
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return loaded_by_name(node) or []


def from_module(node: ast.ImportFrom, package: list[str]) -> str:
    """The absolute name of the module a `from … import` reads, relative levels resolved against `package`."""
    start = package[: len(package) - node.level + 1] if node.level else []
    return ".".join([*start, *(node.module.split(".") if node.module else [])])


LOADERS = ("import_module", "run_module")  # importlib's and runpy's loaders of a module named by a string


def loaded_by_name(node: ast.AST) -> list[str] | None:
    """Modules a node loads by a name written as a string (`import_module("a.b")`, `run_module("a.b")`,
    pytest's `pytest_plugins = ["a.b"]`); None when that name cannot be known: computed, relative, or
    passed to `__import__` (which hands back the top package rather than the module it names)."""
    if isinstance(node, ast.Call):
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if callee == "__import__":
            return None
        if callee not in LOADERS:
            return []
        names = node.args[:1]
    elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytest_plugins" for t in node.targets):
        names = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
    else:
        return []
    literal = [n.value for n in names if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return literal if names and len(literal) == len(names) and not any(n.startswith(".") for n in literal) else None


def module_files(name: str, root: Path) -> list[Path]:
    path = root.joinpath(*name.split("."))
    return [p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()]


@dataclass
class FastKey:
    sources: dict[str, str]  # path relative to the package root → sha256
    version: str
    device: str
    environment: dict[str, str] = field(default_factory=dict)

    def digest(self) -> str:
        return digest(json.dumps(self.__dict__, sort_keys=True).encode())


def fast_key(kernel: KernelSource, package_root: Path, source_root: Path) -> FastKey:
    files = source_closure(kernel.file, source_root)
    sources = {p.relative_to(package_root).as_posix(): digest(p.read_bytes()) for p in files}
    return FastKey(sources, __version__, f"chip={kernel.chip},pe={kernel.pe}", env.key_environment())


def artifact_key(visa_text: str, device: str) -> str:
    """The key an EDF carries: what the code was compiled from, whatever the source spelling."""
    record = {"visa": digest(visa_text.encode()), "version": __version__, "device": device,
              "environment": env.key_environment()}  # fmt: skip
    return digest(json.dumps(record, sort_keys=True).encode())


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def out_dir(workspace_root: Path) -> Path:
    return env.out_dir() or workspace_root / "target" / "furiosa-opt" / "kernel"


def paths(out: Path, identity: str) -> tuple[Path, Path]:
    folder = out / identity.split(".")[0]
    return folder / f"{identity}.edf", folder / f"{identity}.json"


def read_record(record_path: Path) -> dict | None:
    try:
        return json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None


def artifact_state(edf_path: Path, record: dict | None) -> str | None:
    """Why the stored artifact cannot be used as it is, or None if it can."""
    from furiosa_opt.compiler.edf import EdfError, read_edf

    if record is None:
        return "never compiled here"
    if not edf_path.is_file():
        return "the artifact is missing"
    data = edf_path.read_bytes()
    if digest(data) != record.get("edf_sha256"):
        return "the artifact was modified or corrupted (its checksum differs from the record)"
    try:
        edf = read_edf(data)
    except EdfError as error:
        return f"the artifact is unreadable: {error}"
    if edf.cache_key != record.get("artifact_key"):
        return "the artifact's key differs from the record"
    return None


def explain(key: FastKey, record: dict | None, edf_path: Path) -> list[str]:
    """What changed since the artifact was built (empty: it is up to date)."""
    state = artifact_state(edf_path, record)
    if state is not None:
        return [state]
    old = record.get("fast_key", {})
    causes = []
    before, now = old.get("sources", {}), key.sources
    causes += [f"source changed: {p}" for p in sorted(now) if p in before and before[p] != now[p]]
    causes += [f"source added to the kernel's imports: {p}" for p in sorted(set(now) - set(before))]
    causes += [f"source no longer imported: {p}" for p in sorted(set(before) - set(now))]
    if old.get("version") != key.version:
        causes.append(f"compiler version changed: {old.get('version')} → {key.version}")
    if old.get("device") != key.device:
        causes.append(f"device changed: {old.get('device')} → {key.device}")
    for name, value in key.environment.items():
        if old.get("environment", {}).get(name) != value:
            causes.append(f"environment variable {name} changed: {old.get('environment', {}).get(name)!r} → {value!r}")
    return causes


def changes(kernel: KernelSource, package_root: Path, source_root: Path, out: Path) -> list[str]:
    """Why the kernel's artifact in `out` is missing or stale (empty: up to date), as `cache explain` says."""
    edf_path, record_path = paths(out, kernel.identity)
    return explain(fast_key(kernel, package_root, source_root), read_record(record_path), edf_path)


def record_for(key: FastKey, artifact: str, edf: bytes, visa_text: str) -> bytes:
    record = {"fast_key": key.__dict__, "fast_digest": key.digest(), "artifact_key": artifact,
              "edf_sha256": digest(edf), "visa_sha256": digest(visa_text.encode())}  # fmt: skip
    return (json.dumps(record, sort_keys=True, indent=1) + "\n").encode()
