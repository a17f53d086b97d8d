"""What the commands that stop on SIGINT and SIGTERM share (the wrapper, `tune`): a handler for both, in
force while a `with` block runs and the previous handlers back after it.

A process forked from this one (a compile or trial worker) inherits the handler; there it only exits,
quietly, with the signal's status, and leaves the stopping to the command.
"""

from __future__ import annotations

import os
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopping:
    """Subclasses say what a signal does to the command in `stop(signum)`."""

    def __enter__(self) -> Stopping:
        self.pid = os.getpid()
        self.previous = {s: signal.signal(s, self.handle) for s in SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)

    def handle(self, signum: int, frame: object) -> None:
        if os.getpid() != self.pid:  # a forked worker inherited this handler: it goes, quietly
            os._exit(128 + signum)
        self.stop(signum)

    def stop(self, signum: int) -> None:
        raise NotImplementedError
