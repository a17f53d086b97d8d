"""`run --model DIR` (checkpoint.py) on a synthetic Qwen3-0.6B directory: Hugging Face's tensor names at the
real widths for 2 layers (the embedding alone is 151936 × 1024 bf16, 311 MB), a WordLevel `tokenizer.json`
naming every id `w<id>`, and `config.json`. The loaded arrays must be the written ones, one greedy token
through the kernels must be the numpy reference's token from the written arrays, and every broken directory
must give one line naming the file. The kernels' numerics are tested in test_example.py; here only the
loading and the decode loop around it.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers

from transformer import checkpoint, host
from transformer.__main__ import main

H, Q, P, D, L, W, LAYERS = 1024, 2048, 1024, 128, 3072, 151936, 2
CONFIG = {
    "hidden_size": H, "num_hidden_layers": LAYERS, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": D, "intermediate_size": L, "rms_norm_eps": 1e-6, "rope_theta": 1000000, "vocab_size": W,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}  # fmt: skip
# Hugging Face's name of each layer tensor, its shape and the scale of its random values (random_model's)
LAYER_TENSORS = {
    "input_layernorm.weight": ((H,), None),
    "self_attn.q_proj.weight": ((Q, H), 0.05),
    "self_attn.k_proj.weight": ((P, H), 0.05),
    "self_attn.v_proj.weight": ((P, H), 0.05),
    "self_attn.o_proj.weight": ((H, Q), 0.02),
    "self_attn.q_norm.weight": ((D,), None),
    "self_attn.k_norm.weight": ((D,), None),
    "post_attention_layernorm.weight": ((H,), None),
    "mlp.gate_proj.weight": ((L, H), 0.03),
    "mlp.up_proj.weight": ((L, H), 0.03),
    "mlp.down_proj.weight": ((H, L), 0.02),
}


def random_bf16(rng: np.random.Generator, shape, scale: float | None) -> np.ndarray:
    """Uniform in [-scale, scale), or near 1 for a norm weight (scale None), as bf16."""
    values = rng.random(shape, dtype=np.float32)  # scaled in place: the embedding is 622 MB of float32
    values *= 0.2 if scale is None else 2 * scale
    values += 0.9 if scale is None else -scale
    return values.astype(ml_dtypes.bfloat16)


def checkpoint_tensors(rng: np.random.Generator, layers: int) -> dict[str, np.ndarray]:
    tensors = {"model.embed_tokens.weight": random_bf16(rng, (W, H), 1.0)}
    for i in range(layers):
        for name, (shape, scale) in LAYER_TENSORS.items():
            tensors[f"model.layers.{i}.{name}"] = random_bf16(rng, shape, scale)
    tensors["model.norm.weight"] = random_bf16(rng, H, None)
    return tensors


def write_checkpoint(directory: Path, tensors: dict[str, np.ndarray], **config) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({**CONFIG, **config}))
    save_file(tensors, str(directory / "model.safetensors"))
    tokenizer = Tokenizer(models.WordLevel({f"w{i}": i for i in range(W)}, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    tensors = checkpoint_tensors(np.random.default_rng(7), LAYERS)
    return write_checkpoint(tmp_path_factory.mktemp("qwen3") / "ckpt", tensors), tensors


def as_f32(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, bf16 against bf16 (no float32 copies of the 311 MB embedding)."""
    assert a.dtype == b.dtype == ml_dtypes.bfloat16
    return a.shape == b.shape and np.array_equal(a.view(np.uint16), b.view(np.uint16))


def test_every_tensor_lands_where_the_kernels_want_it(synthetic):
    """Each Hugging Face tensor is the decode loop's array of the same role, untransposed (nn.Linear's
    `[out, in]` is the kernels' `m["Q, H"]`), and the lm_head is the embedding (tied)."""
    directory, tensors = synthetic
    model = checkpoint.load_model(directory)
    assert len(model.layers) == LAYERS
    for i, layer in enumerate(model.layers):
        p, d = layer.projection, layer.decoder
        roles = {
            "self_attn.q_proj.weight": p.q, "self_attn.k_proj.weight": p.k, "self_attn.v_proj.weight": p.v,
            "input_layernorm.weight": p.input_rms, "self_attn.q_norm.weight": p.q_rms,
            "self_attn.k_norm.weight": p.k_rms, "self_attn.o_proj.weight": d.o,
            "post_attention_layernorm.weight": d.post_rms, "mlp.up_proj.weight": d.up,
            "mlp.gate_proj.weight": d.gate, "mlp.down_proj.weight": d.down,
        }  # fmt: skip
        for name, loaded in roles.items():
            assert same_bits(loaded, tensors[f"model.layers.{i}.{name}"]), name
    assert same_bits(model.final_norm, tensors["model.norm.weight"])
    assert same_bits(model.embedding, tensors["model.embed_tokens.weight"])
    assert model.lm_head is model.embedding


