"""`furiosa-opt lsp` without its extra: one line naming the missing package and the extra, status 2."""

from __future__ import annotations

import subprocess
import sys

# Blocks pygls as if it were not installed, then runs the command as the `furiosa-opt` script does.
WITHOUT_PYGLS = (
    "import sys; sys.modules['pygls'] = None; from furiosa_opt.cli.main import main; sys.exit(main(['lsp']))"
)


def test_lsp_without_the_extra_says_so_in_one_line():
    done = subprocess.run([sys.executable, "-c", WITHOUT_PYGLS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: `furiosa-opt lsp` needs the lsp extra (pygls is missing): pip install 'furiosa-opt[lsp]'"
    ]
    assert done.stdout == ""
