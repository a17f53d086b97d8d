"""The per-kernel artifact cache in `FURIOSA_OPT_OUT_DIR` (docs/design.md, "Artifacts, cache and formats").

`<out>/<import package>/<kernel identity>.edf` is the artifact; beside it `<identity>.json` records the
keys. The *fast key* hashes what can change the kernel without importing anything: the source closure
(the kernel's module and every package module it imports, by static import analysis), the compiler
version, the device and the key environment. On a fast-key miss stage 1 runs; if the vISA digest is the
one recorded, the artifact is still right (a comment-only edit) and is left untouched. Writes are atomic
(staged, then renamed), so concurrent builds of one kernel leave one valid artifact.

Files a kernel's module reads while it is imported or traced (a `cfg.txt` its sizes come from) are data
of the kernel too: an audit hook records every file package code opens for reading during a build, and
the record stores them with their hashes. The fast key re-hashes them, still without importing anything.

Artifact paths come from the kernel identity, which must be dotted names (`files.identity_problem`), and
are checked to lie inside the output directory; `verify` checks an artifact against its record and its
file name, `orphans` finds artifacts whose kernels no longer exist.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from furiosa_opt import __version__, env
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import identity_problem, inside


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
    tree = parse_source(file)
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


def parse_source(file: Path) -> ast.Module:
    """The module's syntax tree; a SyntaxError (with the file and, when known, the line) for anything that
    is not Python source: a file that is not UTF-8, or that holds NUL bytes."""
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SyntaxError(f"{file.name} is not UTF-8 text (byte {error.start})", (str(file), line, 1, None)) from None
    try:
        return ast.parse(text, str(file))
    except ValueError as error:  # NUL bytes (Python 3.11 raises ValueError for them)
        raise SyntaxError(f"{file.name}: {error}", (str(file), 1, 1, None)) from None


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
            tree = parse_source(path)
        except (SyntaxError, OSError):
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
    data: dict[str, str] = field(default_factory=dict)  # files read at import or trace → sha256 (or MISSING)

    def digest(self) -> str:
        fields = {k: v for k, v in self.__dict__.items() if k != "data" or v}  # no data: the digest as before
        return digest(json.dumps(fields, sort_keys=True).encode())


MISSING = "missing"  # the hash of a data file that is absent or unreadable


def fast_key(kernel: KernelSource, package_root: Path, source_root: Path, data: list[str] = ()) -> FastKey:
    """The fast key of the kernel as its files are now; `data` names the files its last build read (the
    record's `data_files`), which are hashed again."""
    files = source_closure(kernel.file, source_root)
    sources = {p.relative_to(package_root).as_posix(): digest(p.read_bytes()) for p in files}
    return FastKey(
        sources,
        __version__,
        f"chip={kernel.chip},pe={kernel.pe}",
        env.key_environment(),
        hash_data(data, package_root),
    )


def data_files(record: dict | None) -> list[str]:
    """The data files a kernel's last build read, as its record lists them."""
    data = _table(_table(record).get("fast_key")).get("data")
    return sorted(k for k in data if isinstance(k, str)) if isinstance(data, dict) else []


def hash_data(names: list[str], package_root: Path) -> dict[str, str]:
    """Each data file's sha256 now (`MISSING` when it cannot be read): names are relative to the package
    root, or absolute for files outside it."""
    return {name: file_digest(Path(package_root) / name) for name in names}


def file_digest(path: Path) -> str:
    """The sha256 of a regular file, read a MiB at a time; `MISSING` for anything else (absent, a device,
    a directory, unreadable), so no record can make the fast path read without end."""
    hasher = hashlib.sha256()
    try:
        if not path.is_file():
            return MISSING
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                hasher.update(chunk)
    except OSError:
        return MISSING
    return hasher.hexdigest()


# ---- the data files package code reads while a kernel is imported or traced -----------------------------

_READS: dict[str, set[str]] = {}  # package source file → absolute paths of the files its code opened to read
_RECORDING: list[Path] = []  # the source roots whose code is being watched (a stack: builds may nest)
_FRAMES: dict[str, str | None] = {}  # a code object's file name → the package source file it is, or None
_SKIPPED = (".py", ".pyc", ".pyo", ".pyi", ".pyd", ".so", ".pth")  # modules the import system loads
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PREFIXES: list[str] = []  # `_prefixes()`, worked out once the hook is installed
_hooked = False


@contextlib.contextmanager
def recording(source_root: Path) -> Iterator[None]:
    """Record, for the duration of the block, the files code under `source_root` opens for reading (by
    `open`, `Path.read_*`, `os.open`, numpy's loaders …): each is attributed to the innermost source file
    of the package on the stack when it is opened. `reads_of` gives them per kernel afterwards."""
    global _hooked
    if not _hooked:
        _PREFIXES.extend(_prefixes())
        sys.addaudithook(_audit)
        _hooked = True
    _RECORDING.append(Path(source_root).resolve())
    _FRAMES.clear()
    try:
        yield
    finally:
        _RECORDING.pop()


def _audit(event: str, args: tuple) -> None:
    if event != "open" or not _RECORDING:
        return
    target, mode, flags = (*args, None, None)[:3]
    if isinstance(target, int) or target is None:
        return
    if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (mode is None and (flags or 0) & _WRITES):
        return
    try:
        path = os.path.abspath(os.fsdecode(target))
    except (TypeError, ValueError):
        return
    if path.endswith(_SKIPPED) or any(path.startswith(prefix) for prefix in _PREFIXES):
        return
    frame = sys._getframe(1)
    while frame is not None:
        source = _package_file(frame.f_code.co_filename)
        if source is not None:
            _READS.setdefault(source, set()).add(path)
            return
        frame = frame.f_back


def _prefixes() -> set[str]:
    """The Python installation and environment: files read there are the interpreter's and libraries'."""
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    return {os.path.join(os.path.abspath(p), "") for p in prefixes}


def _package_file(filename: str) -> str | None:
    if filename not in _FRAMES:
        path = Path(filename)
        if path.is_absolute() and path.suffix == ".py":
            path = path.resolve()
            _FRAMES[filename] = str(path) if any(path.is_relative_to(root) for root in _RECORDING) else None
        else:
            _FRAMES[filename] = None  # `<string>`, `<frozen …>`, a relative name: not a package file
    return _FRAMES[filename]


def reads_of(kernel: KernelSource, package_root: Path, source_root: Path) -> list[str]:
    """The data files the kernel's source closure read in this process (while `recording`), as record
    names: relative to the package root when inside it, else absolute."""
    closure = {str(p.resolve()) for p in source_closure(kernel.file, source_root)}
    root = Path(package_root).resolve()
    names = set()
    for source in closure:
        for path in _READS.get(source, ()):
            file = Path(path)
            if str(file) in closure or (file.exists() and not file.is_file()):
                continue  # a module of the closure is hashed already; a directory or device is not data
            names.add(file.relative_to(root).as_posix() if file.is_relative_to(root) else str(file))
    return sorted(names)


def artifact_key(visa_text: str, device: str) -> str:
    """The key an EDF carries: what the code was compiled from, whatever the source spelling."""
    record = {"visa": digest(visa_text.encode()), "version": __version__, "device": device,
              "environment": env.key_environment()}  # fmt: skip
    return digest(json.dumps(record, sort_keys=True).encode())


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def out_dir(workspace_root: Path) -> Path:
    """The artifact directory: FURIOSA_OPT_OUT_DIR (an EnvError when it names a file), else the default."""
    return env.out_dir() or workspace_root / "target" / "furiosa-opt" / "kernel"


class ArtifactError(FuriosaOptError):
    """An artifact that cannot be named or placed: an identity that is not dotted names, or a path that
    would leave the output directory."""


def paths(out: Path, identity: str) -> tuple[Path, Path]:
    """The kernel's EDF and record: `<out>/<import package>/<identity>.edf|.json`, refused (ArtifactError)
    when the identity is not one or the path would lie outside `out`."""
    problem = identity_problem(identity)
    if problem is not None:
        raise ArtifactError(f"cannot place the artifact: {problem}")
    folder = Path(out) / identity.split(".")[0]
    edf, record = folder / f"{identity}.edf", folder / f"{identity}.json"
    if not inside(edf, out):
        raise ArtifactError(f"cannot place the artifact of {identity}: {edf} is outside the output directory {out}")
    return edf, record


def read_record(record_path: Path) -> dict | None:
    """The record as stored, or None when it is missing or is not a JSON object."""
    try:
        record = json.loads(record_path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def artifact_state(edf_path: Path, record: dict | None) -> str | None:
    """Why the stored artifact cannot be used as it is, or None if it can."""
    from furiosa_opt.compiler.edf import EdfError, read_edf

    if record is None:
        return "never compiled here"
    if not edf_path.is_file():
        return "the artifact is missing"
    try:
        data = edf_path.read_bytes()
    except OSError as error:
        return f"the artifact is unreadable: {error.strerror or error}"
    if digest(data) != record.get("edf_sha256"):
        return "the artifact was modified or corrupted (its checksum differs from the record)"
    try:
        edf = read_edf(data)
    except EdfError as error:
        return f"the artifact is unreadable: {error}"
    if edf.identity != edf_path.name.removesuffix(".edf"):
        return f"the artifact holds kernel {edf.identity}, not the one its file name says"
    if edf.cache_key != record.get("artifact_key"):
        return "the artifact's key differs from the record"
    return None


def explain(key: FastKey, record: dict | None, edf_path: Path) -> list[str]:
    """What changed since the artifact was built (empty: it is up to date)."""
    state = artifact_state(edf_path, record)
    if state is not None:
        return [state]
    old = _table(record.get("fast_key"))
    causes = []
    before, now = _table(old.get("sources")), key.sources
    causes += [f"source changed: {p}" for p in sorted(now) if p in before and before[p] != now[p]]
    causes += [f"source added to the kernel's imports: {p}" for p in sorted(set(now) - set(before))]
    causes += [f"source no longer imported: {p}" for p in sorted(set(before) - set(now))]
    if old.get("version") != key.version:
        causes.append(f"compiler version changed: {old.get('version')} → {key.version}")
    if old.get("device") != key.device:
        causes.append(f"device changed: {old.get('device')} → {key.device}")
    environment = _table(old.get("environment"))
    for name, value in key.environment.items():
        if environment.get(name) != value:
            causes.append(f"environment variable {name} changed: {environment.get(name)!r} → {value!r}")
    data = _table(old.get("data"))
    for name in sorted(key.data):
        if key.data[name] != data.get(name):
            now = "is gone" if key.data[name] == MISSING else "changed"
            causes.append(f"data file {now}: {name} (read while the kernel was imported or traced)")
    if not causes and record.get("fast_digest") != key.digest():
        causes.append("the record's fast key does not match its fields (a damaged record)")
    return causes


def _table(value: object) -> dict:
    """A record's map, or an empty one when a damaged record holds something else there."""
    return value if isinstance(value, dict) else {}


def changes(kernel: KernelSource, package_root: Path, source_root: Path, out: Path) -> list[str]:
    """Why the kernel's artifact in `out` is missing or stale (empty: up to date), as `cache explain` says."""
    edf_path, record_path = paths(out, kernel.identity)
    record = read_record(record_path)
    return explain(fast_key(kernel, package_root, source_root, data_files(record)), record, edf_path)


def record_for(
    key: FastKey, artifact: str, edf: bytes, visa_text: str, identity: str = "", warnings: list[dict] | None = None
) -> bytes:
    """The record stored beside an artifact; `warnings` are the build's warning diagnostics (as records),
    which an up-to-date build shows again."""
    record = {"fast_key": key.__dict__, "fast_digest": key.digest(), "artifact_key": artifact,
              "edf_sha256": digest(edf), "visa_sha256": digest(visa_text.encode()),
              **({"identity": identity} if identity else {}),
              **({"warnings": warnings} if warnings else {})}  # fmt: skip
    return (json.dumps(record, sort_keys=True, indent=1) + "\n").encode()


# ---- verification and orphans ---------------------------------------------------------------------------


def verify(identity: str, edf_path: Path, record_path: Path) -> tuple[list[str], list[str]]:
    """(problems, notes) of a kernel's stored artifact: its record must be a record, the EDF must read,
    hold this identity (its file name's) and the record's checksum, key and compiler version. Nothing
    stored is neither; an artifact built by another compiler version is a note (it is stale, not broken)."""
    from furiosa_opt.compiler.edf import EdfError, read_edf

    if not edf_path.exists() and not record_path.exists():
        return [], []
    record = read_record(record_path)
    problems: list[str] = []
    if record is None:
        problems.append(f"the record {record_path.name} is missing or is not a JSON object")
    if not edf_path.is_file():
        return [*problems, f"the artifact {edf_path.name} is missing"], []
    try:
        data = edf_path.read_bytes()
    except OSError as error:
        return [*problems, f"the artifact is unreadable: {error.strerror or error}"], []
    changed = record is not None and record.get("edf_sha256") != digest(data)
    try:
        edf = read_edf(data)
    except EdfError as error:
        if changed:  # one problem: what the record says, and why the file does not read either
            return [*problems, f"the artifact was modified or corrupted (its checksum differs from the record; "
                    f"it does not read: {error})"], []  # fmt: skip
        return [*problems, f"the artifact is unreadable: {error}"], []
    if edf.identity != identity:
        problems.append(f"the artifact holds kernel {edf.identity}, not {identity}")
    notes = []
    if edf.compiler_version != __version__:
        notes.append(f"built by furiosa-opt {edf.compiler_version} (this is {__version__}): it will be recompiled")
    if record is None:
        return problems, notes
    key = record.get("fast_key") if isinstance(record.get("fast_key"), dict) else {}
    if record.get("identity", identity) != identity:
        problems.append(f"the record is kernel {record.get('identity')}'s, not {identity}'s")
    if changed:
        problems.append("the artifact was modified or corrupted (its checksum differs from the record)")
    if record.get("artifact_key") != edf.cache_key:
        problems.append("the artifact's cache key differs from the record's")
    if key.get("version") != edf.compiler_version:
        problems.append(
            f"the artifact is from furiosa-opt {edf.compiler_version}, its record from {key.get('version')}"
        )
    return problems, notes


def orphans(out: Path, imports: list[str], identities: set[str]) -> list[Path]:
    """Artifact files in `<out>/<import package>/` whose kernel is not among `identities` (the kernels the
    packages define now): an EDF or record named by an identity of that package. Temporary files are left
    alone: a build may be writing one."""
    found = []
    for name in imports:
        folder = Path(out) / name
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_dir() and not path.is_symlink():
                continue
            stem, dot, suffix = path.name.rpartition(".")
            named = dot and suffix in ("edf", "json") and stem.startswith(f"{name}.") and identity_problem(stem) is None
            if named and stem not in identities:
                found.append(path)
    return found
