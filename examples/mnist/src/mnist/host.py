"""Host side of the MNIST example: load the exported model, classify held-out images with `forward`.

Port of upstream `furiosa-opt-examples/tests/mnist_tests.rs` (the weights and each image read with
`HostTensor::from_safetensors` under their upstream names, one `launch` per image, the class picked among the
first 10 logits) and of `render` in `src/mnist/mnist.py` (a digit beside its class probabilities).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy before safetensors reads BF16 tensors)
import numpy as np

from furiosa_opt import Context, HbmTensor, HostTensor, bf16, launch, m
from mnist import reference
from mnist.kernel import C, H, X, forward

WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "mnist.safetensors"  # examples/mnist/data
CLASSES = 10


@dataclass(frozen=True)
class Model:
    """The four parameter tensors in HBM, in `forward`'s argument order."""

    fc1_weight: HbmTensor
    fc1_bias: HbmTensor
    fc2_weight: HbmTensor
    fc2_bias: HbmTensor

    @classmethod
    def load(cls, ctx: Context, path: Path = WEIGHTS) -> Model:
        def tensor(name: str, mapping) -> HbmTensor:
            return HostTensor.from_safetensors(path, name, bf16, mapping).to_hbm(ctx.pdma)

        return cls(
            tensor("hw.fc1.weight", m[H, X]),
            tensor("fc1.bias", m[H]),
            tensor("hw.fc2.weight", m[C, H]),
            tensor("hw.fc2.bias", m[C]),
        )


@dataclass(frozen=True)
class Run:
    """Logits of `count` held-out images (bf16 codes [count, 16]), their labels, the classifying time."""

    logits: np.ndarray
    labels: np.ndarray
    seconds: float

    @property
    def predicted(self) -> np.ndarray:
        return reference.predict(self.logits, CLASSES)

    @property
    def accuracy(self) -> float:
        return float(np.mean(self.predicted == self.labels))


def image_count(path: Path = WEIGHTS) -> int:
    """How many held-out images (`hw.image_<i>`, i = 0, 1, …) the file holds."""
    from safetensors import safe_open

    with safe_open(path, framework="numpy") as file:
        names = set(file.keys())
    count = 0
    while f"hw.image_{count}" in names:
        count += 1
    return count


def read_codes(path: Path = WEIGHTS, count: int | None = None) -> dict[str, np.ndarray]:
    """The file as numpy arrays for the reference: bf16 tensors as raw `uint16` codes, `images` [count, 800]
    and `labels` [count]."""
    from safetensors import safe_open

    count = image_count(path) if count is None else count
    with safe_open(path, framework="numpy") as file:

        def codes(name: str) -> np.ndarray:
            return file.get_tensor(name).view(np.uint16)

        return {
            "w1": codes("hw.fc1.weight"),
            "b1": codes("fc1.bias"),
            "w2": codes("hw.fc2.weight"),
            "b2": codes("hw.fc2.bias"),
            "images": np.stack([codes(f"hw.image_{i}") for i in range(count)]) if count else np.zeros((0, X.size)),
            "labels": np.array([int(file.get_tensor(f"label_{i}")[0]) for i in range(count)], dtype=np.int64),
        }


def classify(ctx: Context, model: Model, image: HbmTensor, launch_=launch) -> np.ndarray:
    """`forward` on one image in HBM: its 16 logits as bf16 codes."""
    out = launch_(forward, ctx, image, model.fc1_weight, model.fc1_bias, model.fc2_weight, model.fc2_bias)
    return out.to_host(ctx.pdma).to_numpy().view(np.uint16)


def run(path: Path = WEIGHTS, count: int | None = None, launch_=launch) -> Run:
    """Classify the first `count` held-out images (all by default) on the backend `launch_` runs on; the
    time covers each image's upload, launch and read-back, not the weights' upload."""
    count = image_count(path) if count is None else count
    labels = read_codes(path, count)["labels"]
    with Context.acquire() as ctx:
        model = Model.load(ctx, path)
        images = [HostTensor.from_safetensors(path, f"hw.image_{i}", bf16, m[X]) for i in range(count)]
        start = time.perf_counter()
        logits = [classify(ctx, model, image.to_hbm(ctx.pdma), launch_) for image in images]
        seconds = time.perf_counter() - start
    return Run(np.stack(logits) if logits else np.zeros((0, C.size), np.uint16), labels, seconds)


def makespan(edf) -> int:
    """Simulated cycles of one `forward` launch: the makespan of its EDF's schedule on the simulator."""
    from furiosa_opt.sim.timing import simulate

    return simulate(edf).makespan


def render(index: int, image_codes: np.ndarray, logits: np.ndarray, label: int) -> str:
    """The digit in block characters beside a bar per class (softmax of the 10 logits), as upstream's
    `render`."""
    values = reference.widen(logits)[:CLASSES].astype(np.float64)
    probs = np.exp(values - values.max())
    probs /= probs.sum()
    pred = int(reference.predict(logits, CLASSES))
    pixels = reference.widen(image_codes)[: 28 * 28].reshape(28, 28).astype(np.float64)
    pixels = (pixels - pixels.min()) / max(float(pixels.max() - pixels.min()), 1e-6)
    ink = pixels > 0.25
    blocks = {(False, False): "  ", (True, False): "▀▀", (False, True): "▄▄", (True, True): "██"}
    digit = ["".join(blocks[ink[r, c], ink[r + 1, c]] for c in range(28)) for r in range(0, 28, 2)]
    bars = []
    for d in range(CLASSES):
        fill = round(float(probs[d]) * 20)
        mark = " ← pred" if d == pred else " (label)" if d == label else ""
        bars.append(f"{d}  {'█' * fill}{'·' * (20 - fill)} {probs[d]:5.1%}{mark}")
    lines = [f"[{index}] label={label} pred={pred} {'✓' if pred == label else '✗'}"]
    rows = zip(digit, bars + [""] * (len(digit) - len(bars)), strict=True)
    lines += [f"  {row:<56}  {bar}".rstrip() for row, bar in rows]
    return "\n".join(lines)
