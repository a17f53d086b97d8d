"""Debian's Neovim (0.7, `apt-get install neovim`; `make test` installs it) against `furiosa-opt lsp`, headless,
configured with exactly the block docs/guide/language-server.md gives: diagnostics and hover arrive in a
real editor's LSP client. Without nvim the test fails, saying how to get it
(FURIOSA_OPT_SKIP_NEOVIM=1 skips it), as the browser tests do without Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GEMM = HERE.parents[1] / "examples" / "base-template" / "src" / "base_template" / "kernel" / "gemm_kernel.py"
NVIM = Path("/usr/bin/nvim")
GUIDE = HERE.parents[1] / "docs" / "guide" / "language-server.md"


def documented_configuration() -> str:
    """The first Lua block of the guide: the tested Neovim 0.7 configuration."""
    text = GUIDE.read_text()
    return text.split("```lua\n", 1)[1].split("```", 1)[0]


def test_neovim_shows_diagnostics_and_hover(tmp_path: Path):
    if not NVIM.exists():
        if os.environ.get("FURIOSA_OPT_SKIP_NEOVIM") == "1":
            pytest.skip("FURIOSA_OPT_SKIP_NEOVIM=1")
        pytest.fail(f"{NVIM} is missing: install it with `apt-get install -y neovim` (or FURIOSA_OPT_SKIP_NEOVIM=1)")
    tree = tmp_path / "tree"
    tree.mkdir()
    text = GEMM.read_text().replace(
        'K / 16"], m["K % 16"])\n        .contract', 'K / 8"], m["K % 16"])\n        .contract'
    )
    kernel = tree / "gemm_kernel.py"
    kernel.write_text(text)
    lines = text.splitlines()
    collect = next(i for i, row in enumerate(lines) if ".collect(" in row and "J % 8" in row)  # the B chain's
    out = tmp_path / "answers.json"
    init = tmp_path / "init.lua"
    init.write_text(documented_configuration())
    environment = {
        **os.environ, "LSP_FILE": str(kernel), "LSP_OUT": str(out),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",  # furiosa-opt
        "LSP_LINE": str(collect), "LSP_COLUMN": str(lines[collect].index("collect") + 2),
        "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }  # fmt: skip
    command = [str(NVIM), "--headless", "-n", "-i", "NONE", "-u", str(init), "-c", f"luafile {HERE / 'neovim.lua'}"]
    subprocess.run(command, env=environment, cwd=tmp_path, timeout=120, check=True, capture_output=True)
    answers = json.loads(out.read_text())
    assert answers["arrived"] is True
    (diagnostic,) = answers["diagnostics"]
    broken = next(i for i, row in enumerate(lines) if "K / 8" in row)
    assert diagnostic["code"] == "collect-time-mismatch"
    assert (diagnostic["lnum"], diagnostic["col"]) == (broken, lines[broken].index("collect"))
    assert 'Time: `m["J % 8, J / 8 % 4, K / 16"]` (size 128)' in answers["hover"]
    assert 'Packet: `m["K % 16"]` (size 16)' in answers["hover"]
    assert sorted(p.name for p in tree.iterdir()) == ["gemm_kernel.py"], "the server wrote into the user's tree"
