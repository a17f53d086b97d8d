"""The kernels the differential harness compares, found by reading every module under examples/ and
tests/, and one launch of a kernel on a backend from the shared seed (test_differential.py,
test_mutation.py)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
from backends import backend, input_seed

from furiosa_opt import Context
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.lang.tensors import TensorView
from furiosa_opt.tune.trial import random_arguments

ROOT = Path(__file__).resolve().parent.parent
SEED = input_seed()


def _modules() -> tuple[list[object], int]:
    """Every module under examples/ and tests/ that defines a kernel, and how many refused fixtures exist."""
    found, refused = [], 0
    for path in sorted([*ROOT.glob("examples/*/src/**/*.py"), *ROOT.glob("tests/**/*.py")]):
        text = path.read_text()
        if "@" + "device" not in text or "from harness import" in text:  # the harness's own users define none
            continue
        if "negative" in path.relative_to(ROOT).parts:
            refused += text.count("@" + "device")
            continue
        found.append(_import(path))
    return found, refused


def _import(path: Path) -> object:
    """The module of a package source file by its import name, a test file by a name from its path."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] == "examples":
        return importlib.import_module(".".join(parts[3:]).removesuffix(".__init__"))
    name = "differential." + ".".join(parts)
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _kernels() -> tuple[dict[str, tuple[DeviceFunction, object]], int]:
    modules, refused = _modules()
    kernels = {}
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, DeviceFunction) and value.__module__ == module.__name__:
                kernels[value.identity.removeprefix("differential.")] = (value, module)
    return kernels, refused


KERNELS, REFUSED = _kernels()


def _bytes(value: object) -> bytes:
    tensor = value.base if isinstance(value, TensorView) else value
    return tensor.values().tobytes()


def run_on(name: str, kernel: DeviceFunction, module: object) -> tuple[list[bytes], list[bytes]]:
    """(output bytes, argument bytes after the launch) on one backend, from the shared seed."""
    with backend(name) as launch, Context.acquire() as ctx:
        args = random_arguments(kernel, ctx, np.random.default_rng(SEED), module)  # as the tuner's objective does
        out = launch(kernel, ctx, *args)
        outputs = out if isinstance(out, tuple) else () if out is None else (out,)
        leaves = [value for _, _, value in kernel.bind(args)]
        return [_bytes(o) for o in outputs], [_bytes(leaf) for leaf in leaves]
