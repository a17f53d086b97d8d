"""`furiosa_opt.torch.op`: kernels as torch custom operators — eager results against the kernel's oracle,
`torch.compile(fullgraph=True)` and `torch.export` tracing through the fake implementation, out-parameters
as mutated arguments, and one-line refusals naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from base_template.kernel.gemm_kernel import gemm_kernel
from base_template.oracle import round_bf16, sequential_dot
from furiosa_opt import Context, VerifyError
from furiosa_opt.torch import op
from transformer.kernel import embedding

gemm = op(gemm_kernel)


class GemmModule(torch.nn.Module):
    """A model calling the kernel between torch ops."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return gemm(a * 2, b).float() + 1


@pytest.fixture(scope="module")
def operands() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(7)
    a, b = (torch.rand(512, 64, generator=generator) * 2 - 1 for _ in range(2))
    return a.to(torch.bfloat16), b.to(torch.bfloat16)


@pytest.fixture(scope="module")
def eager(operands) -> torch.Tensor:
    return GemmModule()(*operands)


def test_the_operator_gives_the_kernels_oracle_bit_for_bit(operands):
    a, b = operands
    got = gemm(a, b)
    assert got.dtype == torch.bfloat16 and got.shape == (512, 512)
    a64, b64 = a.float().numpy(), b.float().numpy()
    expected = round_bf16(sequential_dot(a64[:, None, :], b64[None, :, :]))
    assert np.array_equal(got.float().numpy(), np.asarray(expected, np.float32))


def test_the_operator_runs_inside_a_held_context(operands):
    """A caller inside `with Context.acquire()` (a host program) calls the operator: it launches on the
    context that block holds instead of waiting for it."""
    with Context.acquire():
        inside = gemm(*operands)
    assert torch.equal(inside, gemm(*operands))


def test_the_schema_comes_from_the_signature():
    assert str(gemm._schema) == "furiosa_opt::gemm_kernel(Tensor a, Tensor b) -> Tensor"
    assert op(gemm_kernel) is gemm  # one operator per kernel


def test_torch_compile_fullgraph_matches_eager(operands, eager):
    torch._dynamo.reset()
    compiled = torch.compile(GemmModule(), fullgraph=True)  # a graph break would raise
    assert torch.equal(compiled(*operands), eager)


def test_torch_export_traces_the_operator_and_matches_eager(operands, eager):
    exported = torch.export.export(GemmModule(), operands)
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert torch.ops.furiosa_opt.gemm_kernel.default in targets
    assert torch.equal(exported.module()(*operands), eager)


def test_an_out_parameter_is_a_mutated_argument():
    copy = op(embedding, mutates=["out"])
    assert str(copy._schema) == "furiosa_opt::embedding(Tensor input, Tensor(a1!) out) -> ()"
    row = torch.randn(1024, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    out = torch.zeros(1024, dtype=torch.bfloat16)
    assert copy(row, out) is None and torch.equal(out, row)

    def doubled(row: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(row)
        copy(row, out)
        return out * 2

    torch._dynamo.reset()
    assert torch.equal(torch.compile(doubled, fullgraph=True, backend="aot_eager")(row), row * 2)


@pytest.mark.parametrize(
    ("a", "message"),
    [
        (torch.zeros(512, 64), r"argument `a`: expected torch.bfloat16 \(bf16\), got torch.float32"),
        (torch.zeros(64, 512, dtype=torch.bfloat16), r"argument `a`: expected shape \(512, 64\) \(I=512, K=64\)"),
    ],
)
def test_wrong_arguments_are_refused_in_one_line(a, message):
    b = torch.zeros(512, 64, dtype=torch.bfloat16)
    with pytest.raises(VerifyError, match=f"furiosa_opt::gemm_kernel: {message}") as error:
        gemm(a, b)
    assert "\n" not in error.value.message
    assert error.value.location.file == __file__  # the model's call, not torch's dispatcher


def test_op_refuses_what_is_no_kernel_and_unknown_out_parameters():
    with pytest.raises(VerifyError, match=r"op\(\) takes a @?device kernel"):
        op(lambda x: x)
    with pytest.raises(VerifyError, match=r"no argument 'output'; it takes input, out"):
        op(embedding, mutates=["output"])
    op(embedding, mutates=["out"])
    with pytest.raises(VerifyError, match=r"exists already as .*Tensor\(a1!\) out.*mutates differs"):
        op(embedding)
