"""`TensorView`, a window on an HBM or DM tensor: what every view does, whichever tier it is on.

A view keeps its base tensor, its own level mappings (of the base's sizes) and a window offset: view
position p reads or writes base position `window + p`. Tiles narrow a level's live cells, `pad`/`unpad`
and `reshape` re-declare them, and the DMA moves (`to_dm`, `to_hbm`, `to_dm_view`, `to_hbm_view`) read the
view's cells into a new tensor or another view. The per-tier classes (`HbmTensorView`, `DmTensorViewMut`, …)
are in `views.py`. `memory.py`'s `reshape` tells views from tensors by this class, which the package's
`__init__` binds there (`memory.py` cannot import this module).
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar

import numpy as np

from furiosa_opt.arch import RNGD
from furiosa_opt.backend import active, cpu
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import DmaContext, expect_context
from furiosa_opt.lang.tensors.base import Tensor, TensorType, _annotation, moved, recorded
from furiosa_opt.lang.tensors.memory import DmTensor, HbmTensor, _reshaped
from furiosa_opt.mapping import Mapping, MappingError, PadKind
from furiosa_opt.mapping.algebra import check_pad, pair, tile_view
from furiosa_opt.scalar import Scalar
from furiosa_opt.verify import memory as verify_memory


@functools.lru_cache(maxsize=4096)
def _start(mapping: Mapping, index: Mapping, value: int) -> int | None:
    """The position of `mapping` holding the cell that position `value` of the digit `index` names, or
    None when that is padding. Cached: a host loop tiles the same mappings at every start (a row per
    token), and each answer costs a mapping evaluation."""
    from furiosa_opt.mapping.relayout import position_of

    cell = index.cell(value)
    if cell.kind != "index":
        return None
    coords = {name: np.array([coordinate]) for name, coordinate in cell.index.items()}
    return int(position_of(mapping.factors, coords, (1,))[0])


class TensorView:
    """A window on an HBM or DM tensor: the view's levels have the base's sizes, and view position p (over
    all levels, wire order) reads or writes base position `window + p`. `tile` narrows the element's live
    cells (`chip_tile`, `cluster_tile`, `slice_tile` the outer levels'); `pad`/`unpad` re-declare them."""

    writable: ClassVar[bool] = False
    levels: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, base: HbmTensor | DmTensor, element: Mapping, window: int, outer: tuple[Mapping, ...] | None = None
    ):
        self.base, self.element, self.window = base, element, window
        self.outer = tuple(outer) if outer is not None else base.params[:-1]  # the spatial levels

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    @property
    def params(self) -> tuple[Mapping, ...]:
        """The view's type parameters: its spatial levels, then its element."""
        return (*self.outer, self.element)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(element=m["{self.element}"], window={self.window}, base={self.base!r})'

    @property
    def dtype(self) -> DType:
        return self.base.dtype

    @property
    def _blocks(self) -> tuple[int, int, Mapping]:
        """(blocks, positions per block, the view's mapping of a block) for the backend's window ops: the
        base's element blocks while only the element is tiled, else the whole buffer as one block."""
        if self.outer == self.base.params[:-1] and self.window < self.base.params[-1].size:
            return math.prod(p.size for p in self.outer), self.base.params[-1].size, self.element
        return 1, self.base.storage.size, pair(*self.params)

    def _tiled(self, level: int, start: int, index: Mapping, length: int, expected: Mapping | None, what: str):
        """The view with level `level`'s mapping tiled: `length` positions of the digit `index` from
        position `start` of it (`expected`, if given, is checked against the resulting mapping)."""
        hole = PadKind.BOTTOM if self.writable else PadKind.TOP
        current = self.params[level]
        try:
            view = tile_view(current, index, length, hole)
        except MappingError as error:
            raise VerifyError("tile-split", f"{what}: {error}") from None
        if expected is not None and expected != view:
            raise VerifyError(
                "tile-view",
                f"{what}: the split produces `{view.canonical()}`, but the requested view type is `{expected}`",
            )
        inner = math.prod(p.size for p in self.params[level + 1 :])  # positions one step of this level spans
        shifts = []
        for value in start.values() if isinstance(start, Scalar) else [start]:  # a runtime start: each value
            # a plain int only: an `Offset` (lang/recorder.py) must meet every comparison, each a replay guard
            find = _start if type(value) is int else _start.__wrapped__
            position = find(current, index, value)
            if position is None:
                kind = "Bottom" if self.writable else "Top"
                raise VerifyError("tile-start", f"{what} start {value} maps to {kind} padding of `{index}`")
            shifts.append(position * inner)
        shift = shifts[0]  # tracing moves no data: a runtime start's view is typed at its first value
        params = list(self.params)
        params[level] = expected if expected is not None else view
        return type(self)(self.base, params[-1], self.window + shift, params[:-1])

    @user_facing
    def tile(self, start: int, index: Mapping, length: int, element: Mapping | None = None) -> TensorView:
        """Keep `length` positions of the element digit `index`, from position `start` of it; `element`,
        if given, is checked against the resulting view type.

            row = table.view().tile(3, m["C"], 1, m["1 # 64, H"])   # row 3 of a [C, H] element
        """
        result = self._tiled(len(self.params) - 1, start, index, length, element, "tile")
        return recorded("tile", (self,), result, start=start, index=index, length=length, element=result.element)

    @user_facing
    def chip_tile(self, start: int, index: Mapping, length: int, chip: Mapping | None = None) -> TensorView:
        """`tile` on the chip level: keep `length` positions of the chip digit `index` from `start`.

        one = x.view().chip_tile(2, m["A / 4 % 4"], 1, m["1 # 4"])   # the part of x on chip 2
        """
        result = self._tiled(0, start, index, length, chip, "chip_tile")
        return recorded("chip_tile", (self,), result, start=start, index=index, length=length, chip=result.outer[0])

    @user_facing
    def reshape(self, *levels: Mapping) -> TensorView:
        """Upstream's (unsafe) view `reshape`: the same cells relabelled by new mappings of the same
        sizes, one per level; like a tensor's `reshape`, it must keep the wire order (a regrouping, not a
        permutation), which is not checked.

            cache.view_mut().reshape(m["1"], m["L, H / 64, H % 64"])   # [L, H] as [L, heads, head_dim]
        """
        return _reshaped(self, levels)

    @user_facing
    def pad(self, element: Mapping) -> TensorView:
        """The view with padding added to its element mapping, live cells in place: `v.pad(m["A # 16"])`."""
        try:
            check_pad(self.element, element)
        except MappingError as error:
            raise VerifyError("pad-view", str(error)) from None
        return recorded("pad", (self,), type(self)(self.base, element, self.window, self.outer), element=element)

    @user_facing
    def unpad(self, element: Mapping) -> TensorView:
        """The view with padding removed from its element mapping, the inverse of `pad`: `v.unpad(m["A"])`."""
        try:
            check_pad(element, self.element)
        except MappingError as error:
            raise VerifyError("unpad-view", str(error)) from None
        return recorded("unpad", (self,), type(self)(self.base, element, self.window, self.outer), element=element)

    def read(self) -> Tensor:
        """The cells this view sees, as a tensor of the base's kind with the view's levels."""
        if self.window == 0 and self.params == self.base.params:  # the whole tensor: nothing to cut
            return type(self.base)(self.dtype, self.base.params, self.base.data)
        blocks, block, mapping = self._blocks
        try:
            data = active().window_read(self.base.data, blocks, block, self.window, mapping.factors)
        except IndexError as error:
            raise VerifyError("view-bounds", f"the view `{mapping}` at window {self.window}: {error}") from None
        return type(self.base)(self.dtype, self.params, data)

    def write(self, source: Tensor, what: str) -> None:
        """Store `source` (laid out as the view's levels) into the live cells of the view: in place when
        the base tensor alone holds its host buffer (`cpu.exclusive`), else into a copy, so that a tensor
        sharing the buffer never sees the write."""
        blocks, block, mapping = self._blocks
        backend = active()
        data, self.base.data = self.base.data, None  # taken out, so that only `data` holds it here
        try:
            if getattr(backend, "writes_in_place", False) and cpu.exclusive(data):
                written = backend.window_write(data, blocks, block, self.window, mapping.factors, source.data, True)
            else:
                written = backend.window_write(data, blocks, block, self.window, mapping.factors, source.data)
        except IndexError as error:
            raise VerifyError("view-bounds", f"{what}: the view `{mapping}`: {error}") from None
        finally:
            self.base.data = data  # until the write is done (or if it failed)
        self.base.data = written

    # ---- moves out of a view (reads) ----

    @user_facing
    def to_dm(self, tdma: DmaContext, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """HBM → DM (or DM → DM with unchanged chip/cluster/slice sizes), checked for DMA alignment."""
        expect_context(tdma, ("tdma",), f"{type(self.base).__name__}.to_dm")
        source = self.read()
        what = f"{type(self.base).__name__}.to_dm"
        if isinstance(self.base, DmTensor):
            verify_memory.check_sizes_preserved(self.outer[1:], (cluster, slice), what)
        params = (self.outer[0], cluster, slice, element)
        verify_memory.check_dma_layout(
            source.storage, pair(*params), source.params[-1], element, self.dtype, RNGD.dma_sram_write_align, what
        )
        result = moved(source, DmTensor, params, True, what)
        return recorded("to_dm", (self,), result, ctx=tdma, cluster=cluster, slice=slice, element=element)

    @user_facing
    def to_hbm(self, dma: DmaContext, element: Mapping | None = None) -> HbmTensor:
        """The cells of the view into a new HBM tensor laid out by `element` (default: the view's)."""
        allowed = ("tdma",) if isinstance(self.base, DmTensor) else ("tdma", "pdma")
        what = f"{type(self.base).__name__}.to_hbm"
        expect_context(dma, allowed, what)
        target = element if element is not None else self.element
        result = moved(self.read(), HbmTensor, (self.outer[0], target), True, what)
        return recorded("to_hbm", (self,), result, ctx=dma, element=target)

    @user_facing
    def to_dm_view(self, tdma: DmaContext, destination: TensorView) -> None:
        """Write the view's cells into a DM write view (`dm.view_mut()`, tiled or not) with the tensor DMA."""
        expect_context(tdma, ("tdma",), "to_dm_view")
        _expect_writable(destination, DmTensor, "to_dm_view")
        source = self.read()
        params = (*destination.outer, destination.element)
        verify_memory.check_dma_layout(
            source.storage,
            pair(*params),
            source.params[-1],
            destination.element,
            self.dtype,
            RNGD.dma_sram_write_align,
            "to_dm_view",
        )
        destination.write(moved(source, DmTensor, params, True, "to_dm_view"), "to_dm_view")
        recorded("to_dm_view", (self, destination), None, ctx=tdma)

    @user_facing
    def to_hbm_view(self, dma: DmaContext, destination: TensorView) -> None:
        """Write the view's cells into an HBM write view, e.g. a kernel's `HbmTensorViewMut` out-parameter:
        `dm.view().to_hbm_view(ctx.tdma, out)`.
        """
        expect_context(dma, ("tdma", "pdma"), "to_hbm_view")
        _expect_writable(destination, HbmTensor, "to_hbm_view")
        source = self.read()
        target = moved(source, HbmTensor, (*destination.outer, destination.element), True, "to_hbm_view")
        destination.write(target, "to_hbm_view")
        recorded("to_hbm_view", (self, destination), None, ctx=dma)


def _expect_writable(view: object, kind: type[Tensor], what: str) -> None:
    if not isinstance(view, TensorView) or not view.writable or not isinstance(view.base, kind):
        raise VerifyError("view-mut", f"{what} writes into a `{kind.__name__}.view_mut()`, got {view!r}")
