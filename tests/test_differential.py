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

import pytest
from backends import compiled
from harness import KERNELS, REFUSED, SEED, run_on

from furiosa_opt.compiler.driver import compile_kernel, compile_visa

# identity suffix → why it cannot run on both backends today
EXPECTED_FAILURES: dict[str, str] = {
    "test_device.wrong_result_kernel": "deliberately returns the wrong type; test_device.py checks the refusal",
    "test_loops.pass_dependent_body": "deliberately traces differently per pass; test_loops.py checks the refusal",
    "test_views.dm_on_pdma": "deliberately issues to_dm on ctx.pdma; test_views.py checks where the error points",
    "test_frictions.forgets_vector_final": "deliberately omits vector_final(); test_frictions.py checks the message",
}


DIFFERENTIAL_SUMMARY = {"compared": 0, "refused": REFUSED, "expected": {}}  # printed by conftest.py


def _expected(identity: str) -> str | None:
    return next((why for key, why in EXPECTED_FAILURES.items() if identity.endswith(key)), None)


@pytest.mark.parametrize("identity", sorted(KERNELS))
def test_cpu_and_simulator_agree_on_every_byte(identity):
    print(f"seed {SEED} (set FURIOSA_OPT_TEST_SEED to replay)")
    kernel, module = KERNELS[identity]
    reason = _expected(identity)
    try:
        compiled(kernel)
        expected = run_on("cpu", kernel, module)
        got = run_on("npu", kernel, module)
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
