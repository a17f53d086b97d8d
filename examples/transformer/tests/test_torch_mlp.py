"""transformers' Qwen3ForCausalLM with each decoder layer's MLP computed by the `mlp_forward` kernel
(`transformer.torch_mlp`): the MLP against transformers' `Qwen3MLP`, and `generate()` against the unmodified
model, on the CPU backend and on the simulator.

No model hub: the checkpoint is built here with transformers' own classes (random weights at Qwen3-0.6B's
widths, 2 layers, saved in bf16), the tokenizer with the `tokenizers` library, and both load offline.

The margin rule: a bf16 model's logits move by a few bf16 ulps when its MLPs compute in another order, so
the two generations must agree only where the reference's top-1 logit leads the runner-up by more than
NOISE_ULPS ulps of bf16 at the top logit's magnitude, at every step. The checkpoint and prompt are chosen so
that it does (the test asserts it), and the kernel model's logits are checked to stay within that noise.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

from transformer.torch_mlp import KernelMLP, load

EXAMPLE = Path(__file__).resolve().parent.parent
NOISE_ULPS = 8  # bf16 ulps at the top logit: the margin a step needs, and the most the kernel may move a logit
MLP_ULPS = 2  # the kernel's MLP against Qwen3MLP: within 2 bf16 ulps of the output's largest magnitude
NEW_TOKENS, SIM_TOKENS = 6, 2
# The prompt: five words the tokenizer maps to ids whose greedy continuation keeps wide margins (found once
# by drawing prompts for this checkpoint; the margin test below checks the property itself).
PROMPT = "alpha beta gamma delta epsilon"
PROMPT_IDS = [66097, 1529, 117699, 62084, 118232]


def bf16_ulp(value: float) -> float:
    return 2.0 ** (math.floor(math.log2(abs(value))) - 7)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """Qwen3-0.6B's widths (hidden 1024, MLP 3072, 16 query and 8 KV heads of 128), its vocabulary and tied
    embedding, 2 layers, random weights from seed 0, with two changes that give greedy decoding clear winners
    the MLPs pick from: the embedding's first 64 rows tripled, and the final norm's weights ±1 at random (with
    all +1, a random model's logits favour its last token, through the tied embedding, whatever the MLPs do)."""
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=2,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=4096,
        tie_word_embeddings=True,
    )  # fmt: skip
    model = Qwen3ForCausalLM._from_config(config, dtype=torch.bfloat16)
    with torch.no_grad():
        model.model.embed_tokens.weight[:64] *= 3
        signs = torch.randint(0, 2, (1024,), generator=torch.Generator().manual_seed(1)) * 2 - 1
        model.model.norm.weight.copy_(signs)
    directory = tmp_path_factory.mktemp("qwen3")
    model.save_pretrained(directory)
    del model
    vocab = {"<unk>": 0, **dict(zip(PROMPT.split(), PROMPT_IDS, strict=True))}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>").save_pretrained(directory)
    return directory


@pytest.fixture(scope="module", autouse=True)
def offline():
    """Everything loads from the directory: a lookup on the hub fails instead of waiting for the network."""
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield
    if saved is None:
        del os.environ["HF_HUB_OFFLINE"]
    else:
        os.environ["HF_HUB_OFFLINE"] = saved


@pytest.fixture(scope="module")
def prompt(checkpoint) -> torch.Tensor:
    ids = AutoTokenizer.from_pretrained(checkpoint)(PROMPT, return_tensors="pt").input_ids
    assert ids.tolist() == [PROMPT_IDS]
    return ids


def generate(model, prompt: torch.Tensor, count: int):
    with torch.no_grad():
        return model.generate(
            prompt, max_new_tokens=count, do_sample=False, output_logits=True, return_dict_in_generate=True
        )


@pytest.fixture(scope="module")
def reference(checkpoint, prompt):
    """The unmodified model's greedy tokens and logits; then, as a check that the comparison can fail, the
    tokens the same model gives with its MLPs' down projections zeroed."""
    model = Qwen3ForCausalLM.from_pretrained(checkpoint, dtype=torch.bfloat16).eval()
    out = generate(model, prompt, NEW_TOKENS)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.mlp.down_proj.weight.zero_()
    without_mlp = generate(model, prompt, NEW_TOKENS).sequences
    del model
    return out.sequences, [logits[0].float() for logits in out.logits], without_mlp


@pytest.fixture(scope="module")
def kernel_model(checkpoint):
    model = load(checkpoint)
    yield model
    del model


def test_the_checkpoint_and_prompt_keep_wide_margins(reference):
    sequences, logits, without_mlp = reference
    for step, row in enumerate(logits):
        top, second = row.topk(2).values.tolist()
        assert top - second > NOISE_ULPS * bf16_ulp(top), f"step {step}: margin {top - second} at {top}"
    assert len(set(sequences[0, len(PROMPT_IDS) :].tolist())) > 1  # no single repeated token
    assert not torch.equal(without_mlp, sequences)  # the MLPs decide tokens: a wrong MLP would be seen


def test_the_kernel_mlp_matches_qwen3mlp(kernel_model):
    """Three hidden states of unit scale through layer 0's MLP: the kernel (f32 accumulation, bf16 between
    the projections) against transformers' module in bf16."""
    kernel_mlp = kernel_model.model.layers[0].mlp
    assert isinstance(kernel_mlp, KernelMLP)
    from transformers.models.qwen3.modeling_qwen3 import Qwen3MLP

    torch_mlp = Qwen3MLP(kernel_model.config)
    torch_mlp.gate_proj, torch_mlp.up_proj, torch_mlp.down_proj = (
        kernel_mlp.gate_proj, kernel_mlp.up_proj, kernel_mlp.down_proj,
    )  # fmt: skip
    x = torch.randn(3, 1024, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    with torch.no_grad():
        expected, got = torch_mlp(x).float(), kernel_mlp(x).float()
    scale = expected.abs().max().item()
    assert scale > 0.1  # a live output, not one of zeros
    assert (got - expected).abs().max().item() <= MLP_ULPS * bf16_ulp(scale)


def check_generation(model, prompt, reference, count: int) -> None:
    sequences, logits, _ = reference
    out = generate(model, prompt, count)
    assert out.sequences.tolist() == sequences[:, : len(PROMPT_IDS) + count].tolist()
    for step, (got, expected) in enumerate(zip(out.logits, logits, strict=False)):
        moved = (got[0].float() - expected).abs().max().item()
        assert moved < NOISE_ULPS * bf16_ulp(expected.max().item()), f"step {step}: logits moved by {moved}"


def test_generate_with_the_kernel_mlps_gives_the_reference_tokens_on_the_cpu_backend(
    kernel_model, prompt, reference, monkeypatch
):
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "cpu")  # under `furiosa-opt test` too
    check_generation(kernel_model, prompt, reference, NEW_TOKENS)


def test_generate_with_the_kernel_mlps_on_the_simulator(kernel_model, prompt, reference, tmp_path, monkeypatch):
    """The kernel's EDF, compiled by `furiosa-opt compile` as `furiosa-opt run` would, on the simulator."""
    monkeypatch.setenv("FURIOSA_OPT_OUT_DIR", str(tmp_path))
    tool = Path(sys.executable).parent / "furiosa-opt"
    done = subprocess.run([str(tool), "compile", "mlp_forward"], cwd=EXAMPLE, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("FURIOSA_OPT_BACKEND", "npu")
    check_generation(kernel_model, prompt, reference, SIM_TOKENS)
