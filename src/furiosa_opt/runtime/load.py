"""Finding a kernel's binary: the runtime never compiles.

It finds the kernel's EDF in the output directory by identity and refuses it when missing or stale —
the same fast key `furiosa-opt compile` records — or when it comes from another compiler version.
"""

from __future__ import annotations

from pathlib import Path

from furiosa_opt import __version__
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.edf import Edf, EdfError, read_edf_file
from furiosa_opt.compiler.workspace import WorkspaceError, locate
from furiosa_opt.diagnostics import VerifyError


def load(kernel) -> Edf:
    """The kernel's up-to-date EDF, or a VerifyError saying why there is none and how to build it."""
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
