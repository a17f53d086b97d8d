"""Lower layers never import higher ones (docs/design.md, "Architecture"): checked on a fresh interpreter,
since within the test session every module is already loaded."""

from __future__ import annotations

import json
import subprocess
import sys

# Everything above the bottom layer (mapping, dtypes, arch, diagnostics).
HIGHER = {"lang", "verify", "backend", "compiler", "sim", "runtime", "tune", "cli", "viewer", "analysis"}

# Exercises both paths of a `user_facing` entry point, which is where diagnostics used to look up the
# tracer on the active backend.
PROGRAM = """
import json, sys
from furiosa_opt.diagnostics import VerifyError, user_facing

@user_facing
def accepted(x):
    return x + 1

@user_facing
def refused():
    raise VerifyError("some-rule", "refused on purpose")

assert accepted(1) == 2
try:
    refused()
except VerifyError as error:
    assert error.rule == "some-rule"
else:
    raise AssertionError("refused() returned")
print(json.dumps(sorted(m for m in sys.modules if m.startswith("furiosa_opt"))))
"""


def test_diagnostics_imports_no_higher_layer():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "furiosa_opt.diagnostics" in loaded
    layers = {name.split(".")[1] for name in loaded if "." in name}
    assert layers & HIGHER == set(), f"furiosa_opt.diagnostics loaded {loaded}"
