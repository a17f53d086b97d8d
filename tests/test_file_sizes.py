"""No Python file in src/ is over 600 lines: a file that long holds several modules, and a reader should take
each in one pass (docs/design.md, "Quality bars"). The message names every file over the bound, longest first."""

from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "furiosa_opt"
MOST = 600


def test_no_source_file_is_over_600_lines():
    sizes = {path.relative_to(SRC.parent).as_posix(): len(path.read_text().splitlines()) for path in SRC.rglob("*.py")}
    assert len(sizes) > 100  # the walk found the package
    over = sorted(((n, p) for p, n in sizes.items() if n > MOST), reverse=True)
    assert not over, f"over {MOST} lines: " + ", ".join(f"{p} ({n})" for n, p in over)