def test_one_token_through_the_kernels_is_the_references(synthetic, capsys):
    """`run --model DIR --prompt w5`: one prompt token and the token it generates on the CPU backend;
    the generated id is the numpy reference's (host.ReferenceDecoder) on a model built from the written
    arrays, and its text is the tokenizer's `w<id>`."""
    directory, tensors = synthetic
    assert main(["run", "--model", str(directory), "--prompt", "w5", "--max-new-tokens", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("prompt [5]")

    def layer(i: int) -> host.Layer:
        t = {name: as_f32(tensors[f"model.layers.{i}.{name}"]) for name in LAYER_TENSORS}
        return host.Layer(
            host.ProjectionWeights(
                t["self_attn.q_proj.weight"], t["self_attn.k_proj.weight"], t["self_attn.v_proj.weight"],
                t["input_layernorm.weight"], t["self_attn.q_norm.weight"], t["self_attn.k_norm.weight"],
            ),
            host.DecoderWeights(
                t["self_attn.o_proj.weight"], t["post_attention_layernorm.weight"], t["mlp.up_proj.weight"],
                t["mlp.gate_proj.weight"], t["mlp.down_proj.weight"],
            ),
        )  # fmt: skip

    embedding = tensors["model.embed_tokens.weight"]
    lm_head = np.asfortranarray(as_f32(embedding))  # the reference reads it a column at a time
    model = host.Model(embedding, [layer(i) for i in range(LAYERS)], as_f32(tensors["model.norm.weight"]), lm_head)
    (expected,) = host.ReferenceDecoder(model).generate([5], 1)
    assert lines[1] == f"tokens {expected}"
    assert lines[-1] == f"w5w{expected}"


def test_an_explicit_lm_head_is_used(tmp_path, synthetic):
    """A checkpoint with its own `lm_head.weight` (not tied): that tensor, not the embedding."""
    _, tensors = synthetic
    own = dict(tensors)
    own["lm_head.weight"] = np.ascontiguousarray(tensors["model.embed_tokens.weight"][::-1])
    directory = write_checkpoint(tmp_path / "untied", own, tie_word_embeddings=False)
    model = checkpoint.load_model(directory)
    assert same_bits(model.lm_head, own["lm_head.weight"]) and not same_bits(model.lm_head, model.embedding)


# ---- broken directories: one line naming the file (tiny files; the names are checked before any read) ----


def tiny(**shapes) -> dict[str, np.ndarray]:
    """Every name of a 1-layer checkpoint as a one-element tensor, except the ones given."""
    names = ["model.embed_tokens.weight", "model.norm.weight", *(f"model.layers.0.{n}" for n in LAYER_TENSORS)]
    return {name: shapes.get(name, np.zeros(1, ml_dtypes.bfloat16)) for name in names}


def run_error(directory: Path, capsys) -> str:
    assert main(["run", "--model", str(directory), "--prompt", "w1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("no config", "config.json: no such file"),
        ("no weights", "model.safetensors: no such file"),
        ("no tokenizer", "tokenizer.json: no such file"),
        ("wide", "config.json: hidden_size is 2048; the kernels are built for 1024"),
        ("layers", "config.json: num_hidden_layers is 0, not a positive integer"),
        ("garbage", "model.safetensors: not a safetensors file"),
        ("missing", "model.safetensors: no tensor 'model.layers.0.mlp.down_proj.weight'"),
        ("transposed", "tensor 'model.layers.0.self_attn.q_proj.weight' of "),
        ("f32", "tensor 'model.layers.0.self_attn.q_proj.weight' of "),
        ("untied", "no tensor 'lm_head.weight', and config.json says tie_word_embeddings false"),
    ],
)
def test_a_broken_directory_is_one_line_naming_the_file(tmp_path, capsys, breakage, expected):
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    tensors, config = tiny(), {"num_hidden_layers": 1}
    if breakage == "missing":
        del tensors["model.layers.0.mlp.down_proj.weight"]
    if breakage == "transposed":
        tensors[q_proj] = np.zeros((H, Q), ml_dtypes.bfloat16)
    if breakage == "f32":
        tensors[q_proj] = np.zeros((Q, H), np.float32)
    config |= {"wide": {"hidden_size": 2048}, "layers": {"num_hidden_layers": 0},
               "untied": {"tie_word_embeddings": False}}.get(breakage, {})  # fmt: skip
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({**CONFIG, **config}))
    save_file(tensors, str(directory / "model.safetensors"))
    Tokenizer(models.WordLevel({"w0": 0, "w1": 1}, unk_token="w0")).save(str(directory / "tokenizer.json"))
    for name, file in (("no config", "config.json"), ("no weights", "model.safetensors"),
                       ("no tokenizer", "tokenizer.json")):  # fmt: skip
        if breakage == name:
            (directory / file).unlink()
    if breakage == "garbage":
        (directory / "model.safetensors").write_bytes(b"not a checkpoint")
    err = run_error(directory, capsys)
    assert expected in err and str(directory) in err
    if breakage == "transposed":
        assert "has shape [1024, 2048]" in err and "wants [2048, 1024]" in err
    if breakage == "f32":
        assert "is F32, not bf16" in err


def test_a_missing_directory_is_named(tmp_path, capsys):
    assert (
        run_error(tmp_path / "nowhere", capsys)
        == f"error: {tmp_path / 'nowhere'}: no such directory (a Qwen3-0.6B checkpoint directory)"
    )


def test_run_model_needs_a_prompt():
    with pytest.raises(SystemExit):
        main(["run", "--model", "checkpoint-dir"])
