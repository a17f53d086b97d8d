"""MkDocs hook: the two generated parts of the site, so neither is a hand-kept copy.

* `<!-- generated: api-reference MODULE... -->` becomes one mkdocstrings directive per name of
  `furiosa_opt.__all__` defined in those modules (their order in `__all__`). The build fails if a public
  name is on no reference page, so a new export cannot go undocumented.
* `<!-- generated: rust-table -->` becomes the Rust-to-Python table, read from the tables of
  `docs/api-coverage.md` (the page `tests/test_api_coverage.py` keeps true), grouped by upstream file.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

import furiosa_opt

MARKER = re.compile(r"<!-- generated: (?P<kind>[\w-]+)(?P<args>[^>]*?)\s*-->")
COVERAGE = Path(__file__).resolve().parent.parent / "api-coverage.md"

_referenced: set[str] = set()


def on_pre_build(config: Any) -> None:
    _referenced.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def expand(match: re.Match) -> str:
        kind, args = match["kind"], match["args"].split()
        if kind == "api-reference":
            return api_reference(args, page.file.src_uri)
        if kind == "rust-table":
            return rust_table()
        raise PluginError(f"{page.file.src_uri}: unknown generated block {kind!r}")

    return MARKER.sub(expand, markdown)


def on_post_build(config: Any) -> None:
    missing = [name for name in furiosa_opt.__all__ if name not in _referenced]
    if missing:
        raise PluginError(f"public names on no API reference page: {', '.join(missing)}")


def api_reference(modules: list[str], where: str) -> str:
    exports: dict[str, str] = furiosa_opt._EXPORTS
    unknown = set(modules) - set(exports.values())
    if unknown:
        raise PluginError(f"{where}: no public name is defined in {', '.join(sorted(unknown))}")
    names = [name for name in furiosa_opt.__all__ if exports[name] in modules]
    _referenced.update(names)
    return "\n\n".join(f"::: {exports[name]}.{name}" for name in names)


def coverage_rows(heading_cells: int) -> list[list[str]]:
    """The body rows of the api-coverage tables with `heading_cells` columns, cells stripped."""
    rows = []
    for line in COVERAGE.read_text().splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == heading_cells and not cells[0].startswith(("#", "upstream")):
            rows.append(cells)
    return rows


def rust_table() -> str:
    groups: dict[str, list[str]] = defaultdict(list)
    for number, name, home, python, _tests, note in coverage_rows(6):
        file, _, on = home.partition(" ")
        link = f"[{number}](api-coverage.md)"
        groups[file.strip("`")].append(f"| {name} | {on} | {python} | {note} | {link} |")
    if sum(map(len, groups.values())) == 0:
        raise PluginError("docs/api-coverage.md: no name rows found")
    out = []
    for file, rows in groups.items():
        out += [f"### `{file}`", "", "| Rust | on | Python | note | row |", "|---|---|---|---|---|", *rows, ""]
    out += ["### Types and op enums", "", "| Rust | Python | note |", "|---|---|---|"]
    out += [f"| {rust} | {python} | {note} |" for rust, python, _tested, note in coverage_rows(4)]
    return "\n".join(out) + "\n"
