"""The NPU backend of `launch` (`FURIOSA_OPT_BACKEND=npu`): kernels run from their compiled EDF on the
TCP simulator, with device memory that persists across launches.

Lifetime rules: an `HbmTensor` made on the host under this backend (`HostTensor.to_hbm`, `HbmTensor.new`,
or a kernel's result) owns an allocation of the simulated device's HBM until the last tensor or view
sharing it is dropped. `launch` binds arguments in place; reading a tensor on the host (`to_host`) copies
its bytes at that moment. `load` finds and checks the binary; `execute` runs one.
"""

from __future__ import annotations

from furiosa_opt.runtime.launch import execute
from furiosa_opt.runtime.load import load
from furiosa_opt.runtime.memory import DEVICE, DeviceBuf, upload


def run(kernel, leaves: list) -> list:
    """The results of `kernel` run from its up-to-date EDF, its argument leaves bound in place."""
    return execute(kernel.identity, load(kernel), leaves, kernel.returns or ())


__all__ = ["DEVICE", "DeviceBuf", "execute", "load", "run", "upload"]
