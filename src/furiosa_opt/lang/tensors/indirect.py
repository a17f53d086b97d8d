"""The bodies of the indirect DMAs: `HbmTensor.dma_gather_scaled` / `_unscaled` read table rows an index
tensor names into a new DM tensor, `DmTensor.dma_scatter` / `_unscaled` write rows into an HBM tensor where
an index says. The methods (and their documentation) are on the tensors in `memory.py`; the rules are
`verify.indirect`'s. A bad index found while running is a fault that names the kernel.

`memory.py` cannot import this module (it imports `memory.py`): the package's `__init__` binds the two
bodies into it.
"""

from __future__ import annotations

import math

from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.lang.context import RUNNING
from furiosa_opt.lang.tensors.base import Tensor
from furiosa_opt.lang.tensors.memory import DmTensor, HbmTensor
from furiosa_opt.lang.tensors.views import HbmTensorViewMut
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.verify import indirect as verify_indirect


def _fault(what: str, error: Exception) -> VerifyError:
    """A run-time fault of the CPU backend (a bad index), naming the kernel that ran into it."""
    kernel = RUNNING.get()
    return VerifyError("dma-index", f"{f'`{kernel}`: ' if kernel else ''}{what}: {error}")


def _gathered(table: Tensor, index: Tensor, levels: tuple[Mapping, ...], scaled: bool, what: str) -> DmTensor:
    """The rows of `table` that `index` selects, in a new DM tensor of `levels` (cluster, slice, element)."""
    home = HbmTensor if scaled else DmTensor
    if not isinstance(index, home):
        raise VerifyError("indirect-index", f"{what} takes its index as a {home.__name__}, got {index!r}")
    verify_indirect.check_index(index.dtype, what)
    params = (table.params[0], *levels)
    axes = verify_indirect.gather(table.storage, index.storage, pair(*params))
    if not scaled:
        verify_indirect.check_spm_index(math.prod(n for _, n in axes.index), what)
    divisor = axes.row * table.dtype.bits // 8 if scaled else 1
    try:
        data = active().dma_gather(
            table.data, table.storage.factors, index.data, index.storage.factors, pair(*params).factors, axes, divisor
        )
    except IndexError as error:
        raise _fault(what, error) from None
    return DmTensor(table.dtype, params, data)


def _scattered(source: DmTensor, index: Tensor, output: object, key: Mapping, scaled: bool, what: str) -> None:
    """Write the rows of `source` named by `key` into `output` where `index` says."""
    home = HbmTensor if scaled else DmTensor
    if not isinstance(index, home):
        raise VerifyError("indirect-index", f"{what} takes its index as a {home.__name__}, got {index!r}")
    if not isinstance(output, HbmTensor) or output.dtype != source.dtype:
        raise VerifyError("indirect-output", f"{what} writes into an HbmTensor of {source.dtype}, got {output!r}")
    verify_indirect.check_index(index.dtype, what)
    spatial = pair(source.params[2], source.params[3])
    axes = verify_indirect.scatter(source.storage, spatial, key, index.storage, output.storage)
    if not scaled:
        verify_indirect.check_spm_index(math.prod(n for _, n in axes.index), what)
    divisor = axes.row * source.dtype.bits // 8 if scaled else 1
    try:
        data = active().dma_scatter(
            source.data,
            source.storage.factors,
            index.data,
            index.storage.factors,
            output.data,
            output.storage.factors,
            axes,
            divisor,
        )
    except IndexError as error:
        raise _fault(what, error) from None
    HbmTensorViewMut(output, output.params[1], 0).write(HbmTensor(output.dtype, output.params, data), what)
