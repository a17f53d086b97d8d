"""The `python` blocks of the tutorial and the guide run: each page's blocks execute in order in one fresh
namespace (as a reader pastes them into one session), on the CPU backend, with the page as the file name, so
a failure points at the page and line. Blocks compute values and assert them against numpy themselves.

A block that is deliberately not runnable (a fragment of a larger kernel) is written ```python title="sketch"
and skipped; the site shows its title, so a reader knows it is a fragment. A block titled with a file name,
```python title="src/hello/axpb.py", is a file of the reader's kernel package: tests/docs/test_tutorial.py
saves it into a scaffolded package and runs it there. Here it runs in the page's namespace like any block,
unless it imports that package (the one a `src/NAME/…` title names), which exists only there.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ["index.md", "tutorial.md", "rust.md", "tuning.md", "torch.md",
         *(f"guide/{p.name}" for p in sorted((DOCS / "guide").glob("*.md")))]  # fmt: skip
BLOCK = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```$", re.S | re.M)
TITLE = re.compile(r'title="(?P<title>[^"]*)"')


def blocks(page: str) -> list[tuple[int, str]]:
    """(first line, code) of each runnable block of a page."""
    text = (DOCS / page).read_text()
    matches = [(match, title[1] if (title := TITLE.search(match["info"])) else "") for match in BLOCK.finditer(text)]
    packages = {title.split("/")[1] for _, title in matches if title.startswith("src/") and title.count("/") >= 2}
    imports = re.compile(rf"^(?:from|import) ({'|'.join(map(re.escape, packages))})\b", re.M) if packages else None
    found = []
    for match, title in matches:
        if title == "sketch" or (title and imports and imports.search(match["code"])):
            continue
        found.append((text.count("\n", 0, match.start("code")) + 1, match["code"]))
    return found


def test_the_pages_have_runnable_blocks():
    counts = {page: len(blocks(page)) for page in PAGES}
    assert sum(counts.values()) >= 20, counts
    assert counts["tutorial.md"] >= 3


def test_package_files_that_import_the_package_are_left_to_the_tutorial_walk():
    """The tutorial's kernel file runs here (sections 3 and 4 use it); its host program and test, which
    import `hello`, do not."""
    codes = [code for _, code in blocks("tutorial.md")]
    assert any("def axpb_kernel(" in code for code in codes)
    assert not any("from hello" in code or "import hello" in code for code in codes)
    text = (DOCS / "tutorial.md").read_text()
    assert 'title="src/hello/axpb.py"' in text and 'title="tests/test_axpb.py"' in text


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
