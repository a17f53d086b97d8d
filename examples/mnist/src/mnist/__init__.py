"""MNIST example: upstream's `forward` kernel (784 → 256 ReLU → 10, bf16 in and out), its numpy reference,
the trainer that exports its weights, and the host program (`python -m mnist`)."""
