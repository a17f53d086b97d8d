"""`furiosa-opt tune` throughput: trials per second on the base template's gemm space (18 points, the whole
grid) with the local executor at 1 and 2 workers and with Ray (a local instance of 2 CPUs), in one run.

Each search runs on a fresh scaffolded copy of the template (the tuned file it writes lands there) into its
own output directory; every executor must find the same best point. Also printed: what a trial costs
inside its worker (compile and schedule) against its wall time, and the bytes a trial ships each way
(the pickled request and its outcome), which is what a cluster's network carries per trial.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import machine, row

from furiosa_opt.cli.compile import Reporter, filtered, reported_targets, selection
from furiosa_opt.cli.new import create
from furiosa_opt.tune import search, trial
from furiosa_opt.tune.executors import LocalExecutor, RayExecutor

# The workers' server preloads this script (so each worker's run of it as `__mp_main__` finds its imports
# loaded, as the command's workers find `furiosa_opt.cli.main`); Python 3.11's server ignores the parent's
# sys.path, so it finds the script through PYTHONPATH.
PRELOAD = (Path(__file__).stem,)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))


def target_in(parent: Path):
    """The gemm kernel of a fresh copy of the base template under `parent`."""
    root, here = create("tune_bench", parent), Path.cwd()
    os.chdir(root)  # the workspace is found from the current directory
    try:
        report = Reporter(False)
        _, packages = selection([], report)
        (found,) = filtered(reported_targets(packages, report)[0], ["gemm_kernel"], report)
    finally:
        os.chdir(here)  # the workers' server starts here, where this script's imports resolve as they did
    return found


def measured(name: str, executor, parent: Path, trials: int) -> dict:
    """The same whole search twice on one executor: cold (its worker servers start with the first trials)
    and warm (the servers up); each on a new study, so both measure every point."""
    found = target_in(parent / name)
    times, studies = [], []
    try:
        for run in ("cold", "warm"):
            start = time.perf_counter()
            folder = parent / name / run
            studies.append(search.tune(found.package, found.source, folder, executor, search.Settings(trials)))
            times.append(time.perf_counter() - start)
    finally:
        executor.close()
    study = studies[-1]
    request = trial.Request(found.package, found.source, study.trials[0]["choices"], parent / "t", "static")
    return {"cold": times[0], "warm": times[1], "trials": len(study.trials), "study": study,
            "inside": statistics.median(t["seconds"] for t in study.trials), "sent": len(pickle.dumps(request)),
            "received": statistics.median(len(pickle.dumps(t)) for t in study.trials)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=18)
    options = parser.parse_args()
    print(machine())
    import optuna
    import ray

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory() as scratch:
        parent = Path(scratch)
        runs = {  # the local executors share one worker server: the first one started pays for it
            "local, 1 worker": measured("one", LocalExecutor(1, PRELOAD), parent, options.trials),
            "local, 2 workers": measured("two", LocalExecutor(2, PRELOAD), parent, options.trials),
        }
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 << 20, log_to_driver=False)
        ray_start = time.perf_counter() - start
        try:
            runs["Ray, 2 CPUs (local instance)"] = measured("ray", RayExecutor(), parent, options.trials)
        finally:
            ray.shutdown()
    bests = {name: (r["study"].ranked()[0]["makespan"], tuple(r["study"].ranked()[0]["choices"].items()))
             for name, r in runs.items()}  # fmt: skip
    print(f"best point: {next(iter(bests.values()))}; the same on every executor: {len(set(bests.values())) == 1}")
    print(f"ray.init: {ray_start:.2f} s")
    print(f"{'executor':<32} {'trials':>6} {'cold':>7} {'warm':>7} {'trials/s cold':>14} {'warm':>6} "
          f"{'in worker':>10} {'sent':>6} {'back':>6}")  # fmt: skip
    for name, r in runs.items():
        cold, warm = r["trials"] / r["cold"], r["trials"] / r["warm"]
        print(f"{name:<32} {r['trials']:>6} {r['cold']:>6.2f}s {r['warm']:>6.2f}s {cold:>14.2f} {warm:>6.2f} "
              f"{r['inside']:>9.3f}s {r['sent']:>5}B {r['received']:>5.0f}B")  # fmt: skip
    rate = {name: r["trials"] / r["warm"] for name, r in runs.items()}
    one, two, on_ray = rate["local, 1 worker"], rate["local, 2 workers"], rate["Ray, 2 CPUs (local instance)"]
    row(
        "2 local workers vs 1 (warm)",
        f"{two:.2f} / {one:.2f} trials/s",
        f"{two / one:.2f}×",
        "≥ 1.5×",
        two / one >= 1.5,
    )
    ratio = on_ray / two
    row("Ray (2 CPUs) vs 2 local workers (warm)", f"{on_ray:.2f} / {two:.2f} trials/s", f"{ratio:.2f}×", "≥ 0.5×",
        ratio >= 0.5)  # fmt: skip
    return 0 if len(set(bests.values())) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
