import os
import sys
from pathlib import Path

import hypothesis_profiles
import pytest

hypothesis_profiles.load()  # derandomized under `make test`, random and longer under `make fuzz`

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright, one for the session (the viewer's and the site's tests: two
    sync Playwright instances cannot be open at once), or a failure saying how to get it: a browser test
    must never skip silently in CI."""
    if not CHROMIUM.exists():
        if os.environ.get("FURIOSA_OPT_SKIP_BROWSER") == "1":
            pytest.skip("FURIOSA_OPT_SKIP_BROWSER=1")
        pytest.fail(
            f"{CHROMIUM} is missing: install it with `apt-get install -y chromium` (or FURIOSA_OPT_SKIP_BROWSER=1)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _differential_summary() -> dict | None:
    """This process's tally of the differential harness (test_differential.py), if it ran here."""
    found = (getattr(m, "DIFFERENTIAL_SUMMARY", None) for m in list(sys.modules.values()))
    return next((s for s in found if isinstance(s, dict)), None)  # torch.ops makes up any attribute asked for


_WORKER_SUMMARIES: list[dict] = []  # under pytest-xdist: each worker's tally, sent when it finishes


def pytest_sessionfinish(session) -> None:
    """A pytest-xdist worker sends its tally to the controller, which prints the sum."""
    summary = _differential_summary()
    if hasattr(session.config, "workeroutput") and summary is not None:
        session.config.workeroutput["differential"] = summary


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    if "differential" in getattr(node, "workeroutput", {}):
        _WORKER_SUMMARIES.append(node.workeroutput["differential"])


def pytest_terminal_summary(terminalreporter) -> None:
    """The differential harness's tally: kernels compared, refused fixtures, and each expected failure with
    its reason (summed over the workers when pytest-xdist runs the tests)."""
    summaries = _WORKER_SUMMARIES or [s for s in [_differential_summary()] if s is not None]
    if not summaries:
        return
    summary = {
        "compared": sum(s["compared"] for s in summaries),
        "refused": max(s["refused"] for s in summaries),
        "expected": {k: v for s in summaries for k, v in s["expected"].items()},
    }
    if not (summary["compared"] or summary["expected"]):
        return
    write = terminalreporter.write_line
    write(
        f"differential harness: {summary['compared']} kernel(s) bit-identical on the CPU backend and the simulator, "
        f"{summary['refused']} refused fixture(s) (test_negative.py), {len(summary['expected'])} expected failure(s)"
    )
    for identity, reason in sorted(summary["expected"].items()):
        write(f"  expected failure: {identity}: {reason}")
