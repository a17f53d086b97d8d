"""Shared fixtures of the MNIST tests, and the lines they report at the end of the run (the held-out accuracy
and forward's makespan), printed under `pytest` and `furiosa-opt test` alike."""

import numpy as np
import pytest

from mnist import host

REPORT = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(REPORT, [])
    if lines:
        terminalreporter.section("mnist")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def report(request):
    """Call with a line to print it in the run's summary."""
    return request.config.stash.setdefault(REPORT, []).append


@pytest.fixture(scope="session")
def codes() -> dict[str, np.ndarray]:
    """The checked-in model and held-out set as raw codes (bf16 as uint16)."""
    return host.read_codes()
