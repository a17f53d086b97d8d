"""The NPU backend of `launch` (`FURIOSA_OPT_BACKEND=npu`): kernels run from their compiled EDF on the
TCP simulator, with device memory that persists across launches.

Lifetime rules: an `HbmTensor` made on the host under this backend (`HostTensor.to_hbm`, `HbmTensor.new`,
or a kernel's result) owns an allocation of the simulated device's HBM until the last tensor or view
sharing it is dropped. `launch` binds arguments in place; reading a tensor on the host (`to_host`) copies
its bytes at that moment. `load` finds and checks the binary; `execute` runs one.
"""

from __future__ import annotations

import sys
from functools import cache

from furiosa_opt.backend import register_device
from furiosa_opt.compiler.edf import Edf, read_edf
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.runtime.launch import execute
from furiosa_opt.runtime.load import load
from furiosa_opt.runtime.memory import DEVICE, DeviceBuf, upload


def run(kernel, leaves: list) -> list:
    """The results of `kernel` run from its up-to-date EDF, its argument leaves bound in place."""
    return execute(kernel.identity, load(kernel), leaves, kernel.returns or ())


@cache
def compiled_here(kernel) -> Edf:
    """The kernel's EDF compiled in this process, once: for kernels outside a kernel package (tests,
    benchmarks, notebooks), which have no output directory to load a binary from."""
    from furiosa_opt.compiler.driver import compile_kernel

    result = compile_kernel(kernel)
    if not result.ok:
        reasons = "; ".join(f"{d.stage}:{d.code}: {d.message}" for d in result.errors)
        raise VerifyError("npu-not-compiled", f"`{kernel.identity}` does not compile: {reasons}")
    return read_edf(result.edf)


def launch_here(kernel, ctx, *args):
    """`launch` on the NPU backend with the binary from `compiled_here`; set FURIOSA_OPT_BACKEND=npu
    first so that the HBM tensors involved live in device memory.

        with Context.acquire() as ctx:
            out = runtime.launch_here(copy_kernel, ctx, x)
    """
    from furiosa_opt.lang.device import returned

    leaves = [value for _, _, value in kernel.bind(args)]
    return returned(kernel, execute(kernel.identity, compiled_here(kernel), leaves, kernel.returns or ()))


register_device("npu", sys.modules[__name__])  # launch and HBM tensors reach this module through the backend

__all__ = ["DEVICE", "DeviceBuf", "compiled_here", "execute", "launch_here", "load", "run", "upload"]
