"""Train the 784 → 256 ReLU → 10 classifier and export it for `forward`: `python -m mnist.train [--out FILE]`.

Port of the training and export half of upstream `furiosa-opt-examples/src/mnist/mnist.py`, without torch and
without a download: the images are scikit-learn's bundled 8 × 8 digits (`load_digits`, 1797 images, values
0…16), each scaled to [0, 1], enlarged bilinearly to 20 × 20 and centred in a 28 × 28 frame as MNIST centres
its digits, then normalised with MNIST's mean and deviation (0.1307, 0.3081) as upstream's transform does.
A fixed permutation holds out `HELD_OUT` images; the rest train the model in float64 with Adam (upstream's
optimiser and learning rate) from a fixed seed, so a run reproduces the exported file byte for byte.

The file holds what upstream's test reads, under upstream's names, in bf16 (round to nearest even of the
f32 value, as torch's `.bfloat16()`):

| name | shape | dtype | what |
|---|---|---|---|
| `hw.fc1.weight` | [256, 800] | BF16 | fc1's weight, 784 inputs padded with zero columns to X = 800 |
| `fc1.bias` | [256] | BF16 | fc1's bias |
| `hw.fc2.weight` | [16, 256] | BF16 | fc2's weight, 10 classes padded with zero rows to C = 16 |
| `hw.fc2.bias` | [16] | BF16 | fc2's bias, padded with zeros |
| `hw.image_<i>` | [800] | BF16 | held-out image i, normalised, flattened row-major, zero-padded |
| `label_<i>` | [1] | I32 | its digit |

Upstream also exports the unpadded `fc1.weight`, `fc2.weight`, `fc2.bias` and `image_<i>` for its torch
model; `forward` reads none of them, and leaving them out keeps the checked-in file under 600 KB.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

SEED = 42
HELD_OUT = 100  # images kept out of training and exported as the test set
EPOCHS = 12
BATCH = 32
LEARNING_RATE = 1e-3  # upstream's Adam rate
MEAN, STD = 0.1307, 0.3081  # MNIST's, as upstream's transforms.Normalize
PIXELS, HIDDEN, CLASSES = 784, 256, 10
X_PADDED, C_PADDED = 800, 16
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "data" / "mnist.safetensors"


def _bilinear(source: int, target: int) -> np.ndarray:
    """[target, source] weights of a bilinear resize whose corner pixels keep their values."""
    position = np.linspace(0.0, source - 1.0, target)
    low = np.minimum(np.floor(position).astype(int), source - 2)
    frac = position - low
    weights = np.zeros((target, source))
    weights[np.arange(target), low] = 1.0 - frac
    weights[np.arange(target), low + 1] += frac
    return weights


def to_28x28(digits: np.ndarray) -> np.ndarray:
    """[N, 64] digits (0…16) → [N, 28, 28] float64: scaled to [0, 1], resized to 20 × 20 (bilinear, exact
    products summed in a fixed order by einsum's loop), centred with a 4-pixel border of zeros, normalised."""
    images = digits.reshape(-1, 8, 8) / 16.0
    r = _bilinear(8, 20)
    resized = np.einsum("ij,njk,lk->nil", r, images, r, optimize=False)
    framed = np.zeros((len(images), 28, 28))
    framed[:, 4:24, 4:24] = resized
    return (framed - MEAN) / STD


def dataset() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images [N, 784], train labels, held-out images [HELD_OUT, 784], held-out labels)."""
    from sklearn.datasets import load_digits

    digits, labels = load_digits(return_X_y=True)
    images = to_28x28(digits).reshape(-1, PIXELS)
    order = np.random.default_rng(SEED).permutation(len(images))
    test, train = order[:HELD_OUT], order[HELD_OUT:]
    return images[train], labels[train], images[test], labels[test]


def train(images: np.ndarray, labels: np.ndarray, epochs: int = EPOCHS) -> dict[str, np.ndarray]:
    """fc1 (Kaiming-uniform as torch's nn.Linear) → ReLU → fc2, softmax cross-entropy, Adam, in float64.

    BLAS runs on one thread: these small products gain nothing from more, and on a busy two-core machine
    OpenBLAS's spinning threads made a 3 s run take 40 s (the bytes are the same either way)."""
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    with threadpool_limits(limits=1, user_api="blas"):
        return _train(images, labels, epochs)


def _train(images: np.ndarray, labels: np.ndarray, epochs: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED + 1)
    bound1, bound2 = 1 / np.sqrt(PIXELS), 1 / np.sqrt(HIDDEN)
    params = {
        "w1": rng.uniform(-bound1, bound1, (HIDDEN, PIXELS)),
        "b1": rng.uniform(-bound1, bound1, HIDDEN),
        "w2": rng.uniform(-bound2, bound2, (CLASSES, HIDDEN)),
        "b2": rng.uniform(-bound2, bound2, CLASSES),
    }
    moment1 = {k: np.zeros_like(v) for k, v in params.items()}
    moment2 = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    onehot = np.eye(CLASSES)[labels]
    for _ in range(epochs):
        order = rng.permutation(len(images))
        for start in range(0, len(images), BATCH):
            batch = order[start : start + BATCH]
            x, y = images[batch], onehot[batch]
            pre = x @ params["w1"].T + params["b1"]
            h = np.maximum(pre, 0.0)
            logits = h @ params["w2"].T + params["b2"]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            d_logits = (p - y) / len(batch)
            d_h = (d_logits @ params["w2"]) * (pre > 0)
            grads = {"w2": d_logits.T @ h, "b2": d_logits.sum(axis=0), "w1": d_h.T @ x, "b1": d_h.sum(axis=0)}
            step += 1
            for k, g in grads.items():
                moment1[k] = beta1 * moment1[k] + (1 - beta1) * g
                moment2[k] = beta2 * moment2[k] + (1 - beta2) * g * g
                corrected1 = moment1[k] / (1 - beta1**step)
                corrected2 = moment2[k] / (1 - beta2**step)
                params[k] = params[k] - LEARNING_RATE * corrected1 / (np.sqrt(corrected2) + eps)
    return params


def float64_accuracy(params: dict[str, np.ndarray], images: np.ndarray, labels: np.ndarray) -> float:
    h = np.maximum(images @ params["w1"].T + params["b1"], 0.0)
    return float(np.mean(np.argmax(h @ params["w2"].T + params["b2"], axis=1) == labels))


def _bf16(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """float64 → f32 → bf16 (nearest even), zero-padded at the end of each axis to `shape`."""
    padded = np.zeros(shape, dtype=np.float32)
    padded[tuple(slice(0, n) for n in values.shape)] = values
    return padded.astype(ml_dtypes.bfloat16)


def tensors(params: dict[str, np.ndarray], images: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """The exported tensors, by upstream's names (see the module docstring)."""
    out = {
        "hw.fc1.weight": _bf16(params["w1"], (HIDDEN, X_PADDED)),
        "fc1.bias": _bf16(params["b1"], (HIDDEN,)),
        "hw.fc2.weight": _bf16(params["w2"], (C_PADDED, HIDDEN)),
        "hw.fc2.bias": _bf16(params["b2"], (C_PADDED,)),
    }
    for i, (image, label) in enumerate(zip(images, labels, strict=True)):
        out[f"hw.image_{i}"] = _bf16(image, (X_PADDED,))
        out[f"label_{i}"] = np.array([label], dtype=np.int32)
    return out


def export(out: Path = DEFAULT_OUT, epochs: int = EPOCHS) -> tuple[Path, float]:
    """Train, write the safetensors file to `out`; gives the path and the float64 held-out accuracy."""
    from safetensors.numpy import save

    train_x, train_y, test_x, test_y = dataset()
    params = train(train_x, train_y, epochs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(save(tensors(params, test_x, test_y)))
    return out, float64_accuracy(params, test_x, test_y)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnist.train", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"safetensors file to write ({DEFAULT_OUT})")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    options = parser.parse_args(argv)
    start = time.perf_counter()
    path, accuracy = export(options.out, options.epochs)
    seconds = time.perf_counter() - start
    print(
        f"trained 784 → 256 → 10 on {1797 - HELD_OUT} digits in {seconds:.1f} s; float64 accuracy on the "
        f"{HELD_OUT} held-out images {accuracy:.3f}; wrote {path} ({path.stat().st_size} bytes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
