"""A Qwen3-0.6B checkpoint directory as the decode loop's `Model`, its tokenizer and its end-of-sequence
tokens (`run --model DIR`).

The directory is what Hugging Face transformers saves for `Qwen/Qwen3-0.6B`: `config.json` (transformers 5's
form, with `rope_parameters`, or transformers 4's, with `rope_theta` at the top level), the weights in bf16 as
one `model.safetensors` or as shards listed by `model.safetensors.index.json`, `tokenizer.json`, and
optionally `generation_config.json`. Upstream's host program (`transformer.py`'s `load_model`) hands the
tensors to its kernels as they are stored, and so do we: every projection weight is `[out, in]` as
`nn.Linear` keeps it, which is the kernels' `m["Q, H"]`-style layout, so nothing is transposed; the lm_head is
padded to the kernel's `Wp` rows when it is uploaded (`host.upload_lm_head`), not here. `lm_head.weight` is
tied to the embedding (`tie_word_embeddings`) unless the file carries its own.

The kernels' widths are fixed (kernel.py's axes), so `config.json` must state exactly those, and a setting the
kernels do not implement (RoPE scaling, attention biases, an activation other than SiLU, sliding-window
attention) is refused rather than ignored. The rmsnorm epsilon is a constant of the kernels (upstream's
6.25e-8), added to `mean(x²)` inside the square root; `rms_norm_eps` is honoured exactly when it is that
constant times a power of four, Qwen3's 1e-6 among them (`rmsnorm_scale` says how), and refused otherwise.
Every problem is one line that names the file, and the tensor or field: `CheckpointError`, or the
`VerifyError` of `HostTensor.from_safetensors` for a tensor of the wrong dtype or shape.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
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
}
# config.json fields the kernels implement one setting of (absent: transformers' Qwen3 default, that setting;
# transformers' "swish" is its SiLU too)
FIXED = {
    "attention_bias": ((False,), "the kernels' q/k/v/o projections have no bias"),
    "hidden_act": (("silu", "swish"), "the kernels' MLP is SiLU-gated"),
    "use_sliding_window": ((False,), "the kernels attend to every earlier position (no sliding window)"),
}
ROPE_TYPE = "default"  # RoPE as the kernels apply it: cos/sin of position × theta^(-2i/D), no scaling

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
# The weights whose outputs feed a rmsnorm or the hidden state: scaled by `rmsnorm_scale` (the others not)
SCALED = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.o_proj.weight", "mlp.down_proj.weight"}
EMBEDDING, FINAL_NORM, LM_HEAD = "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"
WEIGHTS, INDEX = "model.safetensors", "model.safetensors.index.json"


class CheckpointError(Exception):
    """A checkpoint directory that cannot be decoded: the message is one line naming the file.

    >>> str(CheckpointError("ckpt/config.json: no field 'hidden_size'"))
    "ckpt/config.json: no field 'hidden_size'"
    """


def require(path: Path) -> Path:
    if not path.parent.is_dir():
        raise CheckpointError(f"{path.parent}: no such directory (a Qwen3-0.6B checkpoint directory)")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file (a Qwen3-0.6B checkpoint directory holds config.json, "
                              f"{WEIGHTS} or {INDEX} with its shards, and tokenizer.json)")  # fmt: skip
    return path


def read_json(path: Path) -> dict:
    """A JSON object from a file that must exist."""
    try:
        data = json.loads(require(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    return data


def read_config(directory: Path) -> dict:
    """`config.json`, checked against what the kernels compute; `num_hidden_layers` may be any positive count.

    >>> read_config(Path("Qwen3-0.6B"))["num_hidden_layers"]  # doctest: +SKIP
    28
    """
    path = directory / "config.json"
    config = read_json(path)
    for name, want in {**WIDTHS, "num_hidden_layers": None}.items():
        if name not in config:
            raise CheckpointError(f"{path}: no field {name!r}")
        got = config[name]
        if want is None and not (isinstance(got, int) and not isinstance(got, bool) and got > 0):
            raise CheckpointError(f"{path}: {name} is {got!r}, not a positive integer")
        if want is not None and got != want:
            raise CheckpointError(f"{path}: {name} is {got!r}; the kernels are built for {want:g} (Qwen3-0.6B)")
    for name, (wanted, why) in FIXED.items():
        if config.get(name) not in (None, *wanted):
            raise CheckpointError(f"{path}: {name} is {json.dumps(config[name])}; {why}")
    layer_types = config.get("layer_types") or []
    if not isinstance(layer_types, list):
        raise CheckpointError(f"{path}: layer_types is {json.dumps(layer_types)}, not a list")
    sliding = [kind for kind in layer_types if kind != "full_attention"]
    if sliding:
        raise CheckpointError(f"{path}: layer_types holds {sliding[0]!r}; the kernels have only full attention")
    check_rope(path, config)
    rmsnorm_scale(path, config)
    return config


def check_rope(path: Path, config: dict) -> None:
    """RoPE as the kernels apply it (reference.rope_tables): theta 10⁶, no scaling. transformers 5 writes
    `rope_parameters: {rope_theta, rope_type}`; transformers 4 `rope_theta` and `rope_scaling` (null)."""
    if "rope_parameters" in config:
        rope, where = config["rope_parameters"], "rope_parameters."
        if not isinstance(rope, dict):
            raise CheckpointError(f"{path}: rope_parameters is {json.dumps(rope)}, not an object")
    elif "rope_theta" in config:
        rope, where = config, ""
    else:
        raise CheckpointError(f"{path}: no field 'rope_parameters' (transformers 5) or 'rope_theta' (transformers 4)")
    legacy = config.get("rope_scaling") or {}
    if not isinstance(legacy, dict):
        raise CheckpointError(f"{path}: rope_scaling is {json.dumps(legacy)}, not an object or null")
    for scaling, prefix in ((rope, where), (legacy, "rope_scaling.")):
        for key in ("rope_type", "type"):
            kind = scaling.get(key, ROPE_TYPE)
            if kind != ROPE_TYPE:
                raise CheckpointError(f"{path}: {prefix}{key} is {json.dumps(kind)}; the kernels implement only "
                                      "the default RoPE (no scaling)")  # fmt: skip
    if rope.get("partial_rotary_factor", 1.0) != 1.0:
        raise CheckpointError(f"{path}: {where}partial_rotary_factor is {rope['partial_rotary_factor']!r}; the "
                              "kernels rotate the whole head")  # fmt: skip
    if "rope_theta" not in rope:
        raise CheckpointError(f"{path}: no field '{where}rope_theta'")
    if rope["rope_theta"] != R.ROPE_THETA:
        raise CheckpointError(f"{path}: {where}rope_theta is {rope['rope_theta']!r}; the kernels are built for "
                              f"{R.ROPE_THETA:g} (Qwen3-0.6B)")  # fmt: skip


def rmsnorm_scale(path: Path, config: dict) -> float:
    """The power of two s by which the hidden state is carried so that the kernels' rmsnorm, whose epsilon is
    the constant K.EPS, computes the checkpoint's `rms_norm_eps` (refused if there is no such s).

    A rmsnorm of `s·x` is `s·x / sqrt(s²·mean(x²) + EPS)` = `x / sqrt(mean(x²) + EPS/s²)`: the norm of `x`
    with epsilon EPS/s². With s = 2^-k every step is exact in f32 and bf16 (scaling by a power of two commutes
    with rounding, short of the subnormal range), so `rms_norm_eps` = EPS·4^k is honoured bit for bit: Qwen3's
    1e-6 is 6.25e-8·4², s = 1/4. An epsilon that is not EPS times a power of four could only be approximated,
    so it is refused. The hidden state is scaled where it starts (the embedding row) and wherever a weight
    adds to it or feeds a norm (o_proj, down_proj; q_proj and k_proj before the q/k norms).

        >>> rmsnorm_scale(Path("config.json"), {"rms_norm_eps": 1e-6})
        0.25
        >>> rmsnorm_scale(Path("config.json"), {"rms_norm_eps": 6.25e-8})
        1.0
    """
    if "rms_norm_eps" not in config:
        raise CheckpointError(f"{path}: no field 'rms_norm_eps'")
    eps = config["rms_norm_eps"]
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < math.inf:
        raise CheckpointError(f"{path}: rms_norm_eps is {eps!r}, not a positive number")
    (mantissa, exponent), (kernel_mantissa, kernel_exponent) = (math.frexp(float(np.float32(e))) for e in (eps, K.EPS))
    shift = exponent - kernel_exponent
    if mantissa != kernel_mantissa or shift % 2:
        raise CheckpointError(f"{path}: rms_norm_eps is {eps!r}; the kernels' rmsnorm adds {K.EPS:g} and honours "
                              f"only {K.EPS:g} × 4^k exactly (Qwen3's 1e-06 is 6.25e-08 × 4²)")  # fmt: skip
    return 2.0 ** (-shift // 2)


def tensor_names(path: Path) -> set[str]:
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(path, framework="numpy") as file:
            return set(file.keys())
    except (SafetensorError, OSError) as error:
        reason = " ".join(str(error).split())
        raise CheckpointError(f"{path}: not a safetensors file ({reason})") from None


def tensor_files(directory: Path) -> tuple[Path, dict[str, Path]]:
    """`(source, files)`: the file that lists the tensors (`model.safetensors`, or the index of a sharded
    checkpoint) and the file holding each tensor. A shard's tensors are checked against the index.

        >>> tensor_files(Path("Qwen3-0.6B"))[1]["model.norm.weight"]  # doctest: +SKIP
        PosixPath('Qwen3-0.6B/model.safetensors')
    """
    single, index = directory / WEIGHTS, directory / INDEX
    if single.is_file() or not index.is_file():
        return single, dict.fromkeys(tensor_names(require(single)), single)
    weight_map = read_json(index).get("weight_map")
    if not isinstance(weight_map, dict) or not all(isinstance(f, str) for f in weight_map.values()):
        raise CheckpointError(f"{index}: no field 'weight_map' mapping tensor names to file names")
    files = {}
    for shard in sorted(set(weight_map.values())):
        if Path(shard).name != shard:
            raise CheckpointError(f"{index}: weight_map names {shard!r}, not a file of this directory")
        held = tensor_names(require(directory / shard))
        absent = [name for name, file in weight_map.items() if file == shard and name not in held]
        if absent:
            raise CheckpointError(f"{directory / shard}: no tensor {absent[0]!r} (the index puts it there)")
        files |= dict.fromkeys(held, directory / shard)
    return index, {name: files[name] for name in weight_map}


def load_model(directory: str | Path) -> Model:
    """Every weight of the checkpoint as `ml_dtypes.bfloat16` arrays (read one tensor at a time; the
    embedding and a tied lm_head are one array), the weights of `SCALED` times `rmsnorm_scale`. Every name
    is looked for before any tensor is read.

        >>> len(load_model("Qwen3-0.6B").layers)  # doctest: +SKIP
        28
    """
    directory = Path(directory)
    config = read_config(directory)
    scale = rmsnorm_scale(directory / "config.json", config)
    source, files = tensor_files(directory)
    layers = range(config["num_hidden_layers"])
    wanted = [EMBEDDING, FINAL_NORM]
    wanted += [f"model.layers.{i}.{name}" for i in layers for name in (*PROJECTION, *DECODER)]
    missing = [name for name in wanted if name not in files]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise CheckpointError(f"{source}: no tensor {missing[0]!r}{more}")
    tied = LM_HEAD not in files
    if tied and config.get("tie_word_embeddings") is False:
        raise CheckpointError(f"{source}: no tensor {LM_HEAD!r}, and config.json says tie_word_embeddings false")

    def read(name: str, mapping) -> np.ndarray:
        return HostTensor.from_safetensors(files[name], name, bf16, mapping).to_numpy()

    def weights(i: int, names: dict) -> list[np.ndarray]:
        read_ = [(name, read(f"model.layers.{i}.{name}", mapping)) for name, mapping in names.items()]
        return [w * ml_dtypes.bfloat16(scale) if name in SCALED and scale != 1 else w for name, w in read_]

    built = [Layer(ProjectionWeights(*weights(i, PROJECTION)), DecoderWeights(*weights(i, DECODER))) for i in layers]
    embedding = read(EMBEDDING, m["W, H"])
    lm_head = embedding if tied else read(LM_HEAD, m["W, H"])
    return Model(embedding, built, read(FINAL_NORM, m["H"]), lm_head, hidden_scale=scale)


def eos_tokens(directory: str | Path) -> list[int]:
    """The end-of-sequence token ids: `generation_config.json`'s `eos_token_id` (an id or a list of ids) when
    the file states one, else `config.json`'s; none when neither does.

        >>> eos_tokens("Qwen3-0.6B")  # doctest: +SKIP
        [151645, 151643]
    """
    directory = Path(directory)
    for path in (directory / "generation_config.json", directory / "config.json"):
        if not path.is_file():
            continue
        eos = read_json(path).get("eos_token_id")
        if eos is None:
            continue
        ids = eos if isinstance(eos, list) else [eos]
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < K.W.size for i in ids):
            raise CheckpointError(f"{path}: eos_token_id is {json.dumps(eos)}, not a token id below {K.W.size} "
                                  "or a list of them")  # fmt: skip
        return ids
    return []


def load_tokenizer(directory: str | Path):
    """`tokenizer.json` through the `tokenizers` library.

    >>> load_tokenizer("Qwen3-0.6B").encode("Hello").ids  # doctest: +SKIP
    [9707]
    """
    from tokenizers import Tokenizer

    path = require(Path(directory) / "tokenizer.json")
    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:  # the library raises a bare Exception for a file it cannot parse
        raise CheckpointError(f"{path}: not a tokenizers file ({' '.join(str(error).split())})") from None
