"""`furiosa-opt [-p PKG]... run|test|build|check|python|pytest …`: the NPU build of a command.

The pre-step compiles the kernels the command needs (those its targets can name, `reach.py`; every
kernel of the selected packages when it names no target), cached as `compile` does, and a compile error
in one of them stops the command before it runs. The command then runs as a child on the NPU backend
with the artifacts' directory and the packages' sources on PYTHONPATH; the launch runtime never
compiles. The command line is split by hand, not by argparse, because everything after `<command>`
belongs to the command verbatim.

SIGINT and SIGTERM (`_Signals`): before the command starts, either one kills the compile workers at
once (a compile in flight publishes nothing, a pending one never starts), removes what a killed
compile left half-written, and the wrapper exits 130 or 143 with one line. While the command runs, it
is forwarded to the command (SIGINT only when it cannot have come from the terminal, which has already
sent it to our whole process group, the command included); after a SIGTERM the command has
`TERM_GRACE` seconds to exit before it is killed, so the wrapper never leaves it running behind it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from furiosa_opt import env
from furiosa_opt.cli import reach
from furiosa_opt.cli.catalogue import write_catalogue
from furiosa_opt.cli.compile import (
    NO_DUMPS,
    Reporter,
    Target,
    build_all,
    compile_target,
    reported_targets,
    selection,
    targets,
)
from furiosa_opt.cli.signals import Stopping
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.workspace import Package

WRAPPED = ("run", "test", "bench", "build", "check", "doc", "python", "pytest")
SUMMARIES = {
    "run": "run a host program on the NPU backend (its kernels compiled first)",
    "test": "run the package's tests on the NPU backend",
    "bench": "run the package's benchmarks on the NPU backend",
    "build": "compile every kernel of the selected packages",
    "check": "compile and verify every kernel, writing nothing",
    "doc": "write a kernel catalogue (signatures, makespans, schedules)",
    "python": "run a python command line on the NPU backend",
    "pytest": "run a pytest command line on the NPU backend",
}
"""One line per wrapped command, for the top-level help (`WRAPPER_HELP` gives their arguments)."""
WRAPPER_HELP = """NPU builds of a command: furiosa-opt [-p|--package PKG]... <command> [args]
  run NAME|MODULE|FILE [args]  run a host program (NAME from [tool.furiosa-opt.bins]) on the NPU backend
  test [pytest args]           run the package's tests on the NPU backend
  bench [args]                 run the package's benches/*.py scripts (else pytest --benchmark-only [args])
  build [--deny warnings]      compile every kernel of the selected packages and say where the artifacts are
  check [--deny warnings]      compile and verify every kernel, writing nothing and running nothing
                               (`--deny warnings`: a warning, such as a DM bank starvation hazard, fails it)
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


TERM_GRACE = 3.0
"""Seconds the command has to exit after the wrapper forwards it a SIGTERM, before it is killed."""


def run_wrapper(names: list[str], command: str, args: list[str]) -> int:
    with _Signals() as signals:
        try:
            code = _run(names, command, args, signals)
            signals.closing = True
        except _Stopped as stopped:
            name = signal.Signals(stopped.signum).name
            after = "" if command == "build" else f"; `{command}` did not run"
            print(f"furiosa-opt: stopped by {name}: compiles cancelled, no partial artifact published{after}",
                  file=sys.stderr)  # fmt: skip
            return 128 + stopped.signum
    if signals.received is None or (signals.received == signal.SIGINT and code == 0):
        return code  # no signal, or the command took the Ctrl-C in its stride (an interactive session)
    how = f"was killed, still running {TERM_GRACE:g} s after SIGTERM" if signals.killed_command else "stopped"
    print(f"furiosa-opt: stopped by {signal.Signals(signals.received).name}: `{command}` {how}", file=sys.stderr)
    return 128 + signals.received


def _run(names: list[str], command: str, args: list[str], signals: _Signals) -> int:
    if command in ("build", "check", "doc") and asks_help(args):
        print(WRAPPER_HELP)
        return 0
    deny = command in ("build", "check") and args in (["--deny", "warnings"], ["--deny=warnings"])
    if command in ("build", "check") and args and not deny:
        print(f"error: furiosa-opt {command} takes no arguments but `--deny warnings`, got `{' '.join(args)}`",
              file=sys.stderr)  # fmt: skip
        return 2
    report = Reporter(json_format=False, deny_warnings=deny)
    if command == "run" and not args:
        print(f"error: `furiosa-opt run` needs NAME|MODULE|FILE\n\n{WRAPPER_HELP}", file=sys.stderr)
        return 2
    env.profile_level(), env.profile_out()  # a bad value is one line now, not a traceback in the command
    selected = selection(names, report)
    if selected is None:
        return 1
    out, packages = selected
    if command == "run" and not asks_help(args) and (problem := reach.unknown_program(args[0], packages, Path.cwd())):
        print(f"error: furiosa-opt run: {problem}", file=sys.stderr)  # before compiling anything
        return 2
    if command == "check":
        return _check(packages, report)
    if command == "doc":
        found, problems = reported_targets(packages, report)
        return 1 if problems else write_catalogue(found, out.parent / "doc", report)
    if not asks_help(args) and not env.skip_prestep():
        failed = _prestep(packages, _files(command, args, packages), out, report, signals)
        if failed or command == "build":
            return failed
    environment = env.child_environment(out, [p.source for p in packages])
    if command == "bench" and _benches(packages):
        for script in _benches(packages):  # each script in turn; the first failure (or a signal) stops the rest
            code = _child([sys.executable, str(script), *args], environment, signals)
            if code or signals.received is not None:
                return code
        return 0
    return _child(_argv(command, args, packages), environment, signals)


