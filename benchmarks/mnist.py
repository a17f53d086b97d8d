"""MNIST images per second: `forward` (examples/mnist) on the CPU backend and on the simulator, each against the
numpy reference (`mnist.reference`) classifying the same images in the same run.

Each side classifies the first `--count` held-out images of the checked-in model one image per call, as the
host program does: the CPU backend and the simulator upload the image, launch `forward` and read the 16 logits
back (the weights stay in HBM, uploaded once, untimed); the reference computes the same logits with numpy, one
image at a time, in the kernel's fold order and roundings. Every side's logits must equal the reference's bit
for bit before it is timed. Each figure is the best of `--repeats` passes. The figure of merit is how many
times fewer images per second a backend classifies than the reference (`numpy / backend` in images per
second); the targets are ≤ 5× for the CPU backend (as `transformer_shapes.py`'s launches) and ≤ 10× for the simulator,
which also walks the binary's DMA descriptors and sequencers. The batched reference (all images in one call)
and forward's simulated makespan are printed for scale, without a target.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

# This script is `mnist.py` and its folder comes first on sys.path: put the folder last, so that `mnist`
# names the example package while `common` is still found.
HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(HERE)] + [HERE]

import numpy as np  # noqa: E402
from common import best_of, duration, launch_npu, machine, npu_backend, row  # noqa: E402

from furiosa_opt import Context, HostTensor, bf16, launch, m  # noqa: E402
from furiosa_opt.runtime import compiled_here  # noqa: E402
from mnist import host, reference  # noqa: E402
from mnist.kernel import X, forward  # noqa: E402

TARGETS = {"CPU backend": 5.0, "simulator": 10.0}


def backend_pass(run: Callable, count: int, repeats: int, expected: np.ndarray) -> float | None:
    """Best-of time of classifying `count` images with `run`, or None when a logit differs from the reference."""
    with Context.acquire() as ctx:
        model = host.Model.load(ctx)
        images = [HostTensor.from_safetensors(host.WEIGHTS, f"hw.image_{i}", bf16, m[X]) for i in range(count)]

        def once() -> np.ndarray:
            return np.stack([host.classify(ctx, model, image.to_hbm(ctx.pdma), run) for image in images])

        if not np.array_equal(once(), expected):
            return None
        return best_of(repeats, once)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20, help="images per pass (at most 100)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    codes = host.read_codes(count=args.count)
    weights = codes["w1"], codes["b1"], codes["w2"], codes["b2"]
    expected = reference.forward(codes["images"], *weights)

    def numpy_pass() -> np.ndarray:
        return np.stack([reference.forward(image, *weights) for image in codes["images"]])

    assert np.array_equal(numpy_pass(), expected)
    numpy_seconds = best_of(args.repeats, numpy_pass)
    batched = best_of(args.repeats, lambda: reference.forward(codes["images"], *weights))
    edf = compiled_here(forward)  # untimed: the simulator's binary, compiled in this process
    os.environ["FURIOSA_OPT_BACKEND"] = "cpu"
    cpu = backend_pass(launch, args.count, args.repeats, expected)
    with npu_backend():
        simulated = backend_pass(launch_npu, args.count, args.repeats, expected)

    def rate(seconds: float) -> float:
        return args.count / seconds

    print(
        f"numpy reference: {rate(numpy_seconds):.1f} images/s one image per call, {rate(batched):.0f} images/s "
        f"batched ({args.count} images in one call); forward's makespan {host.makespan(edf)} simulated cycles"
    )
    failed = False
    for name, seconds in (("CPU backend", cpu), ("simulator", simulated)):
        print(f"mnist {name:41} check: {'equals' if seconds else 'DIFFERS FROM'} the numpy reference bit for bit")
        if seconds is None:
            failed = True
            continue
        ratio = seconds / numpy_seconds  # (numpy images/s) / (backend images/s)
        figures = f"{rate(seconds):.1f} vs numpy {rate(numpy_seconds):.1f} images/s"
        what = f"mnist {name} ({args.count} images, {duration(seconds / args.count)}/image)"
        row(what, figures, f"{ratio:.3g}×", f"≤ {TARGETS[name]:g}×", ratio <= TARGETS[name])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
