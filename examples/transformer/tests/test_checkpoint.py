"""`run --model DIR` (checkpoint.py) on a synthetic Qwen3-0.6B directory: Hugging Face's tensor names at the
real widths for 2 layers (the embedding alone is 151936 × 1024 bf16, 311 MB), a WordLevel `tokenizer.json`
naming every id `w<id>`, and transformers 4's `config.json`. The loaded arrays must be the written ones, one
greedy token through the kernels must be the numpy reference's token from the written arrays, and every
broken directory or config field the kernels do not implement must give one line naming the file and the
field. The kernels' numerics are tested in test_example.py, and checkpoints transformers itself writes in
test_transformers_checkpoints.py; here the loading and the decode loop around it.
"""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hf_checkpoints import write_tokenizer
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models

from transformer import checkpoint, host
from transformer import reference as R
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
    write_tokenizer(directory, W)
    return directory


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """The kernels' own rmsnorm epsilon (hidden_scale 1): the loaded arrays are the written ones."""
    tensors = checkpoint_tensors(np.random.default_rng(7), LAYERS)
    directory = write_checkpoint(tmp_path_factory.mktemp("qwen3") / "ckpt", tensors, rms_norm_eps=6.25e-8)
    return directory, tensors


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


def test_qwen3s_epsilon_carries_the_hidden_state_at_a_quarter(tmp_path, synthetic):
    """`rms_norm_eps` 1e-6 (Qwen3's) is the kernels' 6.25e-8 × 4²: the same tensors load with hidden_scale 1/4,
    the four weights that feed the hidden state or a q/k norm times 1/4 exactly, the others as written."""
    directory, tensors = synthetic
    qwen3 = tmp_path / "eps"
    qwen3.mkdir()
    (qwen3 / "config.json").write_text(json.dumps({**CONFIG, "rms_norm_eps": 1e-6}))
    (qwen3 / "model.safetensors").symlink_to(directory / "model.safetensors")
    model = checkpoint.load_model(qwen3)
    assert model.hidden_scale == 0.25
    layer = model.layers[1]
    loaded = {"self_attn.q_proj.weight": layer.projection.q, "self_attn.k_proj.weight": layer.projection.k,
              "self_attn.o_proj.weight": layer.decoder.o, "mlp.down_proj.weight": layer.decoder.down,
              "self_attn.v_proj.weight": layer.projection.v, "mlp.up_proj.weight": layer.decoder.up,
              "input_layernorm.weight": layer.projection.input_rms}  # fmt: skip
    for name, array in loaded.items():
        written = tensors[f"model.layers.1.{name}"]
        quarter = (written.astype(np.float32) * np.float32(0.25)).astype(ml_dtypes.bfloat16)
        assert same_bits(array, quarter if name in checkpoint.SCALED else written), name
    row = model.embedding_row(5)
    assert same_bits(row, (tensors["model.embed_tokens.weight"][5].astype(np.float32) / 4).astype(row.dtype))


@pytest.mark.parametrize("eps", [1e-6, 4.096e-3, 1.5625e-8])
def test_a_scaled_rmsnorm_is_the_rmsnorm_with_the_checkpoints_epsilon(monkeypatch, eps):
    """The reason hidden_scale honours `rms_norm_eps`: the reference rmsnorm (the kernels', bit for bit) of
    `s·x` with its own epsilon equals, bit for bit, the rmsnorm of `x` with the checkpoint's epsilon."""
    scale = checkpoint.rmsnorm_scale(Path("config.json"), {"rms_norm_eps": eps})
    rng = np.random.default_rng(3)
    weight = R.to_bf16(rng.uniform(0.5, 1.5, H).astype(np.float32))
    for magnitude in (1e-4, 0.02, 1.0, 40.0):
        x = R.to_bf16(rng.normal(0, magnitude, H).astype(np.float32))
        scaled = R.rmsnorm(R.to_bf16(x * np.float32(scale)), weight)
        monkeypatch.setattr(R, "EPS", np.float32(eps))
        expected = R.rmsnorm(x, weight)
        monkeypatch.undo()
        assert np.array_equal(scaled.view(np.uint32), expected.view(np.uint32)), magnitude


# ---- broken directories: one line naming the file (tiny files; the names are checked before any read) ----


def tiny(**shapes) -> dict[str, np.ndarray]:
    """Every name of a 1-layer checkpoint as a one-element tensor, except the ones given."""
    names = ["model.embed_tokens.weight", "model.norm.weight", *(f"model.layers.0.{n}" for n in LAYER_TENSORS)]
    return {name: shapes.get(name, np.zeros(1, ml_dtypes.bfloat16)) for name in names}


