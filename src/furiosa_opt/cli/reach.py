"""Which kernels a wrapped command needs (docs/design.md, "The furiosa-opt command"): those its targets can name.

A command's targets are the files it will run (a host program, test files and their conftest.py). Read
from source, never imported: the modules the targets import, transitively (`cache.import_closure`), are
the code that runs; every name that code reads (`good`, `mod.good`, `pkg.mod.good`) is resolved through
the bindings of the module it is read in: `from m import good as g`, `import pkg.mod`, a package's
submodule, `from .kernel import *` re-exports, down to the module that defines it. A `@device` function
reached that way is needed; one only re-exported or defined next to a needed one is not. Host code
counts per module: a helper module the targets import names kernels through everything it reads. A
module whose object itself is used (`dir(mod)`, `getattr(mod, name)`, `mod.__dict__`) or that reads its
own namespace (`globals()`, `vars()`, `eval`, `exec`) needs every kernel it can reach; a module loaded by
a name that cannot be read (`import_module(name)`, `__import__`, `sys.modules`) makes every kernel needed.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from furiosa_opt.cli.compile import Target
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.diagnostics import Diagnostic
from furiosa_opt.compiler.workspace import Package

PYTHON_VALUE_OPTIONS = ("-W", "-X")  # python options that take the next argument
NAMESPACE_READERS = ("globals", "vars", "locals", "eval", "exec")  # builtins that read names as strings

Chain = tuple[str, ...]  # a dotted name read in a module: `pkg.mod.good` is ("pkg", "mod", "good")


def needed(
    found: list[Target], problems: list[Diagnostic], files: list[Path], packages: list[Package]
) -> tuple[list[Target], list[Diagnostic]]:
    """The kernels of `found` that `files` can name, and the unreadable modules (`problems`) they import.

    A target outside the source trees (a test) has its directory as a root too, as pytest puts it on
    sys.path; a module inside them resolves its imports from its source tree alone."""
    sources = [p.source for p in packages]
    roots = sources + sorted({f.parent for f in files if not any(s in f.parents for s in sources)})
    imported = set(cache.import_closure(files, roots))
    reached = _Reach(roots, found).through(imported)
    if reached is None:
        return found, problems
    kept = [t for t in found if (t.source.file, _name(t)) in reached]
    return kept, [p for p in problems if any(Path(s.file) in imported for s in p.spans)]


def _name(target: Target) -> str:
    """The kernel's name in its defining module (its identity is `module.name`)."""
    return target.source.identity.rsplit(".", 1)[1]


@dataclass
class _Module:
    """What reachability reads in one module's source. `bindings` maps a name to what each import statement
    that binds it imports: (module, attribute) for `from module import attribute`, (module, None) for the
    module object itself (`import module`)."""

    name: str  # the dotted module name
    bindings: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # modules it imports with `*`
    reads: set[Chain] = field(default_factory=set)  # dotted names its code reads, each as long as written
    loads: list[str] = field(default_factory=list)  # modules it loads by a literal name (their objects escape)
    unknown: bool = False  # it loads a module by a name that cannot be read


def _read(file: Path, root: Path) -> _Module:
    """One module's imports, star imports, loads by name and dotted reads (none when it does not parse)."""
    parts = file.relative_to(root).with_suffix("").parts
    module = _Module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    try:
        tree = cache.parse_source(file)  # a file that is not UTF-8 text is a SyntaxError too
    except SyntaxError:  # reported by the pre-step if a target imports it; Python will refuse it anyway
        return module
    inner: set[int] = set()  # ids of the `a.b` inside `a.b.c`: only the whole name is a read
    for node in ast.walk(tree):  # breadth first: an attribute is met before the name it is read from
        if isinstance(node, ast.Import):
            for alias in node.names:  # `import a.b` binds `a`; `import a.b as x` binds `x` to `a.b`
                bound = alias.asname or alias.name.split(".")[0]
                module.bindings.setdefault(bound, []).append((alias.name if alias.asname else bound, None))
        elif isinstance(node, ast.ImportFrom):
            base = cache.from_module(node, list(parts[:-1]))
            for alias in node.names:
                if alias.name == "*":
                    module.stars.append(base)
                else:
                    module.bindings.setdefault(alias.asname or alias.name, []).append((base, alias.name))
        loaded = cache.loaded_by_name(node)
        module.unknown |= loaded is None
        module.loads += loaded or []
        if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner and (chain := _chain(node)):
            module.reads.add(chain)
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    return module


