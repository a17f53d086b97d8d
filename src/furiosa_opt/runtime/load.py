"""The NPU backend of `launch` (`FURIOSA_OPT_BACKEND=npu`): run the kernel's compiled binary.

The runtime never compiles (shared/DESIGN.md §2.3): it finds the kernel's EDF in the output directory by
identity, refuses it when missing or stale — the same fast key `furiosa-opt compile` records — checks the
arguments against the EDF's argument table, and runs it on the TCP simulator. Results come back as HBM
tensors in the host process, like every other HBM tensor of this build.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from furiosa_opt import __version__, sim
from furiosa_opt.backend import cpu
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.edf import Edf, EdfError, read_edf_file
from furiosa_opt.diagnostics import VerifyError

_ANNOUNCED: list[bool] = []


def run(kernel, arguments: list) -> list:
    """The result tensors of `kernel` run from its EDF on the simulator."""
    edf = load(kernel)
    _check_arguments(kernel, edf, arguments)
    if not _ANNOUNCED:
        print("furiosa-opt: kernels run from their EDF on the TCP simulator (FURIOSA_OPT_DEVICE=sim)", file=sys.stderr)
        _ANNOUNCED.append(True)
    outputs = sim.run(edf, [argument.data.values().tobytes() for argument in arguments])
    types = kernel.returns or ()
    return [
        t.cls(t.dtype, t.params, cpu.fresh(np.frombuffer(data, dtype=t.dtype.storage).copy()))
        for t, data in zip(types, outputs, strict=True)
    ]


def load(kernel) -> Edf:
    """The kernel's up-to-date EDF, or a VerifyError saying why there is none and how to build it."""
    from furiosa_opt.compiler.workspace import WorkspaceError, locate

    identity = kernel.identity
    file = Path(kernel.fn.__code__.co_filename).resolve()
    build = f"compile it with `furiosa-opt compile {identity}` (or run the command under `furiosa-opt`)"
    try:
        workspace = locate(file.parent)
    except WorkspaceError:
        raise VerifyError("npu-no-package", f"`{identity}` is not in a kernel package, so it has no EDF") from None
    package = next((p for p in workspace.packages if file.is_relative_to(p.source.resolve())), None)
    if package is None:
        raise VerifyError("npu-no-package", f"`{identity}` is not in a member of the workspace {workspace.root}")
    source = next((k for k in cache.find_kernels(kernel.fn.__module__, file) if k.identity == identity), None)
    if source is None:
        raise VerifyError("npu-not-compiled", f"`{identity}` is not a module-level @device function; {build}")
    out = cache.out_dir(workspace.root)
    changes = cache.changes(source, package.root, package.source, out)
    if changes:
        raise VerifyError("npu-not-compiled", f"`{identity}` has no up-to-date EDF ({changes[0]}); {build}")
    edf_path = cache.paths(out, identity)[0]
    try:
        edf = read_edf_file(edf_path)
    except EdfError as error:
        raise VerifyError("npu-bad-edf", f"`{identity}`: {error}; {build}") from None
    if edf.compiler_version != __version__ or edf.identity != identity:
        raise VerifyError(
            "npu-bad-edf",
            f"`{identity}`: {edf_path} holds `{edf.identity}` from furiosa-opt {edf.compiler_version} "
            f"(this is {__version__}); {build}",
        )
    return edf


def _check_arguments(kernel, edf: Edf, arguments: list) -> None:
    if len(arguments) != len(edf.arguments):
        raise VerifyError(
            "npu-arguments", f"`{kernel.identity}`: its EDF takes {len(edf.arguments)} tensors, got {len(arguments)}"
        )
    for i, (argument, expected) in enumerate(zip(arguments, edf.arguments, strict=True)):
        levels = tuple(str(level) for level in argument.params)
        nbytes = argument.data.values().nbytes
        if argument.dtype.name != expected.dtype or levels != expected.levels or nbytes != expected.bytes:
            raise VerifyError(
                "npu-arguments",
                f"`{kernel.identity}`: argument {i} is {argument.dtype}{list(levels)} ({nbytes} bytes), its EDF "
                f"expects {expected.dtype}{list(expected.levels)} ({expected.bytes} bytes); recompile the kernel",
            )
