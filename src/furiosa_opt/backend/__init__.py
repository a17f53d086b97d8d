"""Backends: `cpu` executes kernels on numpy buffers; the tracer and the NPU runtime come later."""
