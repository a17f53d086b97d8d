"""The language server's screenshot (docs/guide/language-server.md): `.venv/bin/python docs/lsp_screenshot.py`.

Copies the base template's gemm kernel into a scratch directory with one mapping broken (the B chain's
collect time), opens it in Debian's Neovim (/usr/bin/nvim, 0.7) under tmux
(/usr/bin/tmux, a private socket), configured with the guide's tested Lua block; waits for the diagnostic,
hovers on the main chain's collect stage, captures the pane with its colours (`tmux capture-pane -e`), renders
the ANSI text to HTML with rich and photographs it with Playwright driving Debian's Chromium. Writes
docs/images/lsp-neovim.png and prints its size. Nothing in the checkout but that image changes.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.terminal_theme import MONOKAI
from rich.text import Text

ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "examples" / "base-template" / "src" / "base_template" / "kernel" / "gemm_kernel.py"
GUIDE = ROOT / "docs" / "guide" / "language-server.md"
IMAGE = ROOT / "docs" / "images" / "lsp-neovim.png"
NVIM, TMUX, CHROMIUM = "/usr/bin/nvim", "/usr/bin/tmux", "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
COLUMNS, ROWS = 118, 33
BROKEN = ('K / 16"], m["K % 16"])\n        .to_trf', 'K / 8"], m["K % 16"])\n        .to_trf')
DISPLAY = """
vim.o.termguicolors = true
vim.o.signcolumn = "yes"
vim.o.number = true
vim.cmd("highlight NormalFloat guibg=#26283a guifg=#e6e6e6")
vim.cmd("highlight FloatBorder guibg=#26283a guifg=#8888aa")
vim.lsp.handlers["textDocument/hover"] = vim.lsp.with(vim.lsp.handlers.hover, { border = "rounded" })
"""


def configuration() -> str:
    """The guide's tested Neovim block, and display settings for the picture."""
    return GUIDE.read_text().split("```lua\n", 1)[1].split("```", 1)[0] + DISPLAY


def until(tmux: list[str], text: str, timeout: float = 60) -> None:
    """Wait until the pane shows `text`."""
    deadline = time.monotonic() + timeout
    while (
        text not in subprocess.run([*tmux, "capture-pane", "-p", "-t", "shot"], capture_output=True, text=True).stdout
    ):
        if time.monotonic() > deadline:
            raise SystemExit(f"the pane never showed {text!r}")
        time.sleep(0.2)


def capture(scratch: Path) -> str:
    """The pane, with its colours, after the diagnostic arrived and a hover opened."""
    text = GEMM.read_text().replace(*BROKEN)
    (scratch / "gemm_kernel.py").write_text(text)
    (scratch / "init.lua").write_text(configuration())
    lines = text.splitlines()
    hover = next(i for i, row in enumerate(lines) if ".collect(" in row and "I %" in row)
    (scratch / "tmux.conf").write_text("set -g status off\n")
    tmux = [TMUX, "-L", f"furiosa-opt-shot-{os.getpid()}", "-f", str(scratch / "tmux.conf")]
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                   "XDG_CONFIG_HOME": str(scratch / "config"), "XDG_CACHE_HOME": str(scratch / "cache"),
                   "XDG_STATE_HOME": str(scratch / "state"), "XDG_DATA_HOME": str(scratch / "data")}  # fmt: skip
    editor = f"{NVIM} -n -i NONE -u init.lua gemm_kernel.py"
    start = [*tmux, "new-session", "-d", "-s", "shot", "-x", str(COLUMNS), "-y", str(ROWS), "-c", str(scratch), editor]
    subprocess.run(start, env=environment, check=True)
    try:
        until(tmux, "gemm_kernel.py")
        keys = f":call cursor({hover + 1}, {lines[hover].index('collect') + 3})"  # the main chain's collect
        subprocess.run([*tmux, "send-keys", "-t", "shot", keys, "Enter", "zt", "1", "4", "C-y"], check=True)
        until(tmux, "Collect time mismatch")  # the B chain's broken collect, a few lines above
        subprocess.run([*tmux, "send-keys", "-t", "shot", ":echo", "Enter", "K"], check=True)
        until(tmux, "Packet")
        time.sleep(0.5)
        done = subprocess.run([*tmux, "capture-pane", "-e", "-p", "-t", "shot"], capture_output=True, text=True)
        return done.stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def html(ansi: str) -> str:
    console = Console(record=True, width=COLUMNS, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(Text.from_ansi(ansi), end="", soft_wrap=True)
    return console.export_html(theme=MONOKAI, inline_styles=True)


def photograph(page_html: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        page.set_content(page_html)
        page.add_style_tag(content="body { margin: 0; } pre { margin: 0; padding: 8px; font-size: 13px; }")
        page.locator("pre").screenshot(path=str(IMAGE))
        browser.close()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="furiosa-opt-lsp-shot-") as scratch:
        ansi = capture(Path(scratch))
    photograph(html(ansi))
    print(f"{IMAGE.relative_to(ROOT)}: {IMAGE.stat().st_size / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
