"""`furiosa-opt tune KERNEL`: search the kernel's declared choices for the shortest makespan (docs/tuning.md).

The kernel is chosen like `furiosa-opt compile`'s filters choose (exactly one must match). Trials stream to
`<out>/tune/<identity>/study.jsonl` under a progress bar; at the end a table of the best trials, and the
best choices go to the tuned file beside the kernel's module, which the next compile reads.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from furiosa_opt.cli.compile import Reporter, listed, selected_targets
from furiosa_opt.cli.signals import Stopping
from furiosa_opt.files import printable
from furiosa_opt.tune import study as studies
from furiosa_opt.tune.executors import EXECUTORS, ExecutorError, executor
from furiosa_opt.tune.study import OBJECTIVES, SAMPLERS


def add_tune_parser(commands: argparse._SubParsersAction) -> None:
    tune = commands.add_parser("tune", help="search a kernel's declared choices for the shortest makespan")
    tune.add_argument("kernel", metavar="KERNEL", help="one kernel's name, else a substring of its identity (`::` ok)")
    tune.add_argument("-p", "--package", action="append", default=[], metavar="PKG")
    tune.add_argument("--trials", type=_positive, default=20, metavar="N", help="points to measure (default 20)")
    tune.add_argument("--sampler", choices=SAMPLERS, default="grid")
    simulated = "simulated: the simulator's, each candidate checked against the CPU backend"
    tune.add_argument("--objective", choices=OBJECTIVES, default="static",
                      help=f"static: the cost model's makespan; {simulated}")  # fmt: skip
    tune.add_argument("--executor", choices=EXECUTORS, default="local")
    tune.add_argument("--address", metavar="ADDR", help="the Ray cluster: auto or ray://host:port")
    tune.add_argument("--workers", type=_positive, metavar="N", help="trials at a time (default: the CPUs)")
    tune.add_argument("--resume", action="store_true", help="extend the kernel's study; measured points are skipped")
    tune.add_argument("--seed", type=int, default=0, help="of the sampler and of the simulated inputs")
    tune.add_argument("--top", type=_positive, default=5, metavar="N", help="best trials to show (default 5)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def run_tune(options: argparse.Namespace) -> int:
    report = Reporter(False)
    try:  # here, not at the top: every other command would pay for importing the search
        import optuna

        from furiosa_opt.tune import search
    except ImportError:
        report.status("Error", "furiosa-opt tune needs Optuna: pip install 'furiosa-opt[tune]'")
        return 2
    if options.address and options.executor != "ray":
        report.status("Error", "--address names a Ray cluster: add --executor ray")
        return 2
    selected = selected_targets(options.package, [options.kernel], report)
    if selected is None:
        return 1
    out, chosen, found = selected
    if len(chosen) != 1:
        names = "".join(f"\n    {t.source.identity}" for t in chosen) or (
            f" (kernels: {listed(found)})" if found else ""
        )
        report.status("Error", f"tune needs exactly one kernel, {len(chosen)} match `{options.kernel}`{names}")
        return 1
    target = chosen[0]
    settings = search.Settings(options.trials, options.sampler, options.objective, options.resume, options.seed)
    folder = search.folder_of(out, target.source.identity)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pool, start = None, time.perf_counter()
    try:
        with _Signals():
            pool = executor(
                options.executor, options.address, options.workers, preload=(__name__, "furiosa_opt.cli.main")
            )
            study = _search(search, target, folder, pool, settings)
    except ExecutorError as error:
        report.status("Error", str(error))
        return 1
    except _Stopped as stopped:
        if pool is not None:
            pool.abandon()
        name = signal.Signals(stopped.signum).name
        report.status("Error", f"stopped by {name}: the trials that finished are in {folder / search.STUDY_FILE}; "
                      "`--resume` goes on from them")  # fmt: skip
        return 128 + stopped.signum
    except search.TuneError as error:
        pool.close()
        report.status("Error", printable(str(error)))
        return 1
    pool.close()
    return _finish(study, target.source.file, folder, time.perf_counter() - start, options.top)


def _search(search, target, folder: Path, pool, settings) -> studies.Study:
    """The search under a progress bar on stderr: trials done, elapsed time, the best makespan so far."""
    console = Console(stderr=True, highlight=False)
    with _progress(console) as progress:
        task = progress.add_task(target.source.identity, total=settings.trials, best="")
        best: list[int] = []  # the shortest makespan so far

        def advance(record: dict) -> None:
            value = record.get("simulated" if settings.objective == "simulated" else "makespan")
            if record["state"] == "ok" and value is not None and (not best or value < best[0]):
                best[:] = [value]
            progress.update(task, advance=1, best=f"best {best[0]} cycles" if best else "")

        study = search.tune(target.package, target.source, folder, pool, settings, advance)
        progress.update(task, total=progress.tasks[task].completed)  # the space may hold fewer points
    return study


class _Stopped(Exception):
    def __init__(self, signum: int):
        self.signum = signum


class _Signals(Stopping):
    """SIGINT and SIGTERM stop the search: the trials in flight are killed (a finished trial is in the
    study already) and the command exits 130 or 143 with one line; a second signal meanwhile is ignored."""

    def stop(self, signum: int) -> None:
        for number in self.previous:
            signal.signal(number, signal.SIG_IGN)
        raise _Stopped(signum)


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[best]}"), console=console, transient=False)  # fmt: skip


def _finish(study: studies.Study, module_file: Path, folder: Path, seconds: float, top: int) -> int:
    from furiosa_opt.tune import search

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    states = {s: sum(t["state"] == s for t in study.trials) for s in studies.STATES}
    console.print(f"{study.kernel}: {len(study.trials)} trials in the study ({_counts(states)}), "
                  f"{seconds:.1f} s; study in {folder / search.STUDY_FILE}")  # fmt: skip
    ranked = study.ranked()
    if not ranked:
        console.print("no trial compiled: nothing written (the study lists why each was refused)")
        return 1
    console.print(_table(study, ranked[:top]))
    baseline = study.find({name: values[0] for name, values in study.space.items()})
    best = ranked[0]
    if baseline is not None and study.value(baseline) is not None:
        before, after = study.value(baseline), study.value(best)
        console.print(f"defaults (today's layout): {before} cycles; best: {after} cycles "
                      f"({(before - after) / before:.1%} below)")  # fmt: skip
    written = search.write_best(study, module_file)
    console.print(f"best choices written to {written}: `furiosa-opt compile` uses them from now on")
    return 0


def _counts(states: dict[str, int]) -> str:
    return ", ".join(f"{n} {state}" for state, n in states.items() if n)


def _table(study: studies.Study, ranked: list[dict]) -> Table:
    table = Table(title=f"best trials ({study.objective} objective)")
    for column in ("#", "makespan", "lower bound", "ratio", *(["simulated"] if study.objective == "simulated" else [])):
        table.add_column(column, justify="right")
    table.add_column("choices")
    for record in ranked:
        cells = [str(record["number"]), str(record["makespan"]), str(record["lower_bound"]), f"{record['ratio']:.3f}"]
        if study.objective == "simulated":
            cells.append(str(record.get("simulated")))
        table.add_row(*cells, ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}"
                                        for k, v in record["choices"].items()))  # fmt: skip
    return table
