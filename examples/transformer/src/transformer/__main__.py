"""The host program: `python -m transformer verify` and `python -m transformer run --random-layers K`
(also `furiosa-opt run transformer -- ...`). Port of upstream `transformer.py`'s CLI, on this project's
backends instead of furiosa-torch.

* `verify [--seed S]`: random weights from a seed; every entry point against the numpy reference
  (reference.py), printing the max absolute and relative error of each output.
* `run --random-layers K [--max-new-tokens N] [--prompt IDS] [--seed S] [--check]`: greedy decoding through K
  random layers at the real widths (no checkpoint needed); `--check` decodes with the reference too and
  fails if the tokens differ.
* `run --model DIR --prompt TEXT [--max-new-tokens N] [--ignore-eos] [--check]`: greedy decoding from a
  Qwen3-0.6B checkpoint directory (checkpoint.py): the prompt is encoded with its `tokenizer.json`, decoding
  stops at an end-of-sequence token of its `generation_config.json` / `config.json` (or goes on to N tokens
  with `--ignore-eos`), and the generated ids are decoded.

The backend is the one the environment selects (`FURIOSA_OPT_BACKEND=npu` for the simulator).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Collection

import numpy as np

from furiosa_opt import Context, VerifyError, env, launch, runtime
from transformer import host
from transformer import reference as R
from transformer.host import DecoderWeights, ProjectionWeights, seeded_bf16, seeded_norm


def _launch():
    return launch if env.backend() == "cpu" else runtime.launch_here


def report(name: str, actual: np.ndarray, expected: np.ndarray) -> bool:
    actual, expected = np.ravel(actual).astype(np.float64), np.ravel(expected).astype(np.float64)
    diff = np.abs(actual - expected)
    rel = diff / np.maximum(np.abs(expected), 2.0**-8)  # floored at half a bf16 ulp of 1, as upstream's report
    same = np.array_equal(np.ravel(actual).astype(np.float32).view(np.uint32),
                          np.ravel(expected).astype(np.float32).view(np.uint32))  # fmt: skip
    print(f"{name:<24}{np.nanmax(diff):>12.3e}{np.nanmax(rel):>12.3e}   {'bit-exact' if same else 'differs'}")
    return bool(np.nanmax(diff) <= 0.08 + 0.08 * np.nanmax(np.abs(expected)))


def verify(seed: int) -> int:
    rng = np.random.default_rng(seed)
    launch_ = _launch()
    h, q, p, n, g, d, ll, t, w = 1024, 2048, 1024, 8, 2, 128, 3072, 512, 151936
    print(f"backend {env.backend()}, seed {seed}")
    print(f"{'output':<24}{'max |Δ|':>12}{'max rel':>12}")
    ok = True
    with Context.acquire() as ctx:
        row = seeded_bf16(rng, h, 1.0)
        ok &= report("embedding", host.run_embedding(ctx, row, launch_), row)

        x = seeded_bf16(rng, h, 1.0)
        pw = ProjectionWeights(
            seeded_bf16(rng, (q, h), 0.05), seeded_bf16(rng, (p, h), 0.05), seeded_bf16(rng, (p, h), 0.05),
            seeded_norm(rng, h), seeded_norm(rng, d), seeded_norm(rng, d),
        )  # fmt: skip
        position = 5
        cos, sin = R.rope_tables(position)
        q_out, k_cache, v_cache = host.run_projection(ctx, x, pw, position, cos, sin, launch_=launch_)
        rq, rk, rv = R.projection(x, pw.q, pw.k, pw.v, pw.input_rms, pw.q_rms, pw.k_rms, cos, sin)
        ok &= report("projection q", q_out, rq)
        ok &= report("projection k", k_cache[position], rk)
        ok &= report("projection v", v_cache[position], rv)

        qa = seeded_bf16(rng, (n, g, d), 1.0)
        chunks = [(seeded_bf16(rng, (t, n, d), 1.0), seeded_bf16(rng, (t, n, d), 1.0)) for _ in range(2)]
        masks = [np.ones(t, np.float32), (np.arange(t) < 6).astype(np.float32)]  # chunk 1: 6 valid keys
        start = time.perf_counter()
        max_, sum_, out = host.run_attention(
            ctx, qa, [(k, v, mk) for (k, v), mk in zip(chunks, masks, strict=True)], launch_
        )
        elapsed = time.perf_counter() - start
        state = R.attention_first(qa, *chunks[0], masks[0])
        rmax, rsum, rout = R.attention_next(qa, *chunks[1], masks[1], *state)
        ok &= report("attention max", max_, rmax)
        ok &= report("attention sum", sum_, rsum)
        ok &= report("attention out", out, rout)
        print(f"{'':<24}(attention: two launches in {elapsed:.1f} s)")

        rx = seeded_bf16(rng, h, 1.0)
        dw = DecoderWeights(
            seeded_bf16(rng, (h, q), 0.02), seeded_norm(rng, h), seeded_bf16(rng, (ll, h), 0.03),
            seeded_bf16(rng, (ll, h), 0.03), seeded_bf16(rng, (h, ll), 0.02),
        )  # fmt: skip
        got = host.run_decoder(ctx, out, sum_, rx, dw, launch_)
        ok &= report("decoder", got, R.decoder(out, sum_, rx, dw.o, dw.post_rms, dw.up, dw.gate, dw.down))

        norm = seeded_norm(rng, h)
        lm = seeded_bf16(rng, (w, h), 0.05)
        logits = host.run_final_layer(ctx, got, norm, host.upload_lm_head(ctx, lm), launch_)
        ok &= report("final_layer (vocab)", logits[:w], R.final_layer(got, norm, lm))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def decode(
    model: host.Model, prompt: list[int], max_new_tokens: int, check: bool, source: str, stop: Collection[int] = ()
) -> list[int] | None:
    """Greedy decoding on the selected backend up to a token of `stop`, the timings on stderr; with `check`,
    None if the numpy reference decodes other tokens."""
    with Context.acquire() as ctx:
        start = time.perf_counter()
        decoder = host.Decoder(ctx, model, _launch())
        uploaded = time.perf_counter()
        tokens = decoder.generate(prompt, max_new_tokens, stop)
        done = time.perf_counter()
    steps = max(len(prompt) + len(tokens) - 1, 1)
    print(f"backend {env.backend()}, {source}, prompt {prompt}")
    print("tokens", " ".join(str(t) for t in tokens))
    print(
        f"upload {uploaded - start:.1f} s, {steps} steps in {done - uploaded:.1f} s "
        f"({(done - uploaded) / steps:.2f} s/token)",
        file=sys.stderr,
    )
    if tokens and tokens[-1] in stop:
        print(f"stopped at the end-of-sequence token {tokens[-1]} (--ignore-eos goes on)", file=sys.stderr)
    if check:
        expected = host.ReferenceDecoder(model).generate(prompt, max_new_tokens, stop)
        print("reference", " ".join(str(t) for t in expected))
        if expected != tokens:
            print("FAIL: the tokens differ from the reference's")
            return None
        print("PASS: the same tokens as the numpy reference")
    return tokens


def run(layers: int, max_new_tokens: int, prompt: list[int], seed: int, check: bool) -> int:
    start = time.perf_counter()
    model = host.random_model(layers, seed)
    print(f"weights {time.perf_counter() - start:.1f} s", file=sys.stderr)
    tokens = decode(model, prompt, max_new_tokens, check, f"{layers} random layers (seed {seed})")
    return 0 if tokens is not None else 1


def run_model(directory: str, text: str, max_new_tokens: int, check: bool, ignore_eos: bool = False) -> int:
    """`run --model DIR`: the checkpoint's weights, tokenizer and end-of-sequence tokens; the prompt and its
    continuation printed."""
    try:
        from transformer import checkpoint
    except ImportError as error:
        print(f"error: run --model needs {error.name}: pip install 'transformer[model]'", file=sys.stderr)
        return 2
    try:
        tokenizer = checkpoint.load_tokenizer(directory)
        stop = [] if ignore_eos else checkpoint.eos_tokens(directory)
        start = time.perf_counter()
        model = checkpoint.load_model(directory)
    except (checkpoint.CheckpointError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except VerifyError as error:  # a tensor of the wrong dtype or shape (HostTensor.from_safetensors)
        print(f"error: {error.message}", file=sys.stderr)
        return 2
    print(f"weights {time.perf_counter() - start:.1f} s ({len(model.layers)} layers)", file=sys.stderr)
    prompt = tokenizer.encode(text, add_special_tokens=False).ids
    if not prompt or max(prompt) >= len(model.embedding):
        what = "no tokens" if not prompt else f"token {max(prompt)}, past the {len(model.embedding)} embedding rows"
        print(f"error: the prompt {text!r} encodes to {what}", file=sys.stderr)
        return 2
    tokens = decode(model, prompt, max_new_tokens, check, f"{len(model.layers)} layers of {directory}", stop)
    if tokens is None:
        return 1
    print(text + tokenizer.decode(tokens, skip_special_tokens=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="every entry point against the numpy reference, random weights")
    v.add_argument("--seed", type=int, default=42)
    r = sub.add_parser("run", help="greedy decoding")
    weights = r.add_mutually_exclusive_group(required=True)
    weights.add_argument("--random-layers", type=int, metavar="K", help="K random layers, real widths")
    weights.add_argument("--model", metavar="DIR", help="a Qwen3-0.6B checkpoint directory")
    r.add_argument("--max-new-tokens", type=int, default=8)
    r.add_argument("--prompt", help="text (--model), or comma-separated token ids (default 1,2,3)")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--check", action="store_true", help="decode with the numpy reference too and compare")
    r.add_argument("--ignore-eos", action="store_true", help="--model: go on past an end-of-sequence token")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify(args.seed)
    if args.model is not None:
        if args.prompt is None:
            parser.error("run --model needs --prompt TEXT")
        return run_model(args.model, args.prompt, args.max_new_tokens, args.check, args.ignore_eos)
    try:
        prompt = [int(t) for t in (args.prompt or "1,2,3").split(",") if t]
    except ValueError:
        parser.error(f"--prompt {args.prompt!r}: with --random-layers, comma-separated token ids")
    return run(args.random_layers, args.max_new_tokens, prompt, args.seed, args.check)


if __name__ == "__main__":
    sys.exit(main())
