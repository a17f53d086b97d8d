"""The two hypothesis profiles of the test suite; tests/conftest.py loads one before any test runs.

`deterministic` (`make test`, plain `pytest`): derandomized, so each property draws the same examples on
every run of the same source and a failure it reports is one it reports again, on any machine; no example
database, so no run changes what a later one draws. `fuzz` (`make fuzz`, `FURIOSA_OPT_FUZZ=1`): fresh
random examples, `SCALE` times as many, and a `@reproduce_failure` blob printed with any failure. A failure
either finds is pinned as an `@example` on the property that found it, so `make test` keeps checking it.
"""

import os

from hypothesis import settings

FUZZ = os.environ.get("FURIOSA_OPT_FUZZ") == "1"
SCALE = 40 if FUZZ else 1

settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("fuzz", derandomize=False, database=None, deadline=None, print_blob=True)


def load() -> None:
    """Select the profile of this run (a test file's `@settings` add to it, never replace it)."""
    settings.load_profile("fuzz" if FUZZ else "deterministic")


def examples(n: int) -> int:
    """A property's example count: n under `make test`, `SCALE`·n under `make fuzz`."""
    return n * SCALE
