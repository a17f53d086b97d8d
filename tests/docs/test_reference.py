"""The API reference's promise: every name of `furiosa_opt.__all__` has a docstring with an example, and the
example runs. The docstrings are read the way the site reads them (griffe, statically, so the attribute
docstrings of the scalar types, `m` and `Stash` count) and each `>>>` example runs as a doctest on the CPU
backend, in a fresh namespace holding `from furiosa_opt import *` and `numpy as np`.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import griffe
import numpy as np
import pytest

import furiosa_opt

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    return griffe.load("furiosa_opt", search_paths=[str(SRC)], resolve_aliases=True)


def docstring(package: griffe.Module, name: str) -> str:
    path = furiosa_opt._EXPORTS[name].removeprefix("furiosa_opt.")
    found = package[f"{path}.{name}"]
    return found.docstring.value if found.docstring else ""


@pytest.mark.parametrize("name", furiosa_opt.__all__)
def test_every_public_name_has_a_running_example(package, name, monkeypatch):
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "cpu")
    text = docstring(package, name)
    assert text.strip(), f"{name} has no docstring"
    namespace: dict = {"np": np}
    exec("from furiosa_opt import *", namespace)
    test = doctest.DocTestParser().get_doctest(text, namespace, name, name, 0)
    assert test.examples, f"{name}'s docstring has no `>>>` example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
