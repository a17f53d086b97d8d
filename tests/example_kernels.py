"""The five base-template kernels by short name, for tests that run over all of them."""

from base_template.kernel import (
    constant_add_kernel,
    dot_product_kernel,
    elementwise_mul_kernel,
    gemm_kernel,
    gemv_kernel,
)

KERNELS = {
    "constant_add": constant_add_kernel.constant_add_kernel,
    "elementwise_mul": elementwise_mul_kernel.elementwise_mul_kernel,
    "dot_product": dot_product_kernel.dot_product_kernel,
    "gemv": gemv_kernel.gemv_kernel,
    "gemm": gemm_kernel.gemm_kernel,
}
