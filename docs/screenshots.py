"""The MNIST tutorial's screenshots (docs/tutorial-mnist.md): `.venv/bin/python docs/screenshots.py`.

Compiles `forward` of examples/mnist in a scratch copy (so nothing in the checkout changes), applies the
tutorial's one mapping change to a second copy and compiles that too, then opens each dump in the viewer
exactly as a reader does (`furiosa-opt view FILE --port 0 --no-browser`) and photographs it with Playwright
driving Debian's Chromium (/usr/bin/chromium; `apt-get install chromium`), never a downloaded browser build.
Writes docs/images/mnist-*.png (each well under 200 KB) and prints their names and sizes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mnist"
IMAGES = ROOT / "docs" / "images"
FURIOSA_OPT = Path(sys.executable).with_name("furiosa-opt")
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
VIEWPORT = {"width": 1400, "height": 900}
SCHEDULE_CLIP = {"x": 0, "y": 0, "width": 1400, "height": 800}  # toolbar, lanes and memory panes, no blank foot
GRAPH_CLIP = {"x": 0, "y": 0, "width": 1400, "height": 540}  # the graph canvas is 480 px high

# The tutorial's step 5, the same three substitutions as its `sed` line (tests/docs checks they agree):
# the classes move from slice 16 c (`C, 1 # 16`) to slice c (`1 # 16, C`), and the bias switch follows.
EDIT = (
    ("C, 1 # 16", "1 # 16, C"),
    ("Dummy16, 1 # 16", "1 # 16, Dummy16"),
    ("slice1=16, slice0=16", "slice1=16, slice0=1"),
)


def edited(kernel: str) -> str:
    """kernel.py with the tutorial's edit: each substitution at its first place on every line (sed's `s///`)."""
    lines = kernel.splitlines(keepends=True)
    for old, new in EDIT:
        lines = [line.replace(old, new, 1) for line in lines]
    return "".join(lines)


def scratch_copy(target: Path) -> Path:
    """examples/mnist copied to `target` without build leftovers: a lone kernel package outside the workspace."""
    ignore = shutil.ignore_patterns("target", "*.egg-info", "__pycache__", ".pytest_cache", "data")
    shutil.copytree(EXAMPLE, target, ignore=ignore)
    return target


def compile_forward(package: Path, out: Path) -> dict[str, Path]:
    """`furiosa-opt compile forward --dump-schedule … --dump-graph …` in `package`."""
    dumps = {"schedule": out / "schedule.json", "graph": out / "graph.json"}
    command = [str(FURIOSA_OPT), "compile", "forward", "--dump-schedule", str(dumps["schedule"])]
    command += ["--dump-graph", str(dumps["graph"])]
    subprocess.run(command, cwd=package, check=True, capture_output=True)
    return dumps


class Viewer:
    """`furiosa-opt view FILE --port 0 --no-browser` in the background; `url` is the page it serves."""

    def __init__(self, data: Path):
        command = [str(FURIOSA_OPT), "view", str(data), "--port", "0", "--no-browser"]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.process.stdout.readline()
        found = re.search(r"http://\S+/", line)
        if not found:
            self.process.kill()
            raise RuntimeError(f"furiosa-opt view printed no URL: {line!r}")
        self.url = found[0]

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)


def until(page, expression: str, timeout: float = 10.0) -> None:
    """Poll a JS expression (the viewer's Content-Security-Policy refuses Playwright's eval-based waits)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(expression)
        page.wait_for_timeout(20)


def open_view(browser, url: str):
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    until(page, "window.viewerState && window.viewerState.ready === true && window.viewerState.mode !== 'empty'")
    return page


def click(page, name: str) -> None:
    """Click an instruction, tensor or graph node where the viewer drew it."""
    point = page.evaluate("(n) => window.viewerApi.locate(n)", name)
    page.mouse.click(point["x"], point["y"])
    until(page, f"window.viewerState.selection && window.viewerState.selection.name === {name!r}")


def brush(page, buffer: str, top: float, low: float, high: float) -> None:
    """Enable Brush and drag across the whole width of `buffer`'s pane from address `high` down to `low`
    (the pane's full height is `top` bytes): the cycle range stays, the addresses narrow to [low, high]."""
    page.click("#brush")
    pane = page.evaluate("(b) => window.viewerApi.paneRect(b)", buffer)
    height = pane["bottom"] - pane["top"]

    def y(address: float) -> float:
        return pane["bottom"] - address / top * height

    page.mouse.move(pane["left"] + 1, y(high))
    page.mouse.down()
    page.mouse.move(pane["right"] - 1, y(low), steps=6)
    page.mouse.up()
    page.click("#brush")  # off again: the toolbar reads "Enable Brush" in the picture


def sram_top(schedule: Path) -> float:
    """The Sram pane's height in bytes per slice, as the viewer scales it (the highest tensor end)."""
    tensors = json.loads(schedule.read_text())["tensors"]
    return max(t["address"] + t["size"] / 512 for t in tensors if t["buffer_type"] == "Sram")


def shoot(page, name: str, clip: dict = SCHEDULE_CLIP) -> Path:
    path = IMAGES / name
    page.mouse.move(0, 0)  # no hover highlight from the last click
    page.screenshot(path=str(path), clip=clip)
    return path


def main() -> int:
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="mnist-screenshots-") as tmp:
        work = Path(tmp)
        before = compile_forward(scratch_copy(work / "mnist"), work / "forward")
        variant = scratch_copy(work / "mnist-tuning")
        kernel = variant / "src" / "mnist" / "kernel.py"
        kernel.write_text(edited(kernel.read_text()))
        after = compile_forward(variant, work / "classes-first")

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            with Viewer(before["schedule"]) as url:
                page = open_view(browser, url)
                written.append(shoot(page, "mnist-schedule.png"))
                # Step 4: the store of the logits (O51) waits for the main context's last add (O48).
                end = json.loads(before["schedule"].read_text())["makespan"]
                page.evaluate(f"window.viewerApi.setRange(5000, {end})")
                click(page, "T19")
                written.append(shoot(page, "mnist-dma-waits-for-main.png"))
                # The bias load (O39) reuses DM bytes the sub context was still reading.
                page.click("#reset")
                page.evaluate("window.viewerApi.setRange(4900, 6400)")
                brush(page, "Sram", top=sram_top(before["schedule"]), low=0, high=640)
                click(page, "T17")
                written.append(shoot(page, "mnist-dm-reuse.png"))
                page.close()
            with Viewer(before["graph"]) as url:
                page = open_view(browser, url)
                page.fill("#search", "C38")
                page.dispatch_event("#search", "input")
                click(page, "C38")
                written.append(shoot(page, "mnist-graph-sync.png", clip=GRAPH_CLIP))
                page.close()
            with Viewer(after["schedule"]) as url:
                page = open_view(browser, url)
                written.append(shoot(page, "mnist-classes-first.png"))
                page.close()
            browser.close()
    for path in written:
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
