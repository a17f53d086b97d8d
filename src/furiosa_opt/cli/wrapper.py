"""`furiosa-opt [-p PKG]... run|test|build|check|python|pytest …`: the NPU build of a command.

The pre-step compiles the kernels the command needs (those its targets can name, `reach.py`; every
kernel of the selected packages when it names no target), cached as `compile` does, and a compile error
in one of them stops the command before it runs. The command then runs as a child on the NPU backend
with the artifacts' directory and the packages' sources on PYTHONPATH; the launch runtime never
compiles. The command line is split by hand, not by argparse, because everything after `<command>`
belongs to the command verbatim.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from furiosa_opt import env
from furiosa_opt.cli import reach
from furiosa_opt.cli.catalogue import write_catalogue
from furiosa_opt.cli.compile import NO_DUMPS, Reporter, build_all, compile_target, reported_targets, selection, targets
from furiosa_opt.compiler.workspace import Package

WRAPPED = ("run", "test", "bench", "build", "check", "doc", "python", "pytest")
WRAPPER_HELP = """NPU builds of a command: furiosa-opt [-p|--package PKG]... <command> [args]
  run NAME|MODULE|FILE [args]  run a host program (NAME from [tool.furiosa-opt.bins]) on the NPU backend
  test [pytest args]           run the package's tests on the NPU backend
  bench [args]                 run the package's benches/*.py scripts (else pytest --benchmark-only [args])
  build                        compile every kernel of the selected packages and say where the artifacts are
  check                        compile and verify every kernel, writing nothing and running nothing
  doc                          write a kernel catalogue (signatures, makespans, schedules)
  python … / pytest …          run the line on the NPU backend
Before running, the kernels the command's files name are compiled (all of them when it names no file)."""


def split(args: list[str]) -> tuple[list[str], str, list[str]] | None:
    """(package names, command, its arguments) when `args` is a wrapper command line, else None."""
    names: list[str] = []
    index = 0
    while index < len(args):
        if args[index] in ("-p", "--package") and index + 1 < len(args):
            names.append(args[index + 1])
            index += 2
        elif args[index].startswith("--package="):
            names.append(args[index].partition("=")[2])
            index += 1
        else:
            break
    if index < len(args) and args[index] in WRAPPED:
        return names, args[index], args[index + 1 :]
    return None


def asks_help(args: list[str]) -> bool:
    """`-h`/`--help` among the command's own arguments (before any `--`): a help query compiles nothing."""
    own = args[: args.index("--")] if "--" in args else args
    return "-h" in own or "--help" in own


def run_wrapper(names: list[str], command: str, args: list[str]) -> int:
    report = Reporter(json_format=False)
    if command in ("build", "check", "doc") and asks_help(args):
        print(WRAPPER_HELP)
        return 0
    if command == "run" and not args:
        print(f"error: `furiosa-opt run` needs NAME|MODULE|FILE\n\n{WRAPPER_HELP}", file=sys.stderr)
        return 2
    selected = selection(names, report)
    if selected is None:
        return 1
    out, packages = selected
    if command == "check":
        return _check(packages, report)
    if command == "doc":
        found, problems = reported_targets(packages, report)
        return 1 if problems else write_catalogue(found, out.parent / "doc", report)
    if not asks_help(args) and not env.skip_prestep():
        failed = _prestep(packages, _files(command, args, packages), out, report)
        if failed or command == "build":
            return failed
    environment = env.child_environment(out, [p.source for p in packages])
    if command == "bench" and _benches(packages):
        for script in _benches(packages):  # each script in turn; the first failure stops the rest
            code = _child([sys.executable, str(script), *args], environment)
            if code:
                return code
        return 0
    return _child(_argv(command, args, packages), environment)


def _files(command: str, args: list[str], packages: list[Package]) -> list[Path]:
    """The files the command will run (empty: it names none, so it may need any kernel)."""
    cwd = Path.cwd()
    if command == "run":
        return reach.run_files(args[0], packages, cwd)
    if command in ("test", "pytest"):
        return reach.tested_files(args, cwd)
    if command == "bench":
        return _benches(packages)
    if command == "python":
        return reach.python_files(args, packages, cwd)
    return []


def _prestep(packages: list[Package], files: list[Path], out: Path, report: Reporter) -> int:
    """Compile what the command's files need; a module that does not parse stops it only if they import it."""
    found, problems = targets(packages)
    if files:
        found, problems = reach.needed(found, problems, files, packages)
    for problem in problems:
        report.diagnostic(problem)
    return 1 if problems else build_all(found, out, NO_DUMPS, report)


def _check(packages: list[Package], report: Reporter) -> int:
    """Every stage of every kernel, with no artifact written (nor bytecode beside the user's sources)."""
    sys.dont_write_bytecode = True
    found, failed = reported_targets(packages, report)
    for target in found:
        if compile_target(target, report) is None:
            failed += 1
        else:
            report.status("Checked", target.source.identity, kernel=target.source.identity, success=True)
    report.status("Finished" if not failed else "Error", f"{len(found)} kernel(s) checked, {failed} failed")
    return 1 if failed else 0


def _benches(packages: list[Package]) -> list[Path]:
    """The selected packages' benchmark scripts (`benches/*.py`), in a stable order."""
    return sorted(path for p in packages for path in (p.root / "benches").glob("*.py"))


def _argv(command: str, args: list[str], packages: list[Package]) -> list[str]:
    if command == "run":
        program, rest, named = args[0], args[1:], reach.bins(packages)
        if program in named:
            return [sys.executable, "-m", named[program], *rest]
        if program.endswith(".py") or Path(program).is_file():
            return [sys.executable, program, *rest]
        return [sys.executable, "-m", program, *rest]
    if command in ("test", "pytest"):
        return [sys.executable, "-m", "pytest", *args]
    if command == "bench":  # no benches/ scripts: the package's pytest-benchmark tests
        return [sys.executable, "-m", "pytest", "--benchmark-only", *args]
    return [sys.executable, *args]


def _child(argv: list[str], environment: dict[str, str]) -> int:
    """Run the command in our process group, so Ctrl-C reaches it; its exit code is ours."""
    child = subprocess.Popen(argv, env=environment)
    try:
        return child.wait()
    except KeyboardInterrupt:
        child.wait()
        return 130
