"""`furiosa-opt compile`: select kernels, run the compiler's stages, publish artifacts, report like cargo.

Kernels are found by reading source (`@device` at module level), so an up-to-date kernel is reported
fresh without importing anything; only kernels whose fast key changed are imported and compiled.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from furiosa_opt.compiler import cache, lir
from furiosa_opt.compiler.dfg import dump_dfg
from furiosa_opt.compiler.diagnostics import Diagnostic, Span
from furiosa_opt.compiler.driver import Compiled, compile_kernel, compile_visa
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.schedule import schedule_json, summary, summary_markdown
from furiosa_opt.compiler.workspace import Package, WorkspaceError, import_module, locate, select
from furiosa_opt.files import printable, write_atomic
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.sim.timing import compare, simulate


class Reporter:
    """Human lines on stderr, or one JSON object per line on stdout. On a terminal, a build of several
    kernels also shows a live progress bar naming the kernel in flight (`progress`), below the lines."""

    def __init__(self, json_format: bool, live: bool | None = None, deny_warnings: bool = False):
        self.json = json_format
        self.deny_warnings = deny_warnings  # `--deny warnings`: a warning fails its kernel like an error
        self.color = not json_format and sys.stderr.isatty() and "NO_COLOR" not in os.environ
        self.live = not json_format and sys.stderr.isatty() if live is None else live

    @contextlib.contextmanager
    def progress(self, total: int, verb: str = "Compiling") -> Iterator[Progressing]:
        """A progress display over `total` kernels: a rich bar on a terminal when there are several, else
        nothing (the plain lines say it all). Lines printed meanwhile appear above the bar."""
        if not self.live or total < 2:
            yield Progressing(None, None, verb)
            return
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())  # fmt: skip
        with Progress(
            *columns, console=Console(stderr=True, force_terminal=True), transient=True, redirect_stdout=False
        ) as bar:
            yield Progressing(bar, bar.add_task(verb, total=total), verb)

    def diagnostic(self, diagnostic: Diagnostic) -> None:
        if self.json:
            print(diagnostic.to_json(), flush=True)
        else:
            print(diagnostic.rendered(self.color) + "\n", file=sys.stderr, flush=True)

    def status(self, verb: str, text: str, **record: object) -> None:
        if self.json:
            print(json.dumps({"reason": verb.lower().replace(" ", "-"), "message": text, **record}, sort_keys=True))
        else:
            print(f"{verb:>12} {text}", file=sys.stderr, flush=True)


@dataclass
class Progressing:
    """The handle of `Reporter.progress`: name the kernel in flight, count one done."""

    bar: Progress | None
    task: TaskID | None
    verb: str

    def working(self, identity: str) -> None:
        """Show the kernel's name (its identity's last part: the lines above carry the whole identity)."""
        if self.bar is not None:
            self.bar.update(self.task, description=f"{self.verb} {identity.rsplit('.', 1)[-1]}", refresh=True)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)


@dataclass
class Target:
    package: Package
    source: cache.KernelSource


def targets(packages: list[Package]) -> tuple[list[Target], list[Diagnostic]]:
    """The kernels of the packages, read from source; a module that does not parse is a diagnostic."""
    found, problems = [], []
    for package in packages:
        for module, path in package.modules():
            try:
                found += [Target(package, k) for k in cache.find_kernels(module, path)]
            except SyntaxError as error:
                span = Span(str(path), error.lineno or 1, error.offset or 1)
                problems.append(Diagnostic("syntax-error", printable(error.msg), "import", module, [span]))
            except OSError as error:
                reason = f"cannot read {path.name}: {error.strerror or error}"
                problems.append(Diagnostic("unreadable-source", reason, "import", module, [Span(str(path), 1, 1)]))
    return sorted(found, key=lambda t: t.source.identity), problems


def reported_targets(packages: list[Package], report: Reporter) -> tuple[list[Target], int]:
    """The packages' kernels read from source, and how many modules could not be read (reported)."""
    found, problems = targets(packages)
    for problem in problems:
        report.diagnostic(problem)
    return found, len(problems)


def selection(names: list[str], report: Reporter) -> tuple[Path, list[Package]] | None:
    """The artifact directory and the packages `-p NAME` selects in the workspace around the current
    directory; None (reported) when there is none."""
    try:
        workspace = locate(Path.cwd())
        return cache.out_dir(workspace.root), select(workspace, names)
    except WorkspaceError as error:
        report.diagnostic(error.diagnostic)
        return None


