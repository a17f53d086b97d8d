"""The language server's tests share a process with the browser tests (`make test` runs both on each
worker), whose session-long Playwright (tests/conftest.py's `browser`, sync API) leaves its event loop
marked as running in the thread between calls; pytest-asyncio, which pytest-lsp drives the client with,
refuses to start a loop there. Each module here takes the thread's running-loop slot for its tests and
gives it back, so Playwright finds its loop again when the browser tests go on."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture(scope="module", autouse=True)
def _thread_free_of_a_running_loop():
    held = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    yield
    asyncio._set_running_loop(held)
