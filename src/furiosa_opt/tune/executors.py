"""Where trials run: a local process pool, or Ray tasks on an existing cluster. Either way each trial gets a
fresh worker process (its kernel module imported once, with its own assignment) and the search sees a
`concurrent.futures.Future` per trial.

The local pool forks each worker from a server that has imported the compiler already (`forkserver` with
`furiosa_opt.tune.trial` preloaded) and retires it after one trial. Ray runs each trial as a task; a Ray
worker keeps such a server of its own and forks each of its trials from it (`_forked`). The task's
arguments are the pickled `trial.Request` (paths, not files: the cluster's nodes must see the workspace
at the same path, a shared file system).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager

EXECUTORS = ("local", "ray")
RAY_MISSING = "the Ray executor needs Ray: pip install 'furiosa-opt[ray]'"
DEFERRED = (signal.SIGINT, signal.SIGTERM)  # what stops a command while a worker is being started
REACH_SECONDS = 5.0  # to open a connection to a Ray cluster's address before Ray is asked to join it


class ExecutorError(RuntimeError):
    """An executor that cannot start: Ray missing, or no cluster at the address."""


class LocalExecutor:
    """`workers` trials at a time, each in a fresh process of this machine.

    A worker forked from the server still runs the parent's main script again (multiprocessing does, as
    `__mp_main__`); `preload` names the modules that script imports (the command's `furiosa_opt.cli.main`),
    so that this finds them loaded: a trial then starts in 15 ms rather than in the script's import time."""

    def __init__(self, workers: int | None = None, preload: tuple[str, ...] = ()):
        self.workers = max(1, workers or os.cpu_count() or 1)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["furiosa_opt.tune.trial", *preload])
        self.pool = ProcessPoolExecutor(self.workers, mp_context=context, max_tasks_per_child=1)

    def submit(self, function: Callable, *args: object) -> Future:
        """The call in a worker; a SIGINT or SIGTERM that arrives meanwhile is delivered once the pool has
        started (and tracks) the worker it may start, so `abandon` finds every worker to kill."""
        with _signals_deferred():
            return self.pool.submit(function, *args)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def abandon(self) -> None:
        """Stop now: kill the trials in flight and drop the pending ones (the command was interrupted).

        The pool may be starting a worker to replace one that just finished, and a starting worker still has
        to open the semaphores of the pool's call queue, which vanish as soon as the pool drops the queue
        (it would print a `FileNotFoundError` traceback on the way out). So the queue is held until every
        worker, the late ones included, is killed; shutting the pool down first ends its manager thread, so
        no worker starts after the last kill."""
        queue = self.pool._call_queue  # the pool's own: no public handle keeps its semaphores alive
        for worker in multiprocessing.active_children():
            worker.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)  # the pool is broken now: this returns at once
        for worker in multiprocessing.active_children():  # one it started meanwhile, to replace a retired one
            worker.kill()
            worker.join()
        del queue


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held while the block runs in the main thread (elsewhere Python runs no handler),
    then delivered to the handlers in force before it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {number: signal.signal(number, lambda n, frame: caught.append(n)) for number in DEFERRED}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in caught[:1]:
            signal.raise_signal(number)


_IN_RAY_WORKER: list[LocalExecutor] = []  # a Ray worker's own one-process pool, made by its first trial


def _forked(function: Callable, *args: object) -> object:
    """A Ray task's body: the call in a fresh process forked from this Ray worker's own server, so that
    the worker itself (and its loaded `ray`) is reused from trial to trial while each trial still
    imports the kernel's module afresh."""
    if not _IN_RAY_WORKER:
        _IN_RAY_WORKER.append(LocalExecutor(1, preload=("ray",)))  # `ray`: what the worker's main script loads
    return _IN_RAY_WORKER[0].submit(function, *args).result()


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
            _reachable(address)
            try:
                ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                first = (str(error).splitlines() or [""])[0]
                raise ExecutorError(
                    f"cannot reach a Ray cluster at {address or 'a new local instance'}: {first}"
                ) from None
        self.workers = max(1, workers or int(ray.cluster_resources().get("CPU", 1)))
        self.task = ray.remote(num_cpus=1)(_forked)
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


def _reachable(address: str | None) -> None:
    """Refuse at once a `host:port` or `ray://host:port` where nothing listens: Ray itself retries such
    an address for minutes. `auto` and no address are Ray's to find (it fails fast when there is none)."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not (port.isascii() and port.isdigit()) or not host:
        raise ExecutorError(f"--address {address!r} is not auto, host:port or ray://host:port")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
    except OSError as error:
        raise ExecutorError(f"cannot reach a Ray cluster at {address}: {error.strerror or error}") from None


def executor(
    name: str, address: str | None = None, workers: int | None = None, preload: tuple[str, ...] = ()
) -> LocalExecutor | RayExecutor:
    """The executor `--executor` names (`preload`: see LocalExecutor)."""
    return RayExecutor(address, workers) if name == "ray" else LocalExecutor(workers, preload)
