"""The search: Optuna proposes assignments, an executor measures them, the study file records them.

Optuna's ask-and-tell interface drives it: up to `workers` trials are in flight; each finished one is
told back (its makespan, or a failed trial for a refused, wrong or broken point) and appended to the
study. Trial 0 is always the defaults, today's layout. A resumed study's trials are given to the sampler
first, so it goes on from what they found. A point the study has measured already (from an
earlier run under `--resume`, or proposed twice) is told its recorded result and never compiled again;
`trials` counts the points measured in this run. The search ends when that many are done, when every
point of the space is known, or when the sampler has proposed only known points `REPEATS` times in a row
(TPE, converged on a small space).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

import optuna

from furiosa_opt.compiler.cache import KernelSource
from furiosa_opt.compiler.workspace import Package
from furiosa_opt.files import write_atomic
from furiosa_opt.tune import study as studies
from furiosa_opt.tune import trial
from furiosa_opt.tune.choices import Value, choices_json, tuned_path
from furiosa_opt.tune.executors import LocalExecutor, RayExecutor

STUDY_FILE = "study.jsonl"
REPEATS = 200  # proposals in a row of known points after which the sampler is taken to have converged


class TuneError(RuntimeError):
    """A search that cannot run: the kernel declares no space, or the study cannot be resumed."""


@dataclass(frozen=True)
class Settings:
    trials: int = 20
    sampler: str = "grid"
    objective: str = "static"
    resume: bool = False
    seed: int = 0


def folder_of(out: Path, identity: str) -> Path:
    """Where a kernel's study and trial directories live: `<out>/tune/<identity>/`."""
    return Path(out) / "tune" / identity


def tune(
    package: Package,
    kernel: KernelSource,
    folder: Path,
    executor: LocalExecutor | RayExecutor,
    settings: Settings,
    on_trial: Callable[[dict], None] = lambda record: None,
) -> studies.Study:
    """Search the kernel's space; the study (also in `<folder>/study.jsonl`). `on_trial` sees each trial
    measured in this run as it finishes."""
    try:
        space = executor.submit(trial.describe, package, kernel).result()
    except ValueError as error:
        raise TuneError(str(error)) from None
    study = _opened(folder, studies.Study(kernel.identity, settings.objective, settings.sampler, space), settings)
    search = optuna.create_study(direction="minimize", sampler=_sampler(settings, space))
    distributions = {name: optuna.distributions.CategoricalDistribution(values) for name, values in space.items()}
    for record in study.trials:  # a resumed study's trials: the sampler learns from them, the grid skips them
        search.add_trial(_frozen(record, study, distributions))
    defaults = {name: values[0] for name, values in space.items()}
    if study.find(defaults) is None:
        search.enqueue_trial(defaults)
    size = math.prod(len(values) for values in space.values())
    running: dict[Future, tuple[dict[str, Value], list[optuna.Trial]]] = {}
    measured, number = 0, max((t["number"] for t in study.trials), default=-1) + 1
    while True:
        repeats = 0  # proposals in a row of points measured or in flight already
        while len(running) < executor.workers and measured < settings.trials and repeats < REPEATS:
            if _exhausted(search, study, size, [c for c, _ in running.values()]):
                break
            asked = search.ask(distributions)
            choices = dict(asked.params)
            known = study.find(choices)
            waiting = next((asks for (c, asks) in running.values() if c == choices), None)
            repeats += 1
            if known is not None:
                _tell(search, asked, study, known)
            elif waiting is not None:
                waiting.append(asked)  # told when the running trial of the same point finishes
            else:
                request = trial.Request(package, kernel, choices, folder / f"trial-{number:05d}", settings.objective,
                                        settings.seed)  # fmt: skip
                running[executor.submit(trial.run, request)] = (choices, [asked])
                asked.set_user_attr("number", number)
                number, measured, repeats = number + 1, measured + 1, 0
        if not running:
            break
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: running[f][1][0].user_attrs["number"]):
            choices, asks = running.pop(future)
            record = {"number": asks[0].user_attrs["number"], "choices": choices, **_outcome(future)}
            study.trials.append(record)
            studies.save(study, folder / STUDY_FILE)
            for asked in asks:
                _tell(search, asked, study, record)
            on_trial(record)
    return study


def _opened(folder: Path, wanted: studies.Study, settings: Settings) -> studies.Study:
    """The study to extend: the one on disk under `--resume` (checked to be this kernel's, objective's and
    space's), else a new one that replaces it."""
    path = folder / STUDY_FILE
    if settings.resume and path.exists():
        try:
            found = studies.load(path)
            studies.resumable(found, wanted, path)
        except studies.StudyError as error:
            raise TuneError(str(error)) from None
        return found
    studies.save(wanted, path)
    return wanted


class _Grid(optuna.samplers.GridSampler):
    """Optuna's grid sampler under ask-and-tell: its `after_trial` stops `Study.optimize` once the grid is
    exhausted, which outside `optimize` is an error; this search asks `is_exhausted` itself."""

    def after_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial, state, values) -> None:
        return None


def _sampler(settings: Settings, space: dict[str, list[Value]]) -> optuna.samplers.BaseSampler:
    if settings.sampler == "grid":
        return _Grid(space, seed=settings.seed)
    return optuna.samplers.TPESampler(seed=settings.seed)


def _exhausted(search: optuna.Study, study: studies.Study, size: int, running: list[dict[str, Value]]) -> bool:
    """Every point of the space is measured or in flight, or the grid sampler has proposed every point."""
    sampler = search.sampler
    grid_done = isinstance(sampler, optuna.samplers.GridSampler) and sampler.is_exhausted(search)
    return grid_done or len({_key(c) for c in [*(t["choices"] for t in study.trials), *running]}) >= size


def _key(choices: dict[str, Value]) -> tuple:
    return tuple(sorted(choices.items()))


def _outcome(future: Future) -> dict:
    """The trial's outcome; a worker that died (killed, out of memory) is the trial's error."""
    try:
        return future.result()
    except Exception as error:
        return {"state": "error", "message": f"the worker failed: {type(error).__name__}: {error}"[:500]}


def _frozen(record: dict, study: studies.Study, distributions: dict) -> optuna.trial.FrozenTrial:
    value = study.value(record)
    state = optuna.trial.TrialState.FAIL if value is None else optuna.trial.TrialState.COMPLETE
    return optuna.trial.create_trial(params=record["choices"], distributions=distributions, value=value, state=state)


def _tell(search: optuna.Study, asked: optuna.Trial, study: studies.Study, record: dict) -> None:
    value = study.value(record)
    if value is None:
        search.tell(asked, state=optuna.trial.TrialState.FAIL)
    else:
        search.tell(asked, value)


def write_best(study: studies.Study, module_file: Path) -> Path | None:
    """Write the best trial's choices to the tuned file beside the kernel's module, which the module reads
    on its next import (so `furiosa-opt compile` and every run use them); None when no trial was ok."""
    ranked = study.ranked()
    if not ranked:
        return None
    best = ranked[0]
    path = tuned_path(Path(module_file))
    facts = {"kernel": study.kernel, "objective": study.objective, "makespan": study.value(best)}
    write_atomic(path, choices_json(best["choices"], **facts))
    return path
