"""A Qwen3-0.6B checkpoint directory as the decode loop's `Model`, and its tokenizer (`run --model DIR`).

The directory is Hugging Face's `Qwen/Qwen3-0.6B`: `config.json`, `model.safetensors` (one file, bf16) and
`tokenizer.json`. Upstream's host program (`transformer.py`'s `load_model`) hands the tensors to its kernels
as they are stored, and so do we: every projection weight is `[out, in]` as `nn.Linear` keeps it, which is
the kernels' `m["Q, H"]`-style layout, so nothing is transposed; the lm_head is padded to the kernel's `Wp`
rows when it is uploaded (`host.upload_lm_head`), not here. `lm_head.weight` is tied to the embedding
(`tie_word_embeddings`) unless the file carries its own.

The kernels' widths are fixed (kernel.py's axes), so `config.json` must state exactly those; the rmsnorm
epsilon is the kernels' (upstream's 6.25e-8), whatever `rms_norm_eps` says. Every problem is one line that
names the file, and the tensor or field: `CheckpointError`, or the `VerifyError` of
`HostTensor.from_safetensors` for a tensor of the wrong dtype or shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from furiosa_opt import HostTensor, bf16, m
from transformer import kernel as K
from transformer import reference as R
from transformer.host import DecoderWeights, Layer, Model, ProjectionWeights
from transformer.kernel import D, H, L, P, Q, W  # noqa: F401 (named inside m["..."] strings)

# config.json fields that must equal the kernels' widths
WIDTHS = {
    "hidden_size": K.H.size,
    "num_attention_heads": K.N.size * K.G.size,
    "num_key_value_heads": K.N.size,
    "head_dim": K.D.size,
    "intermediate_size": K.L.size,
    "vocab_size": K.W.size,
    "rope_theta": R.ROPE_THETA,
}

# Each layer's tensors (under `model.layers.{i}.`) with the kernels' mapping of each: their shapes.
PROJECTION = {
    "self_attn.q_proj.weight": m["Q, H"],
    "self_attn.k_proj.weight": m["P, H"],
    "self_attn.v_proj.weight": m["P, H"],
    "input_layernorm.weight": m["H"],
    "self_attn.q_norm.weight": m["D"],
    "self_attn.k_norm.weight": m["D"],
}
DECODER = {
    "self_attn.o_proj.weight": m["H, Q"],
    "post_attention_layernorm.weight": m["H"],
    "mlp.up_proj.weight": m["L, H"],
    "mlp.gate_proj.weight": m["L, H"],
    "mlp.down_proj.weight": m["H, L"],
}
EMBEDDING, FINAL_NORM, LM_HEAD = "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"


class CheckpointError(Exception):
    """A checkpoint directory that cannot be decoded: the message is one line naming the file."""


def require(path: Path) -> Path:
    if not path.parent.is_dir():
        raise CheckpointError(f"{path.parent}: no such directory (a Qwen3-0.6B checkpoint directory)")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file (a Qwen3-0.6B checkpoint directory holds config.json, "
                              "model.safetensors and tokenizer.json)")  # fmt: skip
    return path


def read_config(directory: Path) -> dict:
    """`config.json`, checked against the kernels' widths; `num_hidden_layers` may be any positive count."""
    path = require(directory / "config.json")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path}: not JSON ({error})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    for name, want in {**WIDTHS, "num_hidden_layers": None}.items():
        if name not in config:
            raise CheckpointError(f"{path}: no field {name!r}")
        got = config[name]
        if want is None and not (isinstance(got, int) and not isinstance(got, bool) and got > 0):
            raise CheckpointError(f"{path}: {name} is {got!r}, not a positive integer")
        if want is not None and got != want:
            raise CheckpointError(f"{path}: {name} is {got!r}; the kernels are built for {want:g} (Qwen3-0.6B)")
    return config


def tensor_names(path: Path) -> set[str]:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="numpy") as file:
            return set(file.keys())
    except (SafetensorError, OSError) as error:
        reason = " ".join(str(error).split())
        raise CheckpointError(f"{path}: not a safetensors file ({reason})") from None


def load_model(directory: str | Path) -> Model:
    """Every weight of the checkpoint as `ml_dtypes.bfloat16` arrays (read one tensor at a time; the
    embedding and a tied lm_head are one array). Every name is looked for before any tensor is read."""
    directory = Path(directory)
    config = read_config(directory)
    path = require(directory / "model.safetensors")
    layers = range(config["num_hidden_layers"])
    wanted = [EMBEDDING, FINAL_NORM]
    wanted += [f"model.layers.{i}.{name}" for i in layers for name in (*PROJECTION, *DECODER)]
    held = tensor_names(path)
    missing = [name for name in wanted if name not in held]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise CheckpointError(f"{path}: no tensor {missing[0]!r}{more}")
    tied = LM_HEAD not in held
    if tied and config.get("tie_word_embeddings") is False:
        raise CheckpointError(f"{path}: no tensor {LM_HEAD!r}, and config.json says tie_word_embeddings false")

    def read(name: str, mapping) -> np.ndarray:
        return HostTensor.from_safetensors(path, name, bf16, mapping).to_numpy()

    def weights(i: int, names: dict) -> list[np.ndarray]:
        return [read(f"model.layers.{i}.{name}", mapping) for name, mapping in names.items()]

    built = [Layer(ProjectionWeights(*weights(i, PROJECTION)), DecoderWeights(*weights(i, DECODER))) for i in layers]
    embedding = read(EMBEDDING, m["W, H"])
    lm_head = embedding if tied else read(LM_HEAD, m["W, H"])
    return Model(embedding, built, read(FINAL_NORM, m["H"]), lm_head)


def load_tokenizer(directory: str | Path):
    """`tokenizer.json` through the `tokenizers` library."""
    from tokenizers import Tokenizer

    path = require(Path(directory) / "tokenizer.json")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:  # the library raises a bare Exception for a file it cannot parse
        raise CheckpointError(f"{path}: not a tokenizers file ({' '.join(str(error).split())})") from None
