"""The base-template kernels: one `@device` function per module."""
