"""Tensors on physical buffers: host, HBM, DM, TRF and VRF tensors, their views and their moves.

A tensor is a dtype, one mapping per level of its memory (`HbmTensor[bf16, Chip, Element]` stores the
pair chain `[Chip, Element]` as one linear buffer in wire order) and the buffer. Every move between
tensors is a relayout by logical index: destination axes the source lacks are broadcast where the
route allows it, and every live source cell must be read.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.backend import active, cpu, selected_device
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import DmaContext, expect_context
from furiosa_opt.mapping import Mapping, MappingError, PadKind, m, views
from furiosa_opt.mapping.algebra import check_pad, pair, tile_view
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.factors import Comp, SymAtom
from furiosa_opt.verify import memory as verify_memory


class TensorType:
    """What an annotation such as `HbmTensor[bf16, Chip, m["I, K"]]` names."""

    def __init__(self, cls: type[Tensor], dtype: DType, params: tuple[Mapping, ...]):
        self.cls, self.dtype, self.params = cls, dtype, params

    def __repr__(self) -> str:
        inner = ", ".join([self.dtype.name, *(f'm["{p}"]' for p in self.params)])
        return f"{self.cls.__name__}[{inner}]"

    def mismatch(self, value: object) -> str | None:
        """Why `value` is not of this type, or None."""
        if not isinstance(value, self.cls):
            return f"expected {self!r}, got {type(value).__name__}"
        if value.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got {value.dtype}"
        for level, want, got in zip(self.cls.levels, self.params, value.params, strict=True):
            if want != got:
                return f"{level} mapping: expected `{want}`, got `{got}`"
        return None


def _annotation(cls: type, item: object) -> TensorType:
    """The type `cls[dtype, level mappings…]` names, checked for shape (tensors and views alike)."""
    item = item if isinstance(item, tuple) else (item,)
    if len(item) != len(cls.levels) + 1 or not isinstance(item[0], DType):
        levels = ", ".join(["dtype", *(level.capitalize() for level in cls.levels)])
        raise TypeError(f"{cls.__name__}[...] takes {levels}")
    if not all(isinstance(p, Mapping) for p in item[1:]):
        raise TypeError(f'{cls.__name__}[...] takes mappings after the dtype, e.g. m["A"]')
    return TensorType(cls, item[0], tuple(item[1:]))


class Tensor:
    """Base of the memory tensors: dtype, one mapping per level, and the buffer (wire order)."""

    levels: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = ""

    def __init__(self, dtype: DType, params: tuple[Mapping, ...], data: object):
        self.dtype, self.params, self.data = dtype, tuple(params), data
        self._validate()

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    def _validate(self) -> None:
        if not self.dtype.materializable:
            raise VerifyError(
                "not-materializable", f"{self.dtype} is a stream-only staging type: no {type(self).__name__}"
            )

    def __getattr__(self, name: str) -> Mapping:
        levels = type(self).levels
        if name in levels:
            return self.params[levels.index(name)]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def storage(self) -> Mapping:
        """The whole buffer's mapping: the levels paired, outermost first."""
        return pair(*self.params)

    @property
    def type(self) -> TensorType:
        return TensorType(type(self), self.dtype, self.params)

    def __repr__(self) -> str:
        return repr(self.type)

    def values(self) -> np.ndarray:
        """The physical buffer in wire order (storage dtype, padding zero)."""
        return self.data.values()


def moved(tensor: Tensor, cls: type[Tensor], params: tuple[Mapping, ...], broadcast: bool, what: str) -> Tensor:
    """`tensor` re-laid out as a `cls` tensor with `params`, by logical index."""
    target = pair(*params)
    try:
        data = active().relayout(tensor.data, tensor.storage.factors, target.factors, broadcast)
    except MappingError as error:
        raise VerifyError("relayout", f"{what}: {error}") from None
    return cls(tensor.dtype, params, data)


def recorded(name: str, operands: tuple, result, **attrs):
    """Note a memory operation with the backend (the tracer makes it a vISA op); returns `result`."""
    active().record(name, operands, () if result is None else (result,), **attrs)
    return result


# ---- host ------------------------------------------------------------------------------------------


