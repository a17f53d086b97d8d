"""Tensors on physical buffers: host, HBM, DM, TRF and VRF tensors, their views and their moves.

A tensor is a dtype, one mapping per level of its memory (`HbmTensor[bf16, Chip, Element]` stores the
pair chain `[Chip, Element]` as one linear buffer in wire order) and the buffer. Every move between
tensors is a relayout by logical index: destination axes the source lacks are broadcast where the
route allows it, and every live source cell must be read.

| module | holds |
|---|---|
| `base.py` | `TensorType` (what `HbmTensor[bf16, ...]` names), the `Tensor` base, `moved` and `recorded` |
| `memory.py` | `HbmTensor`, `DmTensor`, the `reshape` they share with views, and `bind` (below) |
| `registers.py` | `TrfTensor`, `VrfTensor` |
| `dlpack.py` | DLPack capsules for bf16, which numpy neither exports nor imports (relabelled as uint16) |
| `host.py` | `HostTensor`: numpy and DLPack in and out, upstream's flat API, safetensors files, the upload to HBM |
| `window.py` | `TensorView`: tiles, `pad`/`unpad`, window reads and writes, the DMA moves out of a view |
| `views.py` | `HbmTensorView`, `HbmTensorViewMut`, `DmTensorView`, `DmTensorViewMut` and their shuffles |
| `indirect.py` | the bodies of `dma_gather_scaled`/`_unscaled` and `dma_scatter`/`_unscaled` |

Every name is re-exported here, so `from furiosa_opt.lang.tensors import HbmTensor` works whichever module
defines it; `furiosa_opt` and the API reference name the defining module.

Each module imports only modules above it in the table: `host`, `window`, `views` and `indirect` all
import `memory`, since every move they make lands in an HBM or DM tensor. The HBM and DM tensors also
make what those modules define (`HbmTensor.to_host` a `HostTensor`, `view()` and `view_mut()` views, and
the gathers and scatters run in `indirect`), and importing those modules from `memory` would close an
import circle. So `memory` declares these names, and this `__init__` binds them once every module is
loaded (`bind`, at the end); importing any module of the package runs this `__init__` first, so they are
bound before a tensor can exist. The views import the tensors rather than the reverse because their
moves name `HbmTensor` and `DmTensor` throughout, while a tensor names a view class only where it makes
one.
"""

from furiosa_opt.lang.tensors.base import Tensor, TensorType
from furiosa_opt.lang.tensors.host import HostTensor
from furiosa_opt.lang.tensors.indirect import _gathered, _scattered
from furiosa_opt.lang.tensors.memory import DmTensor, HbmTensor, bind
from furiosa_opt.lang.tensors.registers import TrfTensor, VrfTensor
from furiosa_opt.lang.tensors.views import DmTensorView, DmTensorViewMut, HbmTensorView, HbmTensorViewMut
from furiosa_opt.lang.tensors.window import TensorView
from furiosa_opt.lang.tensors.window import _expect_writable as _expect_writable  # lang/stream.py uses it

__all__ = [
    "DmTensor",
    "DmTensorView",
    "DmTensorViewMut",
    "HbmTensor",
    "HbmTensorView",
    "HbmTensorViewMut",
    "HostTensor",
    "Tensor",
    "TensorType",
    "TensorView",
    "TrfTensor",
    "VrfTensor",
]

bind(
    HostTensor=HostTensor,
    TensorView=TensorView,
    HbmTensorView=HbmTensorView,
    HbmTensorViewMut=HbmTensorViewMut,
    DmTensorView=DmTensorView,
    DmTensorViewMut=DmTensorViewMut,
    _gathered=_gathered,
    _scattered=_scattered,
)
