"""The differential harness: every `@device` kernel under `examples/` and `tests/` runs on the CPU backend
and from its compiled EDF on the simulator, and the two must agree on every byte.

Compared per kernel: every output buffer (padding included) and every argument afterwards (what the kernel
wrote in place, and that it left the rest alone). Inputs are random from one printed seed
(`FURIOSA_OPT_TEST_SEED` replays it) unless the kernel's module defines
`differential_inputs(kernel, ctx, rng)` returning the launch arguments (index or offset tensors, inputs
with preconditions). Kernels join by being written; nothing here lists them. A kernel that does not
compile fails unless it is a refused fixture (`tests/negative/`, checked by test_negative.py) or in
`EXPECTED_FAILURES` below with its reason — and an expected failure that starts to work fails too, so
the list only shrinks.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from backends import backend, compiled, input_seed

from furiosa_opt import Context
from furiosa_opt.compiler.driver import compile_kernel, compile_visa
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.lang.tensors import TensorView
from furiosa_opt.tune.trial import random_arguments

ROOT = Path(__file__).resolve().parent.parent
SEED = input_seed()

# identity suffix → why it cannot run on both backends today
EXPECTED_FAILURES: dict[str, str] = {
    "test_device.wrong_result_kernel": "deliberately returns the wrong type; test_device.py checks the refusal",
    "test_loops.pass_dependent_body": "deliberately traces differently per pass; test_loops.py checks the refusal",
    "test_views.dm_on_pdma": "deliberately issues to_dm on ctx.pdma; test_views.py checks where the error points",
    "test_frictions.forgets_vector_final": "deliberately omits vector_final(); test_frictions.py checks the message",
}


def _modules() -> tuple[list[object], int]:
    """Every module under examples/ and tests/ that defines a kernel, and how many refused fixtures exist."""
    found, refused = [], 0
    for path in sorted([*ROOT.glob("examples/*/src/**/*.py"), *ROOT.glob("tests/**/*.py")]):
        if "@device" not in path.read_text():
            continue
        if "negative" in path.relative_to(ROOT).parts:
            refused += path.read_text().count("@device")
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
DIFFERENTIAL_SUMMARY = {"compared": 0, "refused": REFUSED, "expected": {}}  # printed by conftest.py


def _expected(identity: str) -> str | None:
    return next((why for key, why in EXPECTED_FAILURES.items() if identity.endswith(key)), None)


def _arguments(kernel: DeviceFunction, module: object, ctx: Context, rng: np.random.Generator) -> tuple:
    return random_arguments(kernel, ctx, rng, module)  # the tuner's simulated objective makes its inputs alike


def _bytes(value: object) -> bytes:
    tensor = value.base if isinstance(value, TensorView) else value
    return tensor.values().tobytes()


def _run(name: str, kernel: DeviceFunction, module: object) -> tuple[list[bytes], list[bytes]]:
    """(output bytes, argument bytes after the launch) on one backend, from the shared seed."""
    with backend(name) as launch, Context.acquire() as ctx:
        args = _arguments(kernel, module, ctx, np.random.default_rng(SEED))
        out = launch(kernel, ctx, *args)
        outputs = out if isinstance(out, tuple) else () if out is None else (out,)
        leaves = [value for _, _, value in kernel.bind(args)]
        return [_bytes(o) for o in outputs], [_bytes(leaf) for leaf in leaves]


@pytest.mark.parametrize("identity", sorted(KERNELS))
def test_cpu_and_simulator_agree_on_every_byte(identity):
    print(f"seed {SEED} (set FURIOSA_OPT_TEST_SEED to replay)")
    kernel, module = KERNELS[identity]
    reason = _expected(identity)
    try:
        compiled(kernel)
        expected = _run("cpu", kernel, module)
        got = _run("npu", kernel, module)
    except Exception as error:
        if reason is None:
            raise
        DIFFERENTIAL_SUMMARY["expected"][identity] = reason
        pytest.xfail(f"{reason} ({type(error).__name__}: {str(error).splitlines()[0][:200]})")
    assert reason is None, f"{identity} now runs on both backends: remove it from EXPECTED_FAILURES"
    assert [len(o) for o in got[0]] == [len(o) for o in expected[0]]
    for i, (cpu, npu) in enumerate(zip(expected[0], got[0], strict=True)):
        assert cpu == npu, f"output {i} of {identity} differs between the CPU backend and the simulator (seed {SEED})"
    for i, (cpu, npu) in enumerate(zip(expected[1], got[1], strict=True)):
        assert cpu == npu, f"argument {i} of {identity} differs after the launch (seed {SEED})"
    DIFFERENTIAL_SUMMARY["compared"] += 1


def test_every_expected_failure_names_a_kernel():
    for key in EXPECTED_FAILURES:
        assert any(identity.endswith(key) for identity in KERNELS), f"EXPECTED_FAILURES names no kernel: {key}"


def test_the_harness_finds_kernels_everywhere():
    """Discovery reaches the example package, the upstream ports and the refused fixtures."""
    assert any(i.startswith("base_template.kernel.gemm_kernel") for i in KERNELS)
    assert sum(i.startswith("tests.upstream.") for i in KERNELS) >= 30
    assert REFUSED >= 20


@pytest.mark.parametrize("identity", sorted(KERNELS))
def test_visa_text_replays_to_itself(identity, tmp_path):
    """Stage 1 for every kernel the harness knows: the printed vISA parses and replays through the language
    to the same text, whatever stages it uses."""
    kernel, _ = KERNELS[identity]
    traced = compile_kernel(kernel)
    if not traced.ok:
        assert _expected(identity), traced.diagnostics
        pytest.skip("refused by the compiler on purpose (see EXPECTED_FAILURES)")
    path = tmp_path / "kernel.visa"
    path.write_text(traced.visa_text)
    replayed = compile_visa(path)
    assert replayed.ok, replayed.diagnostics
    assert replayed.visa_text == traced.visa_text
