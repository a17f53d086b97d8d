"""The documentation site builds strict (no warning: every link and anchor resolves, every docstring renders),
its API reference shows every name of `furiosa_opt.__all__`, and its Rust table has a row for each of the 113
upstream names of docs/api-coverage.md. The build goes to target/docs-test/, never into the tree.

In Debian's Chromium (driven by Playwright, as the viewer's tests do; FURIOSA_OPT_SKIP_BROWSER=1 skips), the site
opened from the file system, as `make docs` says to open it, searches (the offline plugin and the iframe-worker
shim of docs/javascripts) and loads nothing from outside itself; and at 1400 px, on the API reference page with
the longest signature, no code block runs past its box or the content column (docs/stylesheets/extra.css).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
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


@pytest.fixture
def page(browser, build):
    assert build.returncode == 0, build.stderr[-3000:]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.errors, page.requests = [], []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.on("request", lambda request: page.requests.append(request.url))
    yield page
    page.close()


def test_search_works_on_the_site_opened_as_a_file(page):
    page.goto((SITE / "guide" / "memories.html").as_uri())
    search = page.locator("input.md-search__input")
    search.wait_for(state="visible", timeout=10_000)  # Material hides it when its search worker cannot start
    search.fill("broadcast")
    page.locator(".md-search-result__item").first.wait_for(timeout=10_000)
    meta = page.inner_text(".md-search-result__meta")
    assert re.fullmatch(r"\d+ matching documents?", meta), meta
    links = page.eval_on_selector_all(".md-search-result__item a", "links => links.map(a => a.href)")
    assert any("guide/memories.html#" in link for link in links), links
    assert page.errors == []
    outside = [url for url in page.requests if not url.startswith("file://")]
    assert outside == [], f"the site loads from outside itself: {outside}"


SIGNATURE = re.compile(r'<div class="doc-signature highlight"><pre>(.*?)</pre>', re.S)


def longest_signature(html: str) -> int:
    """The length of the page's longest signature written on one line, as mkdocstrings prints it unformatted."""
    texts = [unescape(re.sub(r"<[^>]+>", "", code)) for code in SIGNATURE.findall(html)]
    return max((len(" ".join(text.split())) for text in texts), default=0)


# Every code block of the content column as measured: its box, its scrolling, and the boxes of its lines.
MEASURE = """() => {
  const column = document.querySelector('.md-content__inner').getBoundingClientRect();
  const blocks = [...document.querySelectorAll('.md-content pre, .md-content pre > code')].map(el => {
    const box = el.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(el);
    const lines = [...range.getClientRects()].filter(r => r.width > 0);
    return {
      text: el.textContent.slice(0, 80), signature: el.closest('.doc-signature') !== null,
      left: box.left, right: box.right, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth,
      overflowX: getComputedStyle(el).overflowX, tag: el.tagName,
      linesRight: Math.max(box.left, ...lines.map(r => r.right)),
    };
  });
  return {column: {left: column.left, right: column.right}, pageWidth: document.scrollingElement.scrollWidth,
          viewport: innerWidth, blocks};
}"""
FLATTEN = """() => document.querySelectorAll('.doc-signature pre > code').forEach(code => {
  code.textContent = code.textContent.replace(/\\s*\\n\\s*/g, ' ').trim();
})"""


def overflowing(measured: dict) -> list[str]:
    """What runs past its box: a block outside the content column, a block whose lines are wider than it and
    that does not scroll inside itself, a signature that is not wholly visible; and the page scrolling sideways."""
    column, found = measured["column"], []
    if measured["pageWidth"] > measured["viewport"]:
        found.append(f"the page is {measured['pageWidth']} px wide in a {measured['viewport']} px viewport")
    for block in measured["blocks"]:
        where = f"{block['tag']} {block['text']!r}"
        if block["left"] < column["left"] - 0.5 or block["right"] > column["right"] + 0.5:
            found.append(f"{where}: [{block['left']}, {block['right']}] outside the column {column}")
        fits = block["scrollWidth"] <= block["clientWidth"]
        if not fits and block["overflowX"] not in ("auto", "scroll"):
            found.append(f"{where}: {block['scrollWidth']} px of lines in {block['clientWidth']} px, not scrolling")
        signature = block["signature"] and block["tag"] == "CODE"
        if signature and (not fits or block["linesRight"] > block["right"] + 0.5):
            found.append(f"{where}: a signature {block['scrollWidth']} px wide in {block['clientWidth']} px")
    return found


def test_code_blocks_stay_inside_their_boxes_at_1400_px(page):
    pages = {path: longest_signature(path.read_text()) for path in (SITE / "reference").glob("*.html")}
    widest = max(pages, key=pages.get)
    assert pages[widest] > 100, pages  # a signature far wider than the column at 1400 px, on one line
    page.goto(widest.as_uri())
    measured = page.evaluate(MEASURE)
    assert 600 < measured["column"]["right"] - measured["column"]["left"] < 800, measured["column"]
    assert sum(block["signature"] for block in measured["blocks"]) >= 10
    assert overflowing(measured) == []
    # as mkdocstrings renders them without a formatter (ruff or black): each signature on one line
    page.evaluate(FLATTEN)
    flat = page.evaluate(MEASURE)
    assert max(b["linesRight"] - b["left"] for b in flat["blocks"] if b["signature"]) > 0  # measured, not empty
    assert overflowing(flat) == []
