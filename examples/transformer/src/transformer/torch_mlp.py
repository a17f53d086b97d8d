"""Qwen3 in PyTorch with its MLPs on furiosa-opt: transformers' `Qwen3ForCausalLM`, each decoder layer's MLP
(SiLU-gated, 1024 → 3072 → 1024) computed by the `mlp_forward` kernel through `furiosa_opt.torch.op`.

Everything else — attention, norms, sampling, `generate()` — stays transformers' own, so the model runs
unchanged with one module swapped per layer. The kernel runs on the active backend: the CPU backend, or
the simulator under `furiosa-opt run` / `FURIOSA_OPT_BACKEND=npu` (after `furiosa-opt compile mlp_forward`).

    model = load("checkpoints/qwen3")   # HF_HUB_OFFLINE=1: a local directory
    model.generate(input_ids, max_new_tokens=8, do_sample=False)

Needs PyTorch and transformers (`pip install 'furiosa-opt[torch]' transformers`).
"""

from __future__ import annotations

import os

import torch
from transformers import Qwen3ForCausalLM

from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.torch import op
from transformer.kernel import H, L, mlp_forward

mlp_op = op(mlp_forward)  # torch.ops.furiosa_opt.mlp_forward(x, up, gate, down)


class KernelMLP(torch.nn.Module):
    """A `Qwen3MLP`'s forward by the kernel: its own weights (the same tensors, not copies), one launch per
    token, as the kernel takes one hidden state `[1024]`.

        layer.mlp = KernelMLP(layer.mlp)
        y = layer.mlp(x)   # x: [..., 1024] bf16 → y: [..., 1024] bf16
    """

    def __init__(self, mlp: torch.nn.Module):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = mlp.gate_proj, mlp.up_proj, mlp.down_proj

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = (self.up_proj.weight, self.gate_proj.weight, self.down_proj.weight)
        rows = [mlp_op(row, *weights) for row in x.reshape(-1, x.shape[-1])]
        return torch.stack(rows).reshape(x.shape)


def swap_mlps(model: Qwen3ForCausalLM) -> Qwen3ForCausalLM:
    """`model` with every decoder layer's MLP computed by the kernel (in place; returns the model).

        swap_mlps(Qwen3ForCausalLM.from_pretrained(directory, dtype=torch.bfloat16))

    Refuses, in one line naming the config field, a model whose MLP the kernel does not compute."""
    config = model.config
    wanted = {"hidden_size": H.size, "intermediate_size": L.size, "hidden_act": "silu", "mlp_bias": False}
    for field, value in wanted.items():
        got = getattr(config, field, False if field == "mlp_bias" else None)
        if got != value:
            raise VerifyError("torch-mlp", f"the kernel's MLP needs config.{field} = {value!r}, the model has {got!r}")
    if model.dtype != torch.bfloat16:
        raise VerifyError("torch-mlp", f"the kernel's MLP computes in bf16, the model is {model.dtype}")
    for layer in model.model.layers:
        layer.mlp = KernelMLP(layer.mlp)
    return model


def load(directory: str | os.PathLike) -> Qwen3ForCausalLM:
    """`Qwen3ForCausalLM.from_pretrained(directory)` in bf16, with its MLPs swapped for the kernel's.

    load("checkpoints/qwen3").generate(input_ids, max_new_tokens=8)
    """
    model = Qwen3ForCausalLM.from_pretrained(os.fspath(directory), dtype=torch.bfloat16)
    return swap_mlps(model.eval())
