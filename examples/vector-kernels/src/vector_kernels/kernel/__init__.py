"""The vector-kernels kernels: one `@device` function per module."""
