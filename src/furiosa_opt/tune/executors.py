"""Where trials run: a local process pool, or Ray tasks on an existing cluster. Either way each trial gets a
fresh worker process (its kernel module imported once, with its own assignment) and the search sees a
`concurrent.futures.Future` per trial.

The local pool forks each worker from a server that has imported the compiler already (`forkserver` with
`furiosa_opt.tune.trial` preloaded) and retires it after one trial. Ray runs each trial as a task whose
worker exits after it (`max_calls=1`); the task's arguments are the pickled `trial.Request` (paths, not
files: the cluster's nodes must see the workspace at the same path, a shared file system).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor

EXECUTORS = ("local", "ray")
RAY_MISSING = "the Ray executor needs Ray: pip install 'furiosa-opt[ray]'"


class ExecutorError(RuntimeError):
    """An executor that cannot start: Ray missing, or no cluster at the address."""


class LocalExecutor:
    """`workers` trials at a time, each in a fresh process of this machine."""

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or os.cpu_count() or 1)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["furiosa_opt.tune.trial"])
        self.pool = ProcessPoolExecutor(self.workers, mp_context=context, max_tasks_per_child=1)

    def submit(self, function: Callable, *args: object) -> Future:
        return self.pool.submit(function, *args)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def abandon(self) -> None:
        """Stop now: kill the trials in flight and drop the pending ones (the command was interrupted)."""
        for worker in multiprocessing.active_children():
            worker.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)  # the pool is broken now: this returns at once
        for worker in multiprocessing.active_children():  # one it started meanwhile, to replace a retired one
            worker.kill()


def _call(function: Callable, *args: object) -> object:
    return function(*args)


class RayExecutor:
    """Trials as Ray tasks, as many at a time as the cluster has CPUs (or `workers`). `address` is
    `auto` (the cluster this machine belongs to) or `ray://host:port`; None uses the Ray instance this
    process has already started (`ray.init`), else starts a local one."""

    def __init__(self, address: str | None = None, workers: int | None = None):
        try:
            import ray
        except ImportError:
            raise ExecutorError(RAY_MISSING) from None
        self.ray = ray
        self.owned = not ray.is_initialized()
        if self.owned:
            try:
                ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                first = (str(error).splitlines() or [""])[0]
                raise ExecutorError(
                    f"cannot reach a Ray cluster at {address or 'a new local instance'}: {first}"
                ) from None
        self.workers = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
        self.task = ray.remote(num_cpus=1, max_calls=1)(_call)
        self.submitted: list = []  # the tasks' object references, for `abandon`

    def submit(self, function: Callable, *args: object) -> Future:
        reference = self.task.remote(function, *args)
        self.submitted.append(reference)
        return reference.future()

    def close(self) -> None:
        if self.owned:
            self.ray.shutdown()

    def abandon(self) -> None:
        """Stop now: cancel the tasks not finished (their workers are killed), then close."""
        for reference in self.submitted:
            self.ray.cancel(reference, force=True)
        self.close()


def executor(name: str, address: str | None = None, workers: int | None = None) -> LocalExecutor | RayExecutor:
    """The executor `--executor` names."""
    return RayExecutor(address, workers) if name == "ray" else LocalExecutor(workers)