def tiny_directory(directory: Path, tensors: dict[str, np.ndarray] | None = None, **config) -> Path:
    """A 1-layer checkpoint of tiny tensors with transformers 4's config.json (a field None: left out)."""
    directory.mkdir()
    fields = {**CONFIG, "num_hidden_layers": 1, **config}
    (directory / "config.json").write_text(json.dumps({k: v for k, v in fields.items() if v is not None}))
    save_file(tiny() if tensors is None else tensors, str(directory / "model.safetensors"))
    Tokenizer(models.WordLevel({"w0": 0, "w1": 1}, unk_token="w0")).save(str(directory / "tokenizer.json"))
    return directory


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
    tensors, config = tiny(), {}
    if breakage == "missing":
        del tensors["model.layers.0.mlp.down_proj.weight"]
    if breakage == "transposed":
        tensors[q_proj] = np.zeros((H, Q), ml_dtypes.bfloat16)
    if breakage == "f32":
        tensors[q_proj] = np.zeros((Q, H), np.float32)
    config |= {"wide": {"hidden_size": 2048}, "layers": {"num_hidden_layers": 0},
               "untied": {"tie_word_embeddings": False}}.get(breakage, {})  # fmt: skip
    directory = tiny_directory(tmp_path / "ckpt", tensors, **config)
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


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # transformers 5's rope_parameters, and Qwen3's documented YaRN in either version's form
        ({"rope_theta": None}, "no field 'rope_parameters' (transformers 5) or 'rope_theta' (transformers 4)"),
        ({"rope_theta": 10000.0}, "rope_theta is 10000.0; the kernels are built for 1e+06"),
        ({"rope_theta": None, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}},
         "rope_parameters.rope_theta is 500000.0; the kernels are built for 1e+06"),
        ({"rope_theta": None, "rope_parameters": {"rope_type": "default"}}, "no field 'rope_parameters.rope_theta'"),
        ({"rope_theta": None, "rope_parameters": {**YARN, "rope_theta": 1e6}},
         'rope_parameters.rope_type is "yarn"; the kernels implement only the default RoPE (no scaling)'),
        ({"rope_scaling": YARN}, 'rope_scaling.rope_type is "yarn"; the kernels implement only the default RoPE'),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, 'rope_scaling.type is "linear"; the kernels implement'),
        ({"rope_scaling": "yarn"}, 'rope_scaling is "yarn", not an object or null'),
        ({"rope_theta": None, "rope_parameters": {"rope_theta": 1e6, "partial_rotary_factor": 0.5}},
         "rope_parameters.partial_rotary_factor is 0.5; the kernels rotate the whole head"),
        ({"attention_bias": True}, "attention_bias is true; the kernels' q/k/v/o projections have no bias"),
        ({"hidden_act": "gelu"}, 'hidden_act is "gelu"; the kernels\' MLP is SiLU-gated'),
        ({"use_sliding_window": True}, "use_sliding_window is true; the kernels attend to every earlier position"),
        ({"layer_types": ["sliding_attention"]}, "layer_types holds 'sliding_attention'; the kernels have only full"),
        ({"rms_norm_eps": 1e-5}, "rms_norm_eps is 1e-05; the kernels' rmsnorm adds 6.25e-08 and honours only "
                                 "6.25e-08 × 4^k exactly (Qwen3's 1e-06 is 6.25e-08 × 4²)"),
        ({"rms_norm_eps": None}, "no field 'rms_norm_eps'"),
        ({"rms_norm_eps": -1}, "rms_norm_eps is -1, not a positive number"),
        ({"eos_token_id": "</s>"}, 'eos_token_id is "</s>", not a token id below 151936 or a list of them'),
    ],
)  # fmt: skip
def test_a_config_field_the_kernels_do_not_implement_is_one_line(tmp_path, capsys, config, expected):
    """Each refused field of config.json: one line naming the file and the field, before any tensor is read."""
    directory = tiny_directory(tmp_path / "ckpt", **config)
    err = run_error(directory, capsys)
    assert err.startswith(f"error: {directory / 'config.json'}: {expected}"), err


def test_transformers_5s_config_is_read(tmp_path):
    """transformers 5's fields (`rope_parameters`, `dtype`, `layer_types` of full attention) pass the check."""
    config = {k: v for k, v in CONFIG.items() if k not in ("rope_theta", "torch_dtype")}
    config |= {"rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}, "dtype": "bfloat16",
               "layer_types": ["full_attention"] * LAYERS, "attention_bias": False, "hidden_act": "silu",
               "use_sliding_window": False, "sliding_window": None}  # fmt: skip
    tmp_path.joinpath("config.json").write_text(json.dumps(config))
    assert checkpoint.read_config(tmp_path)["num_hidden_layers"] == LAYERS
    tmp_path.joinpath("config.json").write_text(json.dumps(config | {"hidden_act": "swish"}))  # transformers' SiLU
    assert checkpoint.read_config(tmp_path)["hidden_act"] == "swish"


