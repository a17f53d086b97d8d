"""The `python` blocks of the tutorial and the guide run: each page's blocks execute in order in one fresh
namespace (as a reader pastes them into one session), on the CPU backend, with the page as the file name, so
a failure points at the page and line. Blocks compute values and assert them against numpy themselves.

A block that is deliberately not runnable (a fragment of a larger kernel) is written ```python title="sketch"
and skipped; the site shows its title, so a reader knows it is a fragment.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ["index.md", "tutorial.md", "rust.md", "tuning.md",
         *(f"guide/{p.name}" for p in sorted((DOCS / "guide").glob("*.md")))]  # fmt: skip
BLOCK = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```$", re.S | re.M)


def blocks(page: str) -> list[tuple[int, str]]:
    """(first line, code) of each runnable block of a page."""
    text = (DOCS / page).read_text()
    found = []
    for match in BLOCK.finditer(text):
        if 'title="sketch"' not in match["info"]:
            found.append((text.count("\n", 0, match.start("code")) + 1, match["code"]))
    return found


def test_the_pages_have_runnable_blocks():
    counts = {page: len(blocks(page)) for page in PAGES}
    assert sum(counts.values()) >= 20, counts
    assert counts["tutorial.md"] >= 3


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, monkeypatch):
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "cpu")
    filename = f"docs/{page}"
    lines = (DOCS / page).read_text().splitlines(keepends=True)
    linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)  # tracebacks show the page
    namespace: dict = {"__name__": f"docs.{page.removesuffix('.md').replace('/', '.')}"}
    try:
        for first, code in blocks(page):
            exec(compile("\n" * (first - 1) + code, filename, "exec"), namespace)
    finally:
        linecache.cache.pop(filename, None)
