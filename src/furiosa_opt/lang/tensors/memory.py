"""HBM and DM tensors, the two memories the DMAs move between: making them, moving and reshaping them,
their views of the whole tensor, and the indirect DMAs (gather into DM, scatter into HBM).

Every module of the package that moves data ends in one of these two classes, so this module sits below
them, and reaches what its tensors hand out (host tensors, views, the gather and scatter bodies) through
names bound late: the first section says how.
"""

from __future__ import annotations

from typing import Any

from furiosa_opt.arch import RNGD
from furiosa_opt.backend import active, cpu, selected_device
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import DmaContext, ExecutionContext, expect_context
from furiosa_opt.lang.tensors.base import Tensor, moved, recorded
from furiosa_opt.mapping import Mapping
from furiosa_opt.verify import memory as verify_memory

# ---- names bound late -------------------------------------------------------------------------------
# `HbmTensor.to_host` makes a host tensor, `view()` and `view_mut()` make views, `reshape` tells views from
# tensors, and the gathers and scatters run in indirect.py. The modules defining these (host.py, window.py,
# views.py, indirect.py) import this one for `HbmTensor` and `DmTensor`, so importing them here would close
# an import circle. The package's __init__ loads them all, then binds these names with `bind`; importing
# this module runs that __init__ first, so they are bound before any tensor exists (until then each is None).
HostTensor: Any = None
TensorView: Any = None
HbmTensorView: Any = None
HbmTensorViewMut: Any = None
DmTensorView: Any = None
DmTensorViewMut: Any = None
_gathered: Any = None
_scattered: Any = None
_LATE = frozenset(
    {
        "HostTensor",
        "TensorView",
        "HbmTensorView",
        "HbmTensorViewMut",
        "DmTensorView",
        "DmTensorViewMut",
        "_gathered",
        "_scattered",
    }
)


def bind(**names: Any) -> None:
    """Bind every name of the list above at once, so that forgetting one fails on import, not in a kernel."""
    if names.keys() != _LATE:
        wrong = ", ".join(sorted(names.keys() ^ _LATE))
        raise NameError(f"tensors.memory.bind takes exactly the names bound late; differs in: {wrong}")
    globals().update(names)


# ---- HBM and DM -------------------------------------------------------------------------------------


