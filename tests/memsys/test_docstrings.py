"""Every example in a `memsys` docstring runs and prints what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import furiosa_opt.memsys

MODULES = [info.name for info in pkgutil.iter_modules(furiosa_opt.memsys.__path__)]


def test_the_package_has_its_modules():
    assert sorted(MODULES) == ["arrays", "dm", "dma", "findings", "hbm", "stats"]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name):
    module = importlib.import_module(f"furiosa_opt.memsys.{name}")
    failed, tried = doctest.testmod(module)
    assert tried > 0 and failed == 0