def _axis_order(mapping: Mapping) -> list[tuple[str, int]]:
    """Axes in order of first appearance in the (canonical) mapping, with their sizes."""
    found: dict[str, int] = {}

    def walk(factors) -> None:
        for f in factors:
            if isinstance(f.atom, SymAtom) and f.m > 1:
                found.setdefault(f.atom.name, f.atom.n)
            elif isinstance(f.atom, Comp):
                walk(f.atom.k)

    walk(mapping.factors)
    return list(found.items())


def _placed(logical: np.ndarray, order: list[tuple[str, int]], mapping: Mapping, dtype: DType) -> np.ndarray:
    """The buffer of `mapping` holding `logical`, found cell by cell (for mappings views cannot express)."""
    layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
    buffer = np.zeros(mapping.size, dtype=dtype.storage)
    live = layout.live
    if order:
        buffer[live] = logical[tuple(layout.coords[a][live] for a, _ in order)]
    else:
        buffer[live] = logical.reshape(())
    return buffer


class HostTensor(Tensor):
    """A tensor in host memory, laid out by one mapping (`HostTensor[bf16, m["I, K"]]`)."""

    levels = ("element",)
    kind = "host"

    @classmethod
    @user_facing
    def from_numpy(cls, array: Any, dtype: DType, mapping: Mapping) -> HostTensor:
        """`array` has one dimension per axis, in the order the axes first appear in `mapping`."""
        array = np.asarray(array)
        order = _axis_order(mapping)
        shape = tuple(n for _, n in order)
        if array.shape != shape:
            names = ", ".join(f"{a}={n}" for a, n in order)
            raise VerifyError(
                "host-shape",
                f"from_numpy: expected shape {shape} ({names}) for `{mapping}`, got {array.shape}",
            )
        try:
            logical = dtypes.from_user(array, dtype, copy=False)  # the one copy comes below
        except dtypes.DTypeError as error:
            raise VerifyError("host-values", f"from_numpy: {error}") from None
        try:  # a view of the array in the mapping's digits, one copy
            moved = cpu.relayout(cpu.Buf(logical.reshape(-1)), views.dense(order), mapping.factors, True, True)
            values = moved.values()
            # one copy in all: the tensor never shares the caller's array
            data = cpu.fresh(values.copy() if np.may_share_memory(values, array) else values)
        except MappingError:  # a mapping cutting an axis where views cannot: cell by cell
            data = cpu.fresh(_placed(logical, order, mapping, dtype))
        return cls(dtype, (mapping,), data)

    @classmethod
    @user_facing
    def rand(cls, dtype: DType, mapping: Mapping, rng: np.random.Generator) -> HostTensor:
        """Random values at the live cells (upstream's distributions), zero padding."""
        buffer = np.zeros(mapping.size, dtype=dtype.storage)
        live = views.live_cells(mapping.factors)
        if live is None:  # composite atoms: find the live cells one by one
            cells = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64)).live
            buffer[cells] = dtypes.rand(dtype, int(cells.sum()), rng)
        else:  # the live cells in wire order are the per-factor prefixes in C order
            shape = tuple(s.stop for s in live.take)
            buffer.reshape(live.shape)[live.take] = dtypes.rand(dtype, live.count, rng).reshape(shape)
        return cls(dtype, (mapping,), cpu.fresh(buffer))

    @classmethod
    @user_facing
    def zeros(cls, dtype: DType, mapping: Mapping) -> HostTensor:
        return cls(dtype, (mapping,), cpu.zeros(dtype.storage, mapping.size))

    @user_facing
    def to_numpy(self) -> np.ndarray:
        """One dimension per axis, in the order the axes first appear in the mapping."""
        mapping = self.params[0]
        order = _axis_order(mapping)
        shape = tuple(n for _, n in order)
        try:  # the buffer's digits viewed as the array's dimensions, one copy
            moved = cpu.relayout(self.data, mapping.factors, views.dense(order), False, True)
            values = moved.values()
            return (values.copy() if moved is self.data else values).reshape(shape)  # never the tensor's own
        except MappingError:  # a mapping covering part of an axis, or cutting it where views cannot
            out = np.zeros(shape, dtype=self.dtype.storage)
            layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
            live = layout.live
            values = self.values()[live]
            if order:
                out[tuple(layout.coords[a][live] for a, _ in order)] = values
            elif len(values):
                out[()] = values[0]
            return out

    @user_facing
    def to_hbm(self, pdma: DmaContext, chip: Mapping | None = None, element: Mapping | None = None) -> HbmTensor:
        """Upload over PCIe; keeps the host mapping on `chip = m["1"]` unless told otherwise."""
        expect_context(pdma, ("pdma",), "HostTensor.to_hbm")
        params = (chip if chip is not None else m["1"], element if element is not None else self.params[0])
        return recorded("host_to_hbm", (self,), moved(self, HbmTensor, params, True, "HostTensor.to_hbm"))


