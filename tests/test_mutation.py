"""The differential harness sees a wrong translation: corrupting one number stage 2 writes into a compiled
EDF (a reduce's axis size, a transpose's shape, a fetch stride, a switch route, a Vector Engine opcode)
makes the simulator disagree with the CPU backend, or refuse to run.

This holds only because the simulator reads the binary's numbers and nothing else: the CPU backend derives
layouts from the kernel's mappings, the simulator from the boxes, walks, sequencers and codes stage 2
wrote. Each case first checks that the kernel agrees uncorrupted, so a corruption that changes nothing
cannot pass as a detection.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

import pytest
from backends import compiled
from harness import KERNELS, run_on

from furiosa_opt import runtime
from furiosa_opt.compiler.edf import Edf
from furiosa_opt.configs.records import EngineConfig
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.vector.codes import OPS


def _engine(edf: Edf, stage: str) -> EngineConfig:
    """The first config of `stage` in the binary (the case's kernel has one)."""
    return next(config for command in edf.commands() for config in command.engines if config.stage == stage)


def _rewrite(edf: Edf, config: EngineConfig, **changes: object) -> None:
    """The binary with `config` (a frozen record) replaced by a copy holding `changes`."""
    command = next(c for c in edf.commands() if any(e is config for e in c.engines))
    command.engines = [replace(e, **changes) if e is config else e for e in command.engines]


def _reduce_axis(edf: Edf) -> None:
    """One term fewer in every output's fold: the reduced digit's live count, minus one."""
    config = _engine(edf, "vector_intra_slice_reduce")
    _rewrite(edf, config, terms=[*config.terms[:-1], config.terms[-1] - 1])


def _transpose_shape(edf: Edf) -> None:
    """The Transpose Engine keeps one output row fewer."""
    config = _engine(edf, "transpose")
    _rewrite(edf, config, out_rows=config.out_rows - 1)


def _fetch_stride(edf: Edf) -> None:
    """The fetch sequencer's innermost moving time loop steps one element further."""
    command = next(c for c in edf.commands() if c.fetch is not None)
    k = max(i for i, entry in enumerate(command.fetch.time) if entry.stride and entry.size > 1)
    command.fetch.time[k] = replace(command.fetch.time[k], stride=command.fetch.time[k].stride + 1)


def _switch_route(edf: Edf) -> None:
    """A CustomBroadcast's routing table read backwards."""
    config = _engine(edf, "switch")
    _rewrite(edf, config, sources=config.sources[::-1])


def _vector_opcode(edf: Edf) -> None:
    """The Vector Engine op replaced by the first op of its family that is not one of its twins (AddFxp by
    SubFxp, not by AddFxpSat, which equals it on inputs that do not overflow); the reader would take it."""
    config = next(c for command in edf.commands() for c in command.engines if hasattr(c, "operand"))
    op = OPS.value(config.op)
    family = [code for code, other in enumerate(OPS.values) if type(other) is type(op)]
    _rewrite(edf, config, op=next(code for code in family if not OPS.values[code].name.startswith(op.name[:3])))


CASES: dict[str, tuple[str, Callable[[Edf], None]]] = {
    "reduce axis size": ("vector_kernels.kernel.rmsnorm_kernel.rmsnorm_kernel", _reduce_axis),
    "transpose shape": ("tests.upstream.test_book_transpose.basic_transpose", _transpose_shape),
    "fetch stride": ("base_template.kernel.gemm_kernel.gemm_kernel", _fetch_stride),
    "switch route": ("tests.upstream.test_switch_engine.custom_broadcast_moved_axis", _switch_route),
    "vector opcode": ("base_template.kernel.constant_add_kernel.constant_add_kernel", _vector_opcode),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_corrupted_config_field_fails_the_harness(case, monkeypatch):
    identity, corrupt = CASES[case]
    kernel, module = KERNELS[identity]
    expected = run_on("cpu", kernel, module)
    assert run_on("npu", kernel, module) == expected  # uncorrupted, the backends agree
    edf = copy.deepcopy(compiled(kernel))
    corrupt(edf)
    monkeypatch.setattr(runtime, "compiled_here", lambda k: edf if k is kernel else compiled(k))
    try:
        got = run_on("npu", kernel, module)
    except FuriosaOptError:
        return  # the simulator refused the corrupted binary: the harness fails
    assert got != expected, f"corrupting the {case} of {identity} changed nothing the harness compares"