def _chain(node: ast.expr) -> Chain | None:
    """`a.b.c` as ("a", "b", "c"); None when it does not start from a name (`f().b`)."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return (node.id, *reversed(attributes)) if isinstance(node, ast.Name) else None


class _Reach:
    """Resolves the names the running code reads to the kernels that define them, each (file, chain) once."""

    def __init__(self, roots: list[Path], found: list[Target]):
        self.roots = roots
        self.kernels: dict[Path, set[str]] = {}
        for target in found:
            self.kernels.setdefault(target.source.file, set()).add(_name(target))
        self.modules: dict[Path, _Module] = {}
        self.files: dict[str, list[Path]] = {}  # module name → its files under the roots
        self.done: set[tuple[Path, Chain]] = set()
        self.todo: list[tuple[Path, Chain]] = []
        self.reached: set[tuple[Path, str]] = set()

    def through(self, running: set[Path]) -> set[tuple[Path, str]] | None:
        """(file, kernel name) of every kernel the running files can name; None: any kernel may be."""
        for file in running:
            module = self.module(file)
            if module.unknown or any(chain[:2] == ("sys", "modules") for chain in module.reads):
                return None
            for chain in module.reads:
                self.demand(file, () if chain[0] in NAMESPACE_READERS and chain[0] not in module.bindings else chain)
            for name in module.loads:
                self.demand_module(name, ())
        while self.todo:
            self.resolve(*self.todo.pop())
        return self.reached

    def module(self, file: Path) -> _Module:
        if file not in self.modules:
            self.modules[file] = _read(file, cache.root_of(file, self.roots) or file.parent)
        return self.modules[file]

    def demand(self, file: Path, chain: Chain) -> None:
        if (file, chain) not in self.done:
            self.done.add((file, chain))
            self.todo.append((file, chain))

    def demand_module(self, name: str, chain: Chain) -> None:
        for file in self.paths(name):
            self.demand(file, chain)

    def paths(self, name: str) -> list[Path]:
        """The files of a module name under the roots (none for a module of another distribution)."""
        if name not in self.files:
            self.files[name] = [f for root in self.roots for f in cache.module_files(name, root)]
        return self.files[name]

    def resolve(self, file: Path, chain: Chain) -> None:
        """`chain` read as an attribute path of the module in `file`; () (or `__dict__`) is the module
        object itself, so any of its names may be read."""
        module = self.module(file)
        if not chain or chain[0] == "__dict__":
            for name in {*self.kernels.get(file, ()), *module.bindings}:
                self.demand(file, (name,))
            for star in module.stars:
                self.demand_module(star, ())
            if file.name == "__init__.py":  # its submodules are attributes once anything imports them
                for sub in [*file.parent.glob("*.py"), *file.parent.glob("*/__init__.py")]:
                    if sub != file:
                        self.demand(sub, ())
            return
        name, rest = chain[0], chain[1:]
        if name in self.kernels.get(file, ()):
            self.reached.add((file, name))
        for source, attribute in module.bindings.get(name, ()):
            self.demand_module(source, (attribute, *rest) if attribute else rest)
        submodule = f"{module.name}.{name}"
        if not self.shadows(module, name, submodule):
            self.demand_module(submodule, rest)
        for star in module.stars:  # over-approximates: a star import skips `_names` and honours `__all__`
            self.demand_module(star, chain)

    def shadows(self, module: _Module, name: str, submodule: str) -> bool:
        """Whether `module.name` is, at run time, what the package binds rather than its submodule: so when
        the binding comes from that submodule (`from .gemm import gemm`, or `from .gemm import *` with a
        `gemm` kernel in it), whose import set the attribute before the binding replaced it."""
        if (submodule, name) in module.bindings.get(name, ()):
            return True
        return submodule in module.stars and any(name in self.kernels.get(f, ()) for f in self.paths(submodule))


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


def unknown_program(target: str, packages: list[Package], cwd: Path) -> str | None:
    """Why `run TARGET` would fail to start, or None: TARGET is no bin of the selected packages, no file,
    and no module of theirs or of this Python. The message says what TARGET was looked up as and how
    to name the program instead."""
    named = bins(packages)
    if target in named or (cwd / target).is_file() or module_file(target, packages):
        return None
    if not target.endswith(".py") and all(part.isidentifier() for part in target.split(".")):
        try:
            if importlib.util.find_spec(target.split(".")[0]) is not None:
                return None  # another distribution's module (`run http.server`)
        except (ImportError, ValueError):
            pass
    tables, owners = ", ".join(sorted(named)) or "none", ", ".join(p.name for p in packages) or "no package"
    looked = (f"`{target}` is not a host program: looked up as a bin of [tool.furiosa-opt.bins] ({tables}), as "
              f"a file under {cwd}, and as a module of {owners}")  # fmt: skip
    return "\n".join([looked, *_run_hints(target, named, packages)])


def _run_hints(target: str, named: dict[str, str], packages: list[Package]) -> list[str]:
    """What to type instead of `run TARGET`: a module of that name by its full name (or declared as a bin),
    else the close names, else how to declare TARGET as a bin."""
    leaf = target.removesuffix(".py").split(".")[-1]
    matches = [module for p in packages for module, _ in p.modules() if module.split(".")[-1] == leaf]
    if not matches and (close := close_programs(leaf, named, packages)):
        names = " or ".join(f"`{name}`" for name in close)
        return [f"help: did you mean {names}? `furiosa-opt run {close[0]}`"]
    package = next(iter(packages), None)
    module = matches[0] if matches else f"{package.imports[0] if package else 'package'}.{leaf}"
    where = f"{package.root / 'pyproject.toml'}" if package else "pyproject.toml"
    declare = f'declare it as a bin in {where}:  [tool.furiosa-opt.bins]  {leaf} = "{module}"'
    if matches:
        return [f"help: run the module by its full name: `furiosa-opt run {matches[0]}`", f"help: or {declare}"]
    return [f"help: {declare}"]


def close_programs(leaf: str, named: dict[str, str], packages: list[Package]) -> list[str]:
    """The programs a misspelt `run LEAF` may mean, closest first: bins with a close name, else modules of
    the packages whose last part is close (by their full name, which `run` takes)."""
    close = difflib.get_close_matches(leaf, named, n=3)
    if close:
        return close
    modules = {module.split(".")[-1]: module for p in packages for module, _ in p.modules()}
    return [modules[name] for name in difflib.get_close_matches(leaf, modules, n=3)]


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
