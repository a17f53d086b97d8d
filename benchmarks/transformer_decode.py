"""Seconds per token of greedy decoding through the two-layer random model at Qwen3-0.6B's real widths
(examples/transformer): the numpy reference, the CPU backend and the simulator, in one run. Each decodes the
same prompt for the same number of tokens from the same weights, and the tokens must agree before any time
is printed. Targets: the CPU backend within 1.5× the reference, the simulator within 3×.
"""

from __future__ import annotations

import sys
import time

from common import machine, npu_backend, row

from furiosa_opt import Context, launch
from furiosa_opt.runtime import launch_here
from transformer.host import Decoder, ReferenceDecoder, random_model

PROMPT, NEW = [1, 2], 2
TARGETS = {"CPU backend": 1.5, "simulator": 3.0}


def per_token(generate) -> tuple[list[int], float]:
    start = time.perf_counter()
    tokens = generate(PROMPT, NEW)
    return tokens, (time.perf_counter() - start) / (len(PROMPT) + NEW - 1)


def main() -> int:
    print(machine())
    model = random_model(2)
    expected, reference = per_token(ReferenceDecoder(model).generate)
    print(f"numpy reference: {reference:.2f} s/token, tokens {expected}")
    with Context.acquire() as ctx:
        tokens, cpu = per_token(Decoder(ctx, model, launch).generate)
    with npu_backend(), Context.acquire() as ctx:
        npu_tokens, npu = per_token(Decoder(ctx, model, launch_here).generate)
    if tokens != expected or npu_tokens != expected:
        print(f"tokens differ: reference {expected}, CPU {tokens}, simulator {npu_tokens}", file=sys.stderr)
        return 1
    for name, seconds in (("CPU backend", cpu), ("simulator", npu)):
        ratio = seconds / reference
        row(f"{name} vs numpy, 2 layers", f"{seconds:.2f} s/token vs {reference:.2f} s/token", f"{ratio:.1f}×",
            f"≤ {TARGETS[name]:g}×", ratio <= TARGETS[name])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
