"""The host program: `python -m transformer verify` and `python -m transformer run --random-layers K`
(also `furiosa-opt run transformer -- ...`). Port of upstream `transformer.py`'s CLI, on this project's
backends instead of furiosa-torch.

* `verify [--seed S]`: random weights from a seed; every entry point against the numpy reference
  (reference.py), printing the max absolute and relative error of each output.
* `run --random-layers K [--max-new-tokens N] [--prompt IDS] [--seed S] [--check]`: greedy decoding through K
  random layers at the real widths (no checkpoint needed); `--check` decodes with the reference too and
  fails if the tokens differ.

The backend is the one the environment selects (`FURIOSA_OPT_BACKEND=npu` for the simulator).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from furiosa_opt import Context, env, launch, runtime
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


def run(layers: int, max_new_tokens: int, prompt: list[int], seed: int, check: bool) -> int:
    start = time.perf_counter()
    model = host.random_model(layers, seed)
    built = time.perf_counter()
    with Context.acquire() as ctx:
        decoder = host.Decoder(ctx, model, _launch())
        uploaded = time.perf_counter()
        tokens = decoder.generate(prompt, max_new_tokens)
        done = time.perf_counter()
    steps = len(prompt) + max_new_tokens - 1
    print(f"backend {env.backend()}, {layers} random layers (seed {seed}), prompt {prompt}")
    print("tokens", " ".join(str(t) for t in tokens))
    print(
        f"weights {built - start:.1f} s, upload {uploaded - built:.1f} s, {steps} steps in {done - uploaded:.1f} s "
        f"({(done - uploaded) / steps:.2f} s/token)",
        file=sys.stderr,
    )
    if check:
        expected = host.ReferenceDecoder(model).generate(prompt, max_new_tokens)
        print("reference", " ".join(str(t) for t in expected))
        if expected != tokens:
            print("FAIL: the tokens differ from the reference's")
            return 1
        print("PASS: the same tokens as the numpy reference")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="every entry point against the numpy reference, random weights")
    v.add_argument("--seed", type=int, default=42)
    r = sub.add_parser("run", help="greedy decoding")
    r.add_argument("--random-layers", type=int, required=True, metavar="K", help="K random layers, real widths")
    r.add_argument("--max-new-tokens", type=int, default=8)
    r.add_argument("--prompt", default="1,2,3", help="comma-separated token ids")
    r.add_argument("--seed", type=int, default=42)
    r.add_argument("--check", action="store_true", help="decode with the numpy reference too and compare")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify(args.seed)
    prompt = [int(t) for t in args.prompt.split(",") if t]
    return run(args.random_layers, args.max_new_tokens, prompt, args.seed, args.check)


if __name__ == "__main__":
    sys.exit(main())
