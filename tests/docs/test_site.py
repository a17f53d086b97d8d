"""The documentation site builds strict (no warning: every link and anchor resolves, every docstring renders),
its API reference shows every name of `furiosa_opt.__all__`, and its Rust table has a row for each of the 113
upstream names of docs/api-coverage.md. The build goes to target/docs-test/, never into the tree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import furiosa_opt

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "target" / "docs-test" / "site"


@pytest.fixture(scope="module")
def build() -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "FURIOSA_OPT_BACKEND": "cpu"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(SITE)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_strict_build_has_no_warning(build):
    assert build.returncode == 0, build.stderr[-3000:]
    assert "WARNING" not in build.stderr, build.stderr[-3000:]


def test_the_reference_shows_every_public_name(build):
    assert build.returncode == 0, build.stderr[-3000:]
    shown = set()
    for page in (SITE / "reference").glob("*.html"):
        shown |= set(re.findall(r'id="furiosa_opt\.[\w.]*?\.(\w+)"', page.read_text()))
    missing = [name for name in furiosa_opt.__all__ if name not in shown]
    assert not missing, f"not in the API reference: {missing}"


def test_the_rust_table_lists_every_upstream_name(build):
    assert build.returncode == 0, build.stderr[-3000:]
    html = (SITE / "rust.html").read_text()
    rows = re.findall(r'<a href="api-coverage.html">(\d+)</a>', html)
    assert sorted(map(int, rows)) == list(range(1, 114))