def selected_targets(
    names: list[str], filters: list[str], report: Reporter
) -> tuple[Path, list[Target], list[Target]] | None:
    """The artifact directory, the kernels of the `-p` packages that the filters select (every kernel
    without filters) and all their kernels (to name them when none is selected); None (reported) when
    the workspace or one of its modules cannot be read."""
    selected_packages = selection(names, report)
    if selected_packages is None:
        return None
    out, packages = selected_packages
    found, problems = reported_targets(packages, report)
    if problems:
        return None
    return out, filtered(found, filters, report), found


def failure(report: Reporter, code: str, message: str, identity: str | None = None) -> None:
    """A one-line error that is not at a source line (a file that cannot be written or read)."""
    report.diagnostic(Diagnostic(code, printable(message), "output", identity))


CLOSE = 0.7  # how alike a suggested name must be: at difflib's 0.6, `nosuchkernel` would suggest `dot_product_kernel`


def filtered(found: list[Target], filters: list[str], report: Reporter) -> list[Target]:
    """The kernels any filter selects (`matching`); a filter that selects none is warned about, with the
    kernel names close to it."""
    if not filters:
        return found
    chosen = set()
    for original in filters:
        matched = matching(found, original.replace("::", "."))
        if not matched:
            close = difflib.get_close_matches(original, kernel_names(found), n=3, cutoff=CLOSE)
            hint = f"; did you mean {' or '.join(f'`{name}`' for name in close)}?" if close else ""
            report.status("Warning", f"filter `{original}` matched no kernel{hint}", filter=original)
        chosen |= {id(t) for t in matched}
    return [t for t in found if id(t) in chosen]


def matching(found: list[Target], needle: str) -> list[Target]:
    """The kernels `needle` names exactly (their name, a dotted tail of their identity or all of it), else
    every kernel whose identity contains it: `attention_forward` is not also `attention_forward_first`."""
    exact = [t for t in found if f".{t.source.identity}".endswith(f".{needle}")]
    return exact or [t for t in found if needle in t.source.identity]


def kernel_names(found: list[Target]) -> list[str]:
    """The kernels' names (their identity's last part), sorted, each once."""
    return sorted({t.source.identity.rsplit(".", 1)[-1] for t in found})


def listed(found: list[Target], most: int = 8) -> str:
    """The kernels' names for a message: all of them when few, else the first `most` and `…`."""
    names = kernel_names(found)
    return ", ".join(names[:most] + (["…"] if len(names) > most else []))


DUMPS = ("dump_visa", "dump_dfg", "dump_ir", "dump_graph", "dump_schedule", "dump_summary")
NO_DUMPS = argparse.Namespace(**dict.fromkeys(DUMPS))  # the options of a plain build (the wrapper's)


def _dumps(options: argparse.Namespace) -> list[Path]:
    return [getattr(options, n) for n in DUMPS if getattr(options, n) is not None]


def run_compile(options: argparse.Namespace) -> int:
    report = Reporter(options.message_format == "json", deny_warnings=options.deny == "warnings")
    if options.visa is not None:
        return _compile_visa(options, report)
    chosen = selected_targets(options.package, options.filters, report)
    if chosen is None:
        return 1
    out, selected, found = chosen
    if not selected:
        report.status("Error", "no kernel selected" + (f" (of {len(found)}: {listed(found)})" if found else ""))
        return 1
    if _dumps(options) and len(selected) != 1:
        names = "\n".join(f"    {t.source.identity}" for t in selected)
        report.status("Error", f"dump flags need exactly one kernel, {len(selected)} match:\n{names}")
        return 1
    return build_all(selected, out, options, report)