# ---- HBM and DM -------------------------------------------------------------------------------------


class HbmTensor(Tensor):
    """A tensor in HBM: `HbmTensor[bf16, Chip, Element]`."""

    levels = ("chip", "element")
    kind = "hbm"

    def _validate(self) -> None:
        super()._validate()
        home = selected_device() if isinstance(self.data, cpu.Buf) else None
        if home is not None:  # under a device backend, HBM tensors live in its memory from the moment they are made
            self.data = home.upload(self.data.values())

    @classmethod
    @user_facing
    def new(cls, dtype: DType, chip: Mapping, element: Mapping) -> HbmTensor:
        tensor = cls(dtype, (chip, element), active().zeros(dtype.storage, chip.size * element.size))
        return recorded("hbm_new", (), tensor, dtype=dtype, chip=chip, element=element)

    @user_facing
    def to_host(self, pdma: DmaContext, element: Mapping | None = None) -> HostTensor:
        expect_context(pdma, ("pdma",), "HbmTensor.to_host")
        target = element if element is not None else self.params[1]
        return recorded("hbm_to_host", (self,), moved(self, HostTensor, (target,), True, "HbmTensor.to_host"))

    @user_facing
    def to_hbm(self, dma: DmaContext, element: Mapping) -> HbmTensor:
        expect_context(dma, ("tdma", "pdma"), "HbmTensor.to_hbm")
        result = moved(self, HbmTensor, (self.params[0], element), True, "HbmTensor.to_hbm")
        return recorded("hbm_to_hbm", (self,), result, ctx=dma, element=element)

    @user_facing
    def to_dm(self, tdma: DmaContext, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        return self.view().to_dm(tdma, cluster, slice, element)

    def view(self) -> HbmTensorView:
        return recorded("view", (self,), HbmTensorView(self, self.params[1], 0))

    def view_mut(self) -> HbmTensorViewMut:
        return recorded("view_mut", (self,), HbmTensorViewMut(self, self.params[1], 0))

    @user_facing
    def reshape(self, chip: Mapping, element: Mapping) -> HbmTensor:
        return _reshaped(self, (chip, element))


class DmTensor(Tensor):
    """A tensor in the data memory of the slices: `DmTensor[bf16, Chip, Cluster, Slice, Element]`."""

    levels = ("chip", "cluster", "slice", "element")
    kind = "dm"

    def _validate(self) -> None:
        super()._validate()
        _, cluster, slice_, element = self.params
        verify_memory.check_spatial(cluster, slice_, "DmTensor")
        verify_memory.check_capacity(
            "dm-capacity", "DM", self.dtype, element.size, RNGD.dm_bytes_per_slice, "per slice"
        )

    @classmethod
    @user_facing
    def new(cls, dtype: DType, chip: Mapping, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        count = chip.size * cluster.size * slice.size * element.size
        tensor = cls(dtype, (chip, cluster, slice, element), active().zeros(dtype.storage, count))
        return recorded("dm_new", (), tensor, dtype=dtype, chip=chip, cluster=cluster, slice=slice, element=element)

    def view(self) -> DmTensorView:
        return recorded("view", (self,), DmTensorView(self, self.params[3], 0))

    def view_mut(self) -> DmTensorViewMut:
        return recorded("view_mut", (self,), DmTensorViewMut(self, self.params[3], 0))

    @user_facing
    def to_hbm(self, tdma: DmaContext, element: Mapping | None = None) -> HbmTensor:
        return self.view().to_hbm(tdma, element)

    @user_facing
    def to_dm(self, tdma: DmaContext, slice: Mapping, element: Mapping) -> DmTensor:
        return self.view().to_dm(tdma, self.params[1], slice, element)

    @user_facing
    def reshape(self, chip: Mapping, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        return _reshaped(self, (chip, cluster, slice, element))


def _reshaped(tensor: Tensor, params: tuple[Mapping, ...]) -> Tensor:
    """Relabel the unchanged buffer: every level keeps its size (the caller keeps wire order)."""
    for level, old, new in zip(type(tensor).levels, tensor.params, params, strict=True):
        if old.size != new.size:
            raise VerifyError(
                "reshape-size",
                f"reshape: the {level} size must be preserved: `{old}` has {old.size} positions, "
                f"`{new}` has {new.size}",
            )
    result = type(tensor)(tensor.dtype, params, tensor.data)
    return recorded("reshape", (tensor,), result, **dict(zip(type(tensor).levels, params, strict=True)))


class TrfTensor(Tensor):
    """Tensor register file contents: `TrfTensor[bf16, Chip, Cluster, Slice, Lane, Element]`."""

    levels = ("chip", "cluster", "slice", "lane", "element")
    kind = "trf"


class VrfTensor(Tensor):
    """Vector register file contents (i32/f32): `VrfTensor[i32, Chip, Cluster, Slice, Element]`."""

    levels = ("chip", "cluster", "slice", "element")
    kind = "vrf"

    def _validate(self) -> None:
        super()._validate()
        if self.dtype not in (dtypes.i32, dtypes.f32):
            raise VerifyError("vrf-dtype", f"the vector register file holds i32 or f32, not {self.dtype}")
        verify_memory.check_capacity(
            "vrf-capacity", "VRF", self.dtype, self.params[3].size, RNGD.vrf_bytes_per_slice, "per slice"
        )


# ---- views ------------------------------------------------------------------------------------------


class TensorView:
    """A window on an HBM or DM tensor's element level: cell p of each element block reads or
    writes base position `window + p`. `tile` narrows the live cells; `pad`/`unpad` re-declare them."""

    writable: ClassVar[bool] = False
    levels: ClassVar[tuple[str, ...]] = ()

    def __init__(self, base: HbmTensor | DmTensor, element: Mapping, window: int):
        self.base, self.element, self.window = base, element, window

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    @property
    def params(self) -> tuple[Mapping, ...]:
        """The view's type parameters: the base's spatial levels, then the view's element."""
        return (*self.outer, self.element)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(element=m["{self.element}"], window={self.window}, base={self.base!r})'

    @property
    def dtype(self) -> DType:
        return self.base.dtype

    @property
    def outer(self) -> tuple[Mapping, ...]:
        """The spatial levels, shared with the base tensor."""
        return self.base.params[:-1]

    @property
    def _blocks(self) -> tuple[int, int]:
        return math.prod(p.size for p in self.outer), self.base.params[-1].size

    @user_facing
    def tile(self, start: int, index: Mapping, length: int, element: Mapping | None = None) -> TensorView:
        """Keep `length` positions of the digit `index`, from position `start` of it; `element`, if
        given, is checked against the resulting view type."""
        hole = PadKind.BOTTOM if self.writable else PadKind.TOP
        try:
            view = tile_view(self.element, index, length, hole)
        except MappingError as error:
            raise VerifyError("tile-split", str(error)) from None
        if element is not None and element != view:
            raise VerifyError(
                "tile-view",
                f"tile: the split produces `{view.canonical()}`, but the requested view type is `{element}`",
            )
        cell = index.cell(start)
        if cell.kind != "index":
            kind = "Bottom" if self.writable else "Top"
            raise VerifyError("tile-start", f"tile start {start} maps to {kind} padding of `{index}`")
        shift = self._shift(cell.index)
        result = type(self)(self.base, element if element is not None else view, self.window + shift)
        return recorded("tile", (self,), result, start=start, index=index, length=length, element=result.element)

    def _shift(self, offset: dict[str, int]) -> int:
        """Element positions between the current window and the cell holding `offset` more."""
        from furiosa_opt.mapping.relayout import position_of

        coords = {name: np.array([value]) for name, value in offset.items()}
        return int(position_of(self.element.factors, coords, (1,))[0])

    @user_facing
    def pad(self, element: Mapping) -> TensorView:
        try:
            check_pad(self.element, element)
        except MappingError as error:
            raise VerifyError("pad-view", str(error)) from None
        return recorded("pad", (self,), type(self)(self.base, element, self.window), element=element)

    @user_facing
    def unpad(self, element: Mapping) -> TensorView:
        try:
            check_pad(element, self.element)
        except MappingError as error:
            raise VerifyError("unpad-view", str(error)) from None
        return recorded("unpad", (self,), type(self)(self.base, element, self.window), element=element)

    def read(self) -> Tensor:
        """The cells this view sees, as a tensor of the base's kind with the view's element."""
        if self.window == 0 and self.element == self.base.params[-1]:  # the whole tensor: nothing to cut
            return type(self.base)(self.dtype, self.base.params, self.base.data)
        outer, element = self._blocks
        try:
            data = active().window_read(self.base.data, outer, element, self.window, self.element.factors)
        except IndexError as error:
            raise VerifyError("view-bounds", f"the view `{self.element}` at window {self.window}: {error}") from None
        return type(self.base)(self.dtype, (*self.outer, self.element), data)

    def write(self, source: Tensor, what: str) -> None:
        """Store `source` (laid out as [outer levels, view element]) into the live cells of the view."""
        outer, element = self._blocks
        try:
            written = active().window_write(
                self.base.data, outer, element, self.window, self.element.factors, source.data
            )
        except IndexError as error:
            raise VerifyError("view-bounds", f"{what}: the view `{self.element}`: {error}") from None
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
        allowed = ("tdma",) if isinstance(self.base, DmTensor) else ("tdma", "pdma")
        what = f"{type(self.base).__name__}.to_hbm"
        expect_context(dma, allowed, what)
        target = element if element is not None else self.element
        result = moved(self.read(), HbmTensor, (self.outer[0], target), True, what)
        return recorded("to_hbm", (self,), result, ctx=dma, element=target)

    @user_facing
    def to_dm_view(self, tdma: DmaContext, destination: TensorView) -> None:
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
        expect_context(dma, ("tdma", "pdma"), "to_hbm_view")
        _expect_writable(destination, HbmTensor, "to_hbm_view")
        source = self.read()
        target = moved(source, HbmTensor, (*destination.outer, destination.element), True, "to_hbm_view")
        destination.write(target, "to_hbm_view")
        recorded("to_hbm_view", (self, destination), None, ctx=dma)


def _expect_writable(view: object, kind: type[Tensor], what: str) -> None:
    if not isinstance(view, TensorView) or not view.writable or not isinstance(view.base, kind):
        raise VerifyError("view-mut", f"{what} writes into a `{kind.__name__}.view_mut()`, got {view!r}")


class HbmTensorView(TensorView):
    """A read view of an HBM tensor; also a kernel parameter type, `HbmTensorView[bf16, Chip, Element]`:

    row = table.view().tile(3, m["C"], 1, m["1 # 64, H"])   # on the host: row 3 of a [C, H] table
    launch(copy_row, ctx, row, out.view_mut().tile(5, m["C"], 1, m["1 #{!} 64, H"]))
    """

    levels = ("chip", "element")


class HbmTensorViewMut(TensorView):
    """A write view of an HBM tensor (`HbmTensor.view_mut()`); as a kernel parameter,
    `HbmTensorViewMut[bf16, Chip, Element]` is an out-parameter the kernel writes in place:

        @device
        def store(ctx: Context, x: HbmTensor[bf16, Chip, m["S"]], out: HbmTensorViewMut[bf16, Chip, m["S"]]):
            x.to_dm(ctx.tdma, Cluster, Slice, m["S"]).view().to_hbm_view(ctx.tdma, out)
    """

    writable = True
    levels = ("chip", "element")


class DmTensorView(TensorView):
    """A read view of a DM tensor (`DmTensor.view()`), the input of `ctx.main.begin(...)`."""

    levels = ("chip", "cluster", "slice", "element")


class DmTensorViewMut(TensorView):
    """A write view of a DM tensor (`DmTensor.view_mut()`), the target of `commit_view` and `to_dm_view`."""

    writable = True
    levels = ("chip", "cluster", "slice", "element")
