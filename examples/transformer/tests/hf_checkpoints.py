"""Small Qwen3 checkpoints built and saved by Hugging Face transformers itself, for tests: random weights
(transformers' own initialisation under a torch seed) at Qwen3-0.6B's widths, `save_pretrained` in bf16, and a
`tokenizer.json` from the `tokenizers` library that spells token id i as `w<i>` (a word-level vocabulary of
all 151 936 ids, split at whitespace; the tokenizer of the synthetic checkpoints of test_checkpoint.py).
Nothing is fetched from a hub.

`run` does the work in a fresh interpreter (`python hf_checkpoints.py`), so that torch and the model leave
the test process's memory when it ends: it builds and saves a checkpoint (and a sharded copy, if asked), or
loads one with `from_pretrained`, and returns what transformers' bf16 `generate` decodes greedily from a
prompt, with the top-1 margin of every step:

    >>> out = run(tmp / "qwen3", seed=1, prompt=[6514, 70921, 106550], max_new_tokens=4)  # doctest: +SKIP
    >>> out["tokens"], out["margins"]  # doctest: +SKIP
    ([108330, 98343, 41168, 35757], [0.71875, 0.21875, 0.1875, 0.34375])

`to_transformers_4` rewrites a saved `config.json` into the form transformers 4 writes (and the Hub's
`Qwen/Qwen3-0.6B` holds): `rope_theta` at the top level, `rope_scaling` null, `torch_dtype`, no `layer_types`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# Qwen3-0.6B's config.json, but for the layer count
QWEN3_0_6B = {
    "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    "max_position_embeddings": 40960, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
}  # fmt: skip


def write_tokenizer(directory: Path, vocab_size: int = QWEN3_0_6B["vocab_size"]) -> Path:
    """`tokenizer.json`: word-level, id i is the word `w<i>`, words split at whitespace."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab_size)}, unk_token="w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory / "tokenizer.json"


def save_qwen3(directory: Path, seed: int, layers: int = 2, max_shard_size: str | None = None, **config):
    """A `Qwen3ForCausalLM` with transformers' random initialisation under `torch.manual_seed(seed)`, built in
    bf16 and saved with `save_pretrained` (sharded at `max_shard_size` if given) with the tokenizer; the model."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(
        Qwen3Config(**{**QWEN3_0_6B, "num_hidden_layers": layers, **config}), dtype=torch.bfloat16
    ).eval()
    save(model, directory, max_shard_size)
    return model


def save(model, directory: Path, max_shard_size: str | None = None) -> Path:
    """`save_pretrained` (one file, or shards with an index) and the tokenizer."""
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.save_pretrained(directory, **kwargs)
    write_tokenizer(directory, model.config.vocab_size)
    return directory


def generate(model, prompt: list[int], max_new_tokens: int, eos: list[int] | None = None) -> dict:
    """transformers' greedy bf16 `generate` from the token ids: `{"tokens", "margins", "tops", "logits"}`: per
    step the top-1 logit minus the runner-up and the top-1 logit (float32 of transformers' bf16 logits), and
    the first step's logits over the vocabulary."""
    import torch

    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos,
            pad_token_id=0, output_logits=True, return_dict_in_generate=True,
        )  # fmt: skip
    steps = [torch.topk(logits[0].float(), 2).values for logits in out.logits]
    return {
        "tokens": out.sequences[0, len(prompt) :].tolist(),
        "margins": [float(top[0] - top[1]) for top in steps],
        "tops": [float(top[0]) for top in steps],
        "logits": out.logits[0][0].float().tolist(),
    }


def to_transformers_4(directory: Path) -> Path:
    """Rewrite `config.json` as transformers 4 writes it (Qwen/Qwen3-0.6B's file on the Hub)."""
    path = directory / "config.json"
    config = json.loads(path.read_text())
    rope = config.pop("rope_parameters")
    config.pop("layer_types", None)
    config["torch_dtype"] = config.pop("dtype", "bfloat16")
    config |= {"rope_theta": rope["rope_theta"], "rope_scaling": None, "transformers_version": "4.51.0"}
    path.write_text(json.dumps(config, indent=2))
    return directory


def main(argv: list[str] | None = None) -> int:
    """The body of `build` and `greedy`: one JSON object on stdout."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="where to save the checkpoint (--seed), else to load it from")
    parser.add_argument("--seed", type=int, help="build and save a new checkpoint from this seed")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--config", default="{}", help="config fields over Qwen3-0.6B's, as JSON")
    parser.add_argument("--sharded", type=Path, help="a sharded copy here too (100 MB shards)")
    parser.add_argument("--prompt", help="comma-separated token ids to generate from")
    parser.add_argument("--max-new-tokens", type=int, default=4)
    parser.add_argument("--eos-at", type=int, help="generate again, the K-th generated token as end-of-sequence")
    args = parser.parse_args(argv)
    if args.seed is not None:
        model = save_qwen3(args.directory, args.seed, args.layers, **json.loads(args.config))
    else:
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(args.directory, dtype=torch.bfloat16).eval()
    if args.sharded is not None:
        save(model, args.sharded, "100MB")
    result = {}
    if args.prompt:
        prompt = [int(t) for t in args.prompt.split(",")]
        result = generate(model, prompt, args.max_new_tokens)
        if args.eos_at is not None:
            result["eos"] = eos = result["tokens"][args.eos_at]
            result["with_eos"] = generate(model, prompt, args.max_new_tokens, [eos])["tokens"]
    print(json.dumps(result))
    return 0


def run(directory: Path, **options) -> dict:
    """`main` in a fresh interpreter, so that torch and the model leave with it: `run(dir, seed=1)` builds and
    saves, `run(dir, prompt=[1, 2])` loads with `from_pretrained` and generates (both at once: build, then
    generate); options are `main`'s, with `_` for `-`; the JSON it prints."""
    command = [sys.executable, __file__, str(directory)]
    for name, value in options.items():
        if value is not None:
            value = ",".join(map(str, value)) if name == "prompt" else value
            command.append(f"--{name.replace('_', '-')}={json.dumps(value) if name == 'config' else value}")
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    if done.returncode != 0:
        raise RuntimeError(f"transformers failed ({' '.join(command)}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
