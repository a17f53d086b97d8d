"""Fixtures for the viewer tests: the real server in a thread, pages in the session's headless Chromium
(tests/conftest.py), and the gemm schedule and graph compiled from the example package through the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from furiosa_opt.viewer.server import make_server, url_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def serve() -> Iterator[Callable[[Path | None], str]]:
    """Start `furiosa_opt.viewer.server` for a file on a free loopback port; returns the page URL."""
    servers = []

    def start(data: Path | None = None) -> str:
        server = make_server(data, port=0)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return url_of(server)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def open_page(browser, serve):
    """A fresh page on the viewer, waiting until /data (if any) has been loaded."""
    pages = []

    def open_(data: Path | None = None):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.errors = errors
        page.until = lambda expression: until(page, expression)
        page.goto(serve(data))
        page.until("window.viewerState && window.viewerState.ready === true")
        pages.append(page)
        return page

    yield open_
    for page in pages:
        assert page.errors == [], page.errors
        page.close()


def until(page, expression: str, timeout: float = 10.0) -> None:
    """Poll a JS expression. Playwright's wait_for_function polls through eval, which the viewer's
    Content-Security-Policy (no 'unsafe-eval') rightly refuses."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(20)


@pytest.fixture(scope="session")
def gemm_dumps(tmp_path_factory) -> dict[str, Path]:
    """The gemm kernel's schedule and LIR graph, produced by `furiosa-opt compile` as a user would."""
    out = tmp_path_factory.mktemp("gemm")
    dumps = {"schedule": out / "gemm.schedule.json", "graph": out / "gemm.graph.json"}
    tool = Path(sys.executable).with_name("furiosa-opt")
    command = [str(tool), "compile", "gemm_kernel", "--dump-schedule", str(dumps["schedule"])]
    command += ["--dump-graph", str(dumps["graph"])]
    environment = {**os.environ, "FURIOSA_OPT_OUT_DIR": str(out / "artifacts")}
    done = subprocess.run(command, cwd=ROOT / "examples" / "base-template", env=environment, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    return dumps