class HbmTensor(Tensor):
    """A tensor in HBM: `HbmTensor[bf16, Chip, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> HbmTensor[i32, m["1"], m["A"]]                  # an annotation: chip mapping, element mapping
        HbmTensor[i32, m["1"], m["A"]]
        >>> HbmTensor[i32, m["1"], m["A"]].size()           # bytes in device memory
        8192
        >>> with Context.acquire() as ctx:
        ...     hbm = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A]).to_hbm(ctx.pdma)
        ...     print(hbm, hbm.to_host(ctx.pdma).to_numpy()[:3])
        HbmTensor[i32, m["1"], m["A"]] [0 1 2]
    """

    levels = ("chip", "element")
    kind = "hbm"

    def _validate(self) -> None:
        super()._validate()
        verify_memory.check_whole_bytes(self.dtype, self.params[1].size, "HbmTensor element (per chip)")
        home = selected_device() if isinstance(self.data, cpu.Buf) else None
        if home is not None:  # under a device backend, HBM tensors live in its memory from the moment they are made
            self.data = home.upload(self.data.values(), self.dtype)

    @classmethod
    @user_facing
    def new(cls, dtype: DType, chip: Mapping, element: Mapping) -> HbmTensor:
        """A zero-filled HBM tensor made inside a kernel (upstream's `HbmTensor::new`):
        `HbmTensor.new(bf16, Chip, m["A"])`.
        """
        tensor = cls(dtype, (chip, element), active().zeros(dtype.storage, chip.size * element.size))
        return recorded("hbm_new", (), tensor, dtype=dtype, chip=chip, element=element)

    @user_facing
    def to_host(self, pdma: DmaContext, element: Mapping | None = None) -> HostTensor:
        """HBM → host over PCIe (host code): the values as a `HostTensor`, laid out by `element` (default:
        this tensor's element mapping).

            out.to_host(ctx.pdma).to_numpy()
        """
        expect_context(pdma, ("pdma",), "HbmTensor.to_host")
        target = element if element is not None else self.params[1]
        return recorded("hbm_to_host", (self,), moved(self, HostTensor, (target,), True, "HbmTensor.to_host"))

    @user_facing
    def to_hbm(self, dma: DmaContext, element: Mapping) -> HbmTensor:
        """HBM → HBM: a copy laid out by `element`, e.g. `x.to_hbm(ctx.tdma, m["K, I"])` transposes `[I, K]`."""
        expect_context(dma, ("tdma", "pdma"), "HbmTensor.to_hbm")
        result = moved(self, HbmTensor, (self.params[0], element), True, "HbmTensor.to_hbm")
        return recorded("hbm_to_hbm", (self,), result, ctx=dma, element=element)

    @user_facing
    def to_dm(self, tdma: DmaContext, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """HBM → DM with the tensor DMA: `cluster` and `slice` say where each element goes, `element` where it
        sits in the slice's memory.

            dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])   # 8 values in each of 256 slices
        """
        return self.view().to_dm(tdma, cluster, slice, element)

    def size(self) -> int:
        """Upstream's `HbmTensor::size()`: the bytes of the tensor's packed device image, every chip's.

        HbmTensor.new(bf16, m["1"], m["A"]).size()   # A = 6: 12
        """
        return self.dtype.nbytes(self.storage.size)

    def view(self) -> HbmTensorView:
        """A read view of the whole tensor (to `tile`, `pad` or move from)."""
        return recorded("view", (self,), HbmTensorView(self, self.params[1], 0))

    @user_facing
    def dma_gather_scaled(self, index: HbmTensor, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """Upstream's `dma_gather_scaled`: a new DM tensor whose row for each index cell is the table row
        the cell's value selects, as a byte offset (row r of a 128-wide bf16 table is 256·r). The output's
        axes are the index's and the payload it shares with this table; the one table axis left is the
        gathered one. An offset past the table is a fault naming the kernel and line.

            index = HostTensor.from_numpy(rows * 256, i32, m["G"]).to_hbm(ctx.pdma)   # in the host program
            values = table.dma_gather_scaled(index, m["1 # 2"], m["G / 2"], m["G % 2, D"])   # [K, D] table
        """
        result = _gathered(self, index, (cluster, slice, element), True, "dma_gather_scaled")
        return recorded("dma_gather_scaled", (self, index), result, cluster=cluster, slice=slice, element=element)

    @user_facing
    def dma_gather_unscaled(self, index: DmTensor, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """Upstream's `dma_gather_unscaled`: as `dma_gather_scaled`, with the index in DM (on-chip) holding
        row numbers; the index is read from one PE's 4 KiB scratchpad, so it has at most 1024 cells.

            index_dm = index.to_dm(ctx.tdma, m["1 # 2"], m["G / 2"], m["G % 2"])
            values = table.dma_gather_unscaled(index_dm, m["1 # 2"], m["G / 2"], m["G % 2, D"])
        """
        result = _gathered(self, index, (cluster, slice, element), False, "dma_gather_unscaled")
        return recorded("dma_gather_unscaled", (self, index), result, cluster=cluster, slice=slice, element=element)

    @user_facing
    def hbm_cluster_shuffle(self, dma: DmaContext, pattern) -> HbmTensor:
        """Upstream's name for a cluster shuffle in HBM, whose body is `todo!()`: an HBM tensor has no
        cluster level (clusters are chosen at `to_dm`), so it refuses; shuffle a DM view instead.

            x.hbm_cluster_shuffle(ctx.tdma, [1, 0])   # error[upstream-undefined]
            x.to_dm(ctx.tdma, Cluster, Slice, E).view().dm_cluster_shuffle(ctx.tdma, [1, 0])
        """
        raise VerifyError(
            "upstream-undefined",
            "hbm_cluster_shuffle: upstream does not define it (`todo!()`): an HBM tensor has no cluster level, "
            "clusters are chosen at `to_dm`",
            notes=("move to DM first and use `dm.view().dm_cluster_shuffle(ctx.tdma, pattern)`",),
        )

    def view_mut(self) -> HbmTensorViewMut:
        """A write view of the whole tensor: the destination of `to_hbm_view`, or a kernel's out-parameter."""
        return recorded("view_mut", (self,), HbmTensorViewMut(self, self.params[1], 0))

    @user_facing
    def reshape(self, chip: Mapping, element: Mapping) -> HbmTensor:
        """The same buffer under other mappings of the same sizes (nothing moves):
        `x.reshape(Chip, m["A / 8, A % 8"])`.
        """
        return _reshaped(self, (chip, element))


class DmTensor(Tensor):
    """A tensor in the data memory of the slices: `DmTensor[bf16, Chip, Cluster, Slice, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])   # 256 slices, 8 elements each
        ...     return dm.to_hbm(ctx.tdma, m["A"])
        >>> x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A])
        >>> with Context.acquire() as ctx:
        ...     y = launch(copy, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == np.arange(2048)).all())
        True
    """

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
        """A zero-filled DM tensor, e.g. the destination of a `commit_view`:
        `DmTensor.new(i32, Chip, Cluster, Slice, E)`.
        """
        count = chip.size * cluster.size * slice.size * element.size
        tensor = cls(dtype, (chip, cluster, slice, element), active().zeros(dtype.storage, count))
        return recorded("dm_new", (), tensor, dtype=dtype, chip=chip, cluster=cluster, slice=slice, element=element)

    def view(self) -> DmTensorView:
        """A read view of the whole tensor: what `ctx.main.begin(...)` streams from."""
        return recorded("view", (self,), DmTensorView(self, self.params[3], 0))

    def view_mut(self) -> DmTensorViewMut:
        """A write view of the whole tensor: the destination of `commit_view` and `to_dm_view`."""
        return recorded("view_mut", (self,), DmTensorViewMut(self, self.params[3], 0))

    @user_facing
    def to_hbm(self, tdma: DmaContext, element: Mapping | None = None) -> HbmTensor:
        """DM → HBM with the tensor DMA, laid out by `element`: `out.to_hbm(ctx.tdma, m["A"])`."""
        return self.view().to_hbm(tdma, element)

    @user_facing
    def to_dm(self, tdma: DmaContext, slice: Mapping, element: Mapping) -> DmTensor:
        """DM → DM relayout with the tensor DMA: the same chip and cluster, a new slice and element mapping
        of the same sizes.
        """
        return self.view().to_dm(tdma, self.params[1], slice, element)

    @user_facing
    def to_dm_pcopy(self, sub: ExecutionContext, slice: Mapping, element: Mapping) -> DmTensor:
        """`to_dm` issued on the sub context as a ParallelCopy (DM → DM, "stos"): a new DM tensor with the
        same chip and cluster, the slice and element given (sizes kept); reads may broadcast.

            moved = dm.to_dm_pcopy(ctx.sub, m["A"], m["B / 2, B % 2"])
        """
        return self.view().to_dm_pcopy(sub, slice, element)

    @user_facing
    def dma_scatter(self, index: HbmTensor, output: HbmTensor, key: Mapping) -> None:
        """Upstream's `dma_scatter`: each cell of the `key` axes (in this tensor's slice and element)
        carries a row of the other axes (the payload); it is written into `output` at the row of the
        output's one remaining axis that the index's value selects, as a byte offset. Rows no key names
        keep their contents; where two keys name one row the later key's row stays.

            data_dm.dma_scatter(index, cache, m["K"])   # [K, D] rows into a [C, D] cache
        """
        _scattered(self, index, output, key, True, "dma_scatter")
        recorded("dma_scatter", (self, index, output), None, key=key)

    @user_facing
    def dma_scatter_unscaled(self, index: DmTensor, output: HbmTensor, key: Mapping) -> None:
        """Upstream's `dma_scatter_unscaled`, whose body is `todo!()` upstream: here it is `dma_scatter`
        with the index in DM holding row numbers (as `dma_gather_unscaled` is to `dma_gather_scaled`),
        the meaning its upstream documentation gives; the index fits one PE's 4 KiB scratchpad.

            data_dm.dma_scatter_unscaled(index_dm, cache, m["K"])
        """
        _scattered(self, index, output, key, False, "dma_scatter_unscaled")
        recorded("dma_scatter_unscaled", (self, index, output), None, key=key)

    @user_facing
    def reshape(self, chip: Mapping, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """The same buffer under other mappings of the same sizes (nothing moves)."""
        return _reshaped(self, (chip, cluster, slice, element))


def _reshaped(tensor: Tensor | TensorView, params: tuple[Mapping, ...]) -> Tensor | TensorView:
    """Relabel the unchanged buffer (or view): every level keeps its size (the caller keeps wire order)."""
    for level, old, new in zip(type(tensor).levels, tensor.params, params, strict=True):
        if old.size != new.size:
            raise VerifyError(
                "reshape-size",
                f"reshape: the {level} size must be preserved: `{old}` has {old.size} positions, "
                f"`{new}` has {new.size}",
            )
    if isinstance(tensor, TensorView):  # the same window of the same base, its levels relabelled
        result = type(tensor)(tensor.base, params[-1], tensor.window, params[:-1])
    else:
        result = type(tensor)(tensor.dtype, params, tensor.data)
    return recorded("reshape", (tensor,), result, **dict(zip(type(tensor).levels, params, strict=True)))