def test_end_of_sequence_tokens_come_from_generation_config_first(tmp_path):
    """generation_config.json's `eos_token_id` (an id or a list), else config.json's, else none."""
    config, generation = tmp_path / "config.json", tmp_path / "generation_config.json"
    config.write_text(json.dumps({**CONFIG, "eos_token_id": 151643}))
    assert checkpoint.eos_tokens(tmp_path) == [151643]
    generation.write_text(json.dumps({"eos_token_id": [151645, 151643]}))
    assert checkpoint.eos_tokens(tmp_path) == [151645, 151643]
    generation.write_text(json.dumps({"eos_token_id": 7}))
    assert checkpoint.eos_tokens(tmp_path) == [7]
    generation.write_text(json.dumps({"do_sample": True}))
    config.write_text(json.dumps(CONFIG))
    assert checkpoint.eos_tokens(tmp_path) == []
    generation.write_text(json.dumps({"eos_token_id": [W]}))
    with pytest.raises(checkpoint.CheckpointError, match=r"generation_config.json: eos_token_id is \[151936\]"):
        checkpoint.eos_tokens(tmp_path)


def shard(directory: Path, index: dict | str, files: dict[str, dict[str, np.ndarray]]) -> Path:
    """A tiny checkpoint sharded into `files` with the given index (an object, or raw text)."""
    tiny_directory(directory)
    (directory / "model.safetensors").unlink()
    for name, tensors in files.items():
        save_file(tensors, str(directory / name))
    text = index if isinstance(index, str) else json.dumps(index)
    (directory / "model.safetensors.index.json").write_text(text)
    return directory


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("no weight_map", "model.safetensors.index.json: no field 'weight_map' mapping tensor names to file names"),
        ("not json", "model.safetensors.index.json: not JSON"),
        ("outside", "model.safetensors.index.json: weight_map names '../a.safetensors', not a file of this directory"),
        ("no shard", "b.safetensors: no such file"),
        ("misplaced", "b.safetensors: no tensor 'model.embed_tokens.weight' (the index puts it there)"),
        ("missing", "model.safetensors.index.json: no tensor 'model.norm.weight'"),
    ],
)
def test_a_broken_sharded_checkpoint_is_one_line_naming_the_file(tmp_path, capsys, breakage, expected):
    tensors = tiny()
    first = {name: tensors[name] for name in list(tensors)[:5]}
    second = {name: tensors[name] for name in list(tensors)[5:]}
    weight_map = dict.fromkeys(first, "a.safetensors") | dict.fromkeys(second, "b.safetensors")
    index, files = {"metadata": {}, "weight_map": weight_map}, {"a.safetensors": first, "b.safetensors": second}
    if breakage == "no weight_map":
        del index["weight_map"]
    if breakage == "not json":
        index = "{"
    if breakage == "outside":
        weight_map["model.norm.weight"] = "../a.safetensors"
    if breakage == "no shard":
        del files["b.safetensors"]
    if breakage == "misplaced":
        weight_map["model.embed_tokens.weight"] = "b.safetensors"
    if breakage == "missing":
        del weight_map["model.norm.weight"]
    directory = shard(tmp_path / "ckpt", index, files)
    err = run_error(directory, capsys)
    assert expected in err and str(directory) in err, err


def test_a_sharded_checkpoint_reads_each_tensor_from_its_shard(tmp_path, capsys):
    """Past the index, each tensor is read from the shard it names: a tiny tensor there is refused by shape."""
    tensors = tiny()
    first = {name: tensors[name] for name in list(tensors)[:5]}
    second = {name: tensors[name] for name in list(tensors)[5:]}
    weight_map = dict.fromkeys(first, "a.safetensors") | dict.fromkeys(second, "b.safetensors")
    directory = shard(tmp_path / "ckpt", {"weight_map": weight_map}, {"a.safetensors": first, "b.safetensors": second})
    files = checkpoint.tensor_files(directory)[1]
    assert files == {name: directory / file for name, file in weight_map.items()}
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    assert weight_map[q_proj] == "a.safetensors"
    assert f"tensor {q_proj!r} of {directory / 'a.safetensors'} has shape [1]" in run_error(directory, capsys)