class _Stopped(BaseException):
    """SIGINT or SIGTERM before the command started. A BaseException, like KeyboardInterrupt, so that
    the compiler's `except Exception` around a user's import lets it through."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals(Stopping):
    """The wrapper's SIGINT and SIGTERM handler, installed while it runs (see the module docstring)."""

    def __init__(self) -> None:
        self.received: int | None = None  # the first signal, or SIGTERM once one came
        self.command: subprocess.Popen | None = None
        self.starting = False  # the command is being started: a signal now waits for it to exist
        self.killed_command = False
        self.closing = False  # the command has finished: a signal now is only noted
        self.waiting = False  # in the command's wait, which a SIGTERM interrupts to set its deadline
        self.deadline: float | None = None  # when a command sent SIGTERM is killed
        self.workers: set[int] = set()  # compile workers killed, whose temporary files are removed

    def stop(self, signum: int) -> None:
        first = self.received is None
        if first or signum == signal.SIGTERM:
            self.received = signum
        if self.closing:
            return
        if not self.starting:  # the pre-step (or what comes before it)
            self.kill_workers()
            if first:
                raise _Stopped(signum)
        elif self.command is not None:
            self.forward(signum)

    def kill_workers(self) -> None:
        for worker in multiprocessing.active_children():
            worker.kill()
            self.workers.add(worker.pid)

    def forward(self, signum: int) -> None:
        if self.command.poll() is not None:  # it has exited: nothing to pass on
            return
        if signum == signal.SIGTERM or not _terminal_sent_it():
            self.command.send_signal(signum)
        if signum == signal.SIGTERM:
            self.deadline = self.deadline or time.monotonic() + TERM_GRACE
            if self.waiting:
                raise _Stopped(signum)  # wakes the wait, which now has a deadline

    def left(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0)


def _terminal_sent_it() -> bool:
    """Whether a SIGINT can have come from our terminal (Ctrl-C): we are its foreground process group,
    which the command shares, so the command has it already and forwarding would interrupt it twice."""
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


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


def _prestep(packages: list[Package], files: list[Path], out: Path, report: Reporter, signals: _Signals) -> int:
    """Compile what the command's files need; a module that does not parse stops it only if they import it.
    Stopped by a signal, or by a worker dying under it, it leaves no half-written artifact behind."""
    found, problems = targets(packages)
    if files:
        found, problems = reach.needed(found, problems, files, packages)
    for problem in problems:
        report.diagnostic(problem)
    if problems:
        return 1
    started = time.time_ns()
    try:
        return build_all(found, out, NO_DUMPS, report)
    except BrokenProcessPool:
        signals.kill_workers()
        _discard_partial(found, out, started, signals.workers)
        if signals.received is not None:
            raise _Stopped(signals.received) from None
        print("error: a compile worker process died (killed from outside?); its kernel was not published",
              file=sys.stderr)  # fmt: skip
        return 1
    except BaseException:
        signals.kill_workers()
        _discard_partial(found, out, started, signals.workers)
        raise


def _discard_partial(found: list[Target], out: Path, since: int, workers: set[int]) -> None:
    """Remove what killed compiles left: temporary files of `write_atomic` (`.NAME.PID.TOKEN.tmp`) by
    a killed worker or by us, and an artifact written since `since` whose record does not vouch for it
    (the record is written second), so the cache says "missing", never "corrupted". Best effort: a
    cleanup that fails leaves what the cache would refuse anyway."""
    pids = {str(pid) for pid in {*workers, os.getpid()}}
    for target in found:
        try:
            edf_path, record_path = cache.paths(out, target.source.identity)
            for temporary in edf_path.parent.glob(".*.tmp") if edf_path.parent.is_dir() else ():
                if temporary.name.split(".")[-3] in pids:
                    temporary.unlink(missing_ok=True)
            written = edf_path.exists() and edf_path.stat().st_mtime_ns >= since
            if written and cache.artifact_state(edf_path, cache.read_record(record_path)) is not None:
                edf_path.unlink(missing_ok=True)
        except Exception:  # nothing here may turn a clean stop into a traceback
            continue


def _check(packages: list[Package], report: Reporter) -> int:
    """Every stage of every kernel, with no artifact written (nor bytecode beside the user's sources)."""
    sys.dont_write_bytecode = True
    found, failed = reported_targets(packages, report)
    with report.progress(len(found), "Checking") as progress:
        for target in found:
            progress.working(target.source.identity)
            if compile_target(target, report) is None:
                failed += 1
            else:
                report.status("Checked", target.source.identity, kernel=target.source.identity, success=True)
            progress.advance()
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


def _child(argv: list[str], environment: dict[str, str], signals: _Signals) -> int:
    """Run the command in our process group, so Ctrl-C reaches it; its exit code is ours (128 + N when
    signal N ended it). A SIGTERM to us is passed on and the command is killed if it outlives `TERM_GRACE`."""
    signals.starting = True
    signals.command = command = subprocess.Popen(argv, env=environment)
    if signals.received is not None:  # it came while the command was starting
        signals.forward(signals.received)
    while True:
        signals.waiting = True
        try:
            code = command.wait(signals.left())
            break
        except _Stopped:
            continue
        except subprocess.TimeoutExpired:
            command.kill()
            signals.killed_command, signals.deadline = True, None
        finally:
            signals.waiting = False
    return 128 - code if code < 0 else code