def build_all(selected: list[Target], out: Path, options: argparse.Namespace, report: Reporter) -> int:
    """Bring every selected kernel's artifact up to date in `out`; 1 if any failed (shared with the wrapper).

    Kernels whose artifact is stale compile in parallel worker processes (when there are several); each
    worker's report is replayed in selection order, so the output reads the same as a serial build."""
    stale = [t for t in selected if not _fresh(t, out, options)]
    workers = min(len(stale), os.cpu_count() or 1)
    compiled_ids = {id(t) for t in stale}
    with ProcessPoolExecutor(workers) if workers > 1 else contextlib.nullcontext() as pool:
        pending = {id(t): pool.submit(_build_captured, t, out, options, report) for t in stale} if pool else {}
        outcomes = []
        with report.progress(len(stale)) as progress:
            for t in selected:
                if id(t) in compiled_ids:
                    progress.working(t.source.identity)
                outcomes.append(
                    _replay(pending[id(t)].result()) if id(t) in pending else _build(t, out, options, report)
                )
                if id(t) in compiled_ids:
                    progress.advance()
    failed, compiled, fresh = (outcomes.count(o) for o in ("failed", "compiled", "fresh"))
    text = f"{compiled} compiled, {fresh} up to date, {failed} failed (artifacts in {out})"
    if compiled == 0 and failed == 0:
        text = f"nothing to compile: {fresh} kernel(s) up to date (artifacts in {out})"
    report.status("Finished" if not failed else "Error", text, compiled=compiled, fresh=fresh, failed=failed)
    return 1 if failed else 0


def _build_captured(target: Target, out: Path, options: argparse.Namespace, report: Reporter) -> tuple[str, str, str]:
    """`_build` in a worker process: its outcome and what it printed on stdout and stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        outcome = _build(target, out, options, report)
    return outcome, stdout.getvalue(), stderr.getvalue()


def _replay(captured: tuple[str, str, str]) -> str:
    outcome, stdout, stderr = captured
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    return outcome


def _fresh(target: Target, out: Path, options: argparse.Namespace) -> bool:
    """Whether the kernel's artifact is up to date by its fast key (nothing to import or compile)."""
    return _up_to_date(*_cached(target, out), options)


def _cached(target: Target, out: Path) -> tuple[cache.FastKey, dict | None, bool]:
    """(fast key, stored record, whether the stored artifact is intact and matches its record). The key
    hashes the data files the record says the last build read, as they are now."""
    edf_path, record_path = cache.paths(out, target.source.identity)
    record = cache.read_record(record_path)
    key = cache.fast_key(target.source, target.package.root, target.package.source, cache.data_files(record))
    return key, record, record is not None and cache.artifact_state(edf_path, record) is None


def _up_to_date(key: cache.FastKey, record: dict | None, usable: bool, options: argparse.Namespace) -> bool:
    return usable and record.get("fast_digest") == key.digest() and not _dumps(options)


def _build(target: Target, out: Path, options: argparse.Namespace, report: Reporter) -> str:
    identity = target.source.identity
    try:
        edf_path, record_path = cache.paths(out, identity)
        key, record, usable = _cached(target, out)
    except (cache.ArtifactError, OSError) as error:
        return _failed(report, identity, error)
    if _up_to_date(key, record, usable, options):
        return _replay_warnings(identity, record, report)
    built = compile_target(target, report)
    if built is None:
        return "failed"
    kernel, result = built
    text = result.visa_text
    artifact = cache.artifact_key(text, f"chip={kernel.device.chip},pe={kernel.device.pe}")
    same_code = usable and record.get("artifact_key") == artifact  # same vISA, version, device, environment
    data = cache.reads_of(target.source, target.package.root, target.package.source)
    key = replace(key, data=cache.hash_data(data, target.package.root))
    try:
        if not same_code:
            write_atomic(edf_path, result.edf)
        stored = edf_path.read_bytes() if same_code else result.edf
        warnings = [d.record() for d in result.diagnostics if d.level == "warning"]
        write_atomic(record_path, cache.record_for(key, artifact, stored, text, identity, warnings))
        _write_dumps(result, options)
    except OSError as error:
        return _failed(report, identity, error)
    verb = "Fresh" if same_code else "Compiled"
    detail = "vISA unchanged, artifact kept" if same_code else _stats(result)
    report.status(verb, f"{identity} ({detail})", kernel=identity, success=True, cached=same_code)
    return "fresh" if same_code else "compiled"


def _replay_warnings(identity: str, record: dict, report: Reporter) -> str:
    """An up-to-date kernel: the warnings its build gave, again (as cargo replays a cached crate's), and
    under `--deny warnings` a failure when there are any."""
    try:
        warnings = [Diagnostic.from_record(w) for w in record.get("warnings", [])]
    except (TypeError, AttributeError):  # a record edited by hand: its warnings are not ours to show
        warnings = []
    for warning in warnings:
        report.diagnostic(warning.denied() if report.deny_warnings else warning)
    if warnings and report.deny_warnings:
        report.status("Failed", identity, kernel=identity, success=False)
        return "failed"
    report.status("Fresh", identity, kernel=identity, success=True, cached=True)
    return "fresh"


