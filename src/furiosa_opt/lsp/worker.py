"""The language server's worker: a warm process (furiosa_opt already imported) that forks one child per
request to import and trace the user's module (`analysis.analyse`) under a time and memory limit.

A child that loops forever, exhausts memory or crashes costs one diagnostic; the worker and the server
stay up. A newer request for the same file kills the child still working on an older one (its answer
would be stale). Requests and answers are JSON lines on stdin and stdout:

    {"id": 3, "path": "/home/me/pkg/gemm.py", "text": "…", "full": false}
    {"id": 3, "result": {"diagnostics": […], "values": […], …}}      or   {"id": 3, "superseded": true}

Run as `python -m furiosa_opt.lsp.worker TIMEOUT_SECONDS MEMORY_MB`.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
from typing import Any

from furiosa_opt.lsp import analysis


class Limit(BaseException):
    """The child's time is up (raised inside the user's code, so the diagnostic points at the line that
    was running): the SIGALRM handler raises it. Not an `Exception`, so the user's `except Exception`
    does not swallow it (the worker's SIGKILL, two seconds later, would still end the child).

        raise Limit("importing and tracing this file took over 10 s (an endless loop?)")
    """

    furiosa_opt_limit = True


def _child(request: dict, timeout: float, memory_mb: int, out: int) -> None:
    """In the forked child: apply the limits, analyse, write the answer to `out`, exit. The user's module
    gets no stdin and its prints go to stderr: both pipes are the worker's protocol."""
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.dup2(2, 1)
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def expire(signum: int, frame: Any) -> None:
        raise Limit(f"importing and tracing this file took over {timeout:g} s (an endless loop?)")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        answer = {"id": request["id"], "result": analysis.analyse(request["path"], request["text"], request["full"])}
    except BaseException as error:  # the limit fired outside the user's code
        answer = {"id": request["id"], "error": f"{type(error).__name__}: {error}"}
    signal.setitimer(signal.ITIMER_REAL, 0)
    data = (json.dumps(answer, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
    os._exit(0)


class Worker:
    """The loop: read requests, run each in a child, answer in order.

    Worker(timeout=10, memory_mb=3072).run()  # until stdin closes
    """

    def __init__(self, timeout: float, memory_mb: int):
        self.timeout, self.memory_mb = timeout, memory_mb
        self.pending: list[dict] = []
        self.buffer = b""

    def read_requests(self) -> bool:
        """Read what stdin has; False at end of input."""
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return False
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        self.pending += [json.loads(line) for line in lines if line.strip()]
        return True

    def run(self) -> None:
        while True:
            if not self.pending:
                if not self.read_requests():
                    return
                continue
            request = self.pending.pop(0)
            if any(r["path"] == request["path"] for r in self.pending):
                _send({"id": request["id"], "superseded": True})  # a newer text of the same file is queued
                continue
            if not self.serve(request):
                return

    def serve(self, request: dict) -> bool:
        """Run one request in a child; False if stdin closed meanwhile."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child never returns into this loop, whatever happens
            try:
                os.close(read)
                _child(request, self.timeout, self.memory_mb, write)
            finally:
                os._exit(1)
        os.close(write)
        data, open_ = b"", True
        deadline = time.monotonic() + self.timeout + 2  # the child's own alarm fires first, in Python code
        try:
            while True:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([read, 0] if open_ else [read], [], [], max(left, 0))
                if read in ready:
                    chunk = os.read(read, 1 << 20)
                    if not chunk:
                        break
                    data += chunk
                elif 0 in ready:
                    open_ = self.read_requests()
                    if not open_ or any(r["path"] == request["path"] for r in self.pending):
                        os.kill(pid, signal.SIGKILL)
                        _send({"id": request["id"], "superseded": True})
                        return open_
                elif left <= 0:
                    os.kill(pid, signal.SIGKILL)
                    break
        finally:
            os.close(read)
            _, status = os.waitpid(pid, 0)
        if data.endswith(b"\n"):
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            _send({"id": request["id"], "error": _death(status, self.timeout)})
        return open_


def _death(status: int, timeout: float) -> str:
    """Why a child gave no answer."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return f"importing and tracing this file took over {timeout:g} s and was stopped"
    if os.WIFSIGNALED(status):
        return f"the module crashed the analysis ({signal.Signals(os.WTERMSIG(status)).name})"
    return f"the analysis exited with status {os.WEXITSTATUS(status)} without an answer"


def _send(answer: dict) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def main() -> None:
    timeout, memory_mb = float(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="furiosa-opt-lsp-cwd-") as cwd:
        os.chdir(cwd)  # a relative write by the user's module never lands in the user's tree
        Worker(timeout, memory_mb).run()


if __name__ == "__main__":
    main()
