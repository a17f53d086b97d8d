"""Host program: `python -m mnist [--weights FILE] [--count N] [--show K]` (or `furiosa-opt run mnist`).

Classifies the held-out images of the exported model with `forward`, one launch per image as upstream's
`mnist_tests.rs` does, and prints the accuracy, how many logits equal the numpy reference bit for bit, the
images per second and, on the NPU backend (which `furiosa-opt run` selects), the simulated cycles per image:
the makespan of `forward`'s compiled schedule on the simulator.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from furiosa_opt import env
from mnist import reference
from mnist.host import WEIGHTS, image_count, makespan, read_codes, render, run
from mnist.kernel import forward


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnist", description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=WEIGHTS, help=f"safetensors file (default: {WEIGHTS})")
    parser.add_argument("--count", type=int, default=None, help="classify the first N images (default: all)")
    parser.add_argument("--show", type=int, default=1, metavar="K", help="draw the first K digits (default: 1)")
    options = parser.parse_args(argv)
    available = image_count(options.weights)
    count = available if options.count is None else options.count
    if not 0 < count <= available:
        parser.error(f"--count must be between 1 and {available} (the images in {options.weights})")

    result = run(options.weights, count)
    codes = read_codes(options.weights, count)
    expected = reference.forward(codes["images"], codes["w1"], codes["b1"], codes["w2"], codes["b2"])
    same = int(np.sum(np.all(result.logits == expected, axis=1)))
    for i in range(min(options.show, count)):
        print(render(i, codes["images"][i], result.logits[i], int(result.labels[i])), end="\n\n")

    backend = env.backend()
    correct = int(np.sum(result.predicted == result.labels))
    print(
        f"mnist: {correct}/{count} held-out digits correct, accuracy {result.accuracy:.3f} ({backend} backend); "
        f"{same}/{count} logit vectors equal the numpy reference bit for bit; "
        f"{count / result.seconds:.1f} images/s"
    )
    if backend == "npu":
        from furiosa_opt import runtime

        cycles = makespan(runtime.load(forward))
        print(f"mnist: {cycles} simulated cycles per image (the makespan of forward's schedule)")
    return 0 if same == count else 1


if __name__ == "__main__":
    sys.exit(main())