def _failed(report: Reporter, identity: str, error: Exception) -> str:
    """Report a kernel whose artifacts or dumps cannot be placed, written or read (one line), as failed."""
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        failure(report, "output", f"cannot write {where}{error.strerror or error}", identity)
    else:
        failure(report, "output", str(error), identity)
    report.status("Failed", identity, kernel=identity, success=False)
    return "failed"


def compile_target(target: Target, report: Reporter) -> tuple[DeviceFunction, Compiled] | None:
    """Import and compile one kernel through every stage, writing nothing; None (reported) if it fails.
    The files package code reads meanwhile are recorded (`cache.recording`, `cache.reads_of`)."""
    identity = target.source.identity
    with cache.recording(target.package.source):
        module, problem = import_module(target.package, target.source.module, target.source.file)
        kernel = getattr(module, identity.rsplit(".", 1)[1], None) if module is not None else None
        if problem is not None or not isinstance(kernel, DeviceFunction):
            report.diagnostic(problem or Diagnostic("no-kernel", f"`{identity}` is not a @device function", "import"))
            report.status("Failed", identity, kernel=identity, success=False)
            return None
        result = compile_kernel(kernel, target.package.root)
    return (kernel, result) if _report(result, report) else None


def _stats(result: Compiled) -> str:
    ops, commands = len(result.visa.ops), len(result.lir.commands)
    seconds = sum(result.seconds.values())
    return f"{ops} vISA ops → {commands} LIR commands, makespan {result.plan.makespan} cycles, {seconds:.3f} s"


def _report(result: Compiled, report: Reporter) -> bool:
    if report.deny_warnings:
        result.diagnostics = [d.denied() for d in result.diagnostics]
    for diagnostic in result.diagnostics:
        report.diagnostic(diagnostic)
    if not result.ok:
        report.status("Failed", result.identity, kernel=result.identity, success=False)
    return result.ok


def summary_numbers(result: Compiled) -> dict:
    """The numbers of `furiosa-opt compile --dump-summary`'s summary.json: the static summary and the
    simulated makespan beside it."""
    numbers = summary(result.plan)
    edf = read_edf(result.edf)
    timing = simulate(edf)
    numbers["simulated"] = {"makespan": timing.makespan, "versus_static": compare(edf, timing)}
    return numbers


def _write_dumps(result: Compiled, options: argparse.Namespace) -> None:
    if options.dump_visa is not None:
        write_atomic(options.dump_visa, result.visa_text.encode())
    if options.dump_dfg is not None:
        write_atomic(options.dump_dfg, dump_dfg(result.visa))
    if options.dump_ir is not None:
        write_atomic(options.dump_ir, lir.dump(result.lir))
    if options.dump_graph is not None:
        write_atomic(options.dump_graph, json.dumps(lir.graph(result.lir), indent=1, sort_keys=True).encode())
    if options.dump_schedule is not None:
        data = json.dumps(schedule_json(result.plan), indent=1, sort_keys=True)
        write_atomic(options.dump_schedule, data.encode())
    if options.dump_summary is not None:
        numbers = summary_numbers(result)
        write_atomic(options.dump_summary / "summary.json", json.dumps(numbers, indent=1).encode())
        write_atomic(options.dump_summary / "summary.md", summary_markdown(numbers).encode())


def _compile_visa(options: argparse.Namespace, report: Reporter) -> int:
    """Hand-written vISA through every stage; the EDF lands where the Python kernel's would."""
    result = compile_visa(options.visa)
    if not _report(result, report):
        return 1
    try:
        root = locate(Path.cwd()).root
    except WorkspaceError:
        root = Path.cwd()
    try:
        edf_path, _ = cache.paths(cache.out_dir(root), result.identity)
        write_atomic(edf_path, result.edf)
        _write_dumps(result, options)
    except (cache.ArtifactError, OSError) as error:
        _failed(report, result.identity, error)
        return 1
    report.status("Compiled", f"{result.identity} from {options.visa} ({_stats(result)})", kernel=result.identity,
                  success=True)  # fmt: skip
    report.status("Finished", f"1 compiled (artifact {edf_path})", compiled=1, failed=0)
    return 0
