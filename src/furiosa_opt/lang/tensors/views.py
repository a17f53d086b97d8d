"""The views of each tier, the classes kernels name in annotations: `HbmTensorView` (adding the HBM chip
shuffle to what every `TensorView` does) and its writable twin `HbmTensorViewMut`; `DmTensorView` and
`DmTensorViewMut`, which add the cluster and slice tiles, the first ParallelCopy and the DM shuffles, the
second `memset`.

The tensors' `view()` and `view_mut()` make these classes; `memory.py` cannot import this module (it
imports `memory.py`), so the package's `__init__` binds them into it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.lang.context import DmaContext, ExecutionContext, expect_context
from furiosa_opt.lang.tensors.base import Tensor, moved, recorded
from furiosa_opt.lang.tensors.memory import DmTensor, HbmTensor
from furiosa_opt.lang.tensors.window import TensorView, _expect_writable
from furiosa_opt.mapping import Mapping, m
from furiosa_opt.verify import memory as verify_memory


def _shuffled(view: TensorView, level: int, dma: DmaContext, pattern, dim: int | None, what: str) -> Tensor:
    """A fresh tensor of the view's type whose level-`level` position `target` holds the view's position
    `pattern[target]`: one DMA per target, between one-position tiles of that level (upstream's
    composition, so the vISA shows each move)."""
    index = view.params[level]
    pattern = [int(p) for p in pattern]
    dim = len(pattern) if dim is None else dim
    verify_memory.check_shuffle(pattern, dim, index, what)
    tile = ("chip_tile", "cluster_tile")[level]
    if isinstance(view.base, DmTensor):
        out = DmTensor.new(view.dtype, *view.params)
    else:
        out = HbmTensor.new(view.dtype, *view.params)
    for target, source in enumerate(pattern):
        piece = getattr(view, tile)(source, index, 1, m[f"1 # {dim}"])
        slot = getattr(out.view_mut(), tile)(target, index, 1, m[f"1 #{{!}} {dim}"])
        if isinstance(out, DmTensor):
            piece.to_dm_view(dma, slot)
        else:
            piece.to_hbm_view(dma, slot)
    return out


class HbmTensorView(TensorView):
    """A read view of an HBM tensor; also a kernel parameter type, `HbmTensorView[bf16, Chip, Element]`:

    row = table.view().tile(3, m["C"], 1, m["1 # 64, H"])   # on the host: row 3 of a [C, H] table
    launch(copy_row, ctx, row, out.view_mut().tile(5, m["C"], 1, m["1 #{!} 64, H"]))

    Examples:
        >>> R, H = axes(R=4, H=64)
        >>> table = HostTensor.from_numpy(np.arange(256, dtype=np.int32).reshape(4, 64), i32, m["R, H"])
        >>> with Context.acquire() as ctx:
        ...     row = table.to_hbm(ctx.pdma).view().tile(2, m["R"], 1, m["1 # 4, H"])   # row 2 of the table
        >>> row
        HbmTensorView(element=m["1 # 4, H"], window=128, base=HbmTensor[i32, m["1"], m["R, H"]])
    """

    levels = ("chip", "element")

    @user_facing
    def hbm_chip_shuffle(self, dma: DmaContext, pattern, chip_dim: int | None = None) -> HbmTensor:
        """A new HBM tensor whose chip `target` holds this view's chip `pattern[target]` (HBM → HBM DMA on
        `ctx.tdma` or `ctx.pdma`); `chip_dim` (upstream's `CHIP_DIM`, default the pattern's length) must be
        the chip level's size.

            rotated = x.view().hbm_chip_shuffle(ctx.tdma, [1, 2, 3, 0])   # chip 1 → 0, 2 → 1, …
        """
        expect_context(dma, ("tdma", "pdma"), "hbm_chip_shuffle")
        return _shuffled(self, 0, dma, pattern, chip_dim, "hbm_chip_shuffle")


class HbmTensorViewMut(TensorView):
    """A write view of an HBM tensor (`HbmTensor.view_mut()`); as a kernel parameter,
    `HbmTensorViewMut[bf16, Chip, Element]` is an out-parameter the kernel writes in place:

        @device
        def store(ctx: Context, x: HbmTensor[bf16, Chip, m["S"]], out: HbmTensorViewMut[bf16, Chip, m["S"]]):
            x.to_dm(ctx.tdma, Cluster, Slice, m["S"]).view().to_hbm_view(ctx.tdma, out)

    Examples:
        >>> S = axes(S=2048)
        >>> @device
        ... def store(ctx: Context, x: HbmTensor[i32, m["1"], m["S"]], out: HbmTensorViewMut[i32, m["1"], m["S"]]):
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["S / 8 # 256"], m["S % 8"])
        ...     dm.view().to_hbm_view(ctx.tdma, out)                     # writes the caller's tensor in place
        >>> with Context.acquire() as ctx:
        ...     out = HostTensor.zeros(i32, m[S]).to_hbm(ctx.pdma)
        ...     x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[S]).to_hbm(ctx.pdma)
        ...     launch(store, ctx, x, out.view_mut())
        ...     print(out.to_host(ctx.pdma).to_numpy()[:3])
        [0 1 2]
    """

    writable = True
    levels = ("chip", "element")


class _DmLevels(TensorView):
    """What DM views add: tiles of the cluster and slice levels (an HBM tensor has neither)."""

    @user_facing
    def cluster_tile(self, start: int, index: Mapping, length: int, cluster: Mapping | None = None) -> TensorView:
        """`tile` on the cluster level.

        upper = dm.view().cluster_tile(1, m["A / 2 % 2"], 1, m["1 # 2"])   # cluster 1's part
        """
        result = self._tiled(1, start, index, length, cluster, "cluster_tile")
        return recorded(
            "cluster_tile", (self,), result, start=start, index=index, length=length, cluster=result.outer[1]
        )

    @user_facing
    def slice_tile(self, start: int, index: Mapping, length: int, slice: Mapping | None = None) -> TensorView:
        """`tile` on the slice level.

        half = dm.view().slice_tile(0, m["S"], 128, m["S = 128 # 256"])   # slices 0..127
        """
        result = self._tiled(2, start, index, length, slice, "slice_tile")
        return recorded("slice_tile", (self,), result, start=start, index=index, length=length, slice=result.outer[2])


class DmTensorView(_DmLevels):
    """A read view of a DM tensor (`DmTensor.view()`), the input of `ctx.main.begin(...)`.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def add_one(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     out = (
        ...         ctx.main.begin(dm.view())
        ...         .fetch(m["1"], m["A % 8"])
        ...         .collect(m["1"], m["A % 8"])
        ...         .vector_init()
        ...         .vector_intra_slice_tag(TagMode.Zero)
        ...         .vector_fxp(FxpBinaryOp.AddFxp, 1)
        ...         .vector_final()
        ...         .commit_trim(m["A % 8"])
        ...         .commit(m["A % 8"])
        ...     )
        ...     return out.to_hbm(ctx.tdma, m["A"])
        >>> x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A])
        >>> with Context.acquire() as ctx:
        ...     y = launch(add_one, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> y[:4]
        array([1, 2, 3, 4], dtype=int32)
    """

    levels = ("chip", "cluster", "slice", "element")

    @user_facing
    def to_dm_pcopy(self, sub: ExecutionContext, slice: Mapping, element: Mapping) -> DmTensor:
        """The view's cells as a new DM tensor by ParallelCopy on the sub context (see `DmTensor.to_dm_pcopy`).

        part = dm.view().tile(0, m["B"], 64, m["B = 64 # 128"]).to_dm_pcopy(ctx.sub, m["A"], m["B = 64 # 128"])
        """
        expect_context(sub, ("sub",), "to_dm_pcopy")
        params = (self.outer[0], self.outer[1], slice, element)
        verify_memory.check_sizes_preserved(self.outer[1:], params[1:3], "to_dm_pcopy")
        result = moved(self.read(), DmTensor, params, True, "to_dm_pcopy")
        return recorded("to_dm_pcopy", (self,), result, ctx=sub, slice=slice, element=element)

    @user_facing
    def to_dm_view_pcopy(self, sub: ExecutionContext, destination: TensorView) -> None:
        """Write the view's cells into the live cells of a DM `view_mut()` by ParallelCopy on the sub
        context (chip, cluster and slice sizes kept); a write does not broadcast.

            src.view().to_dm_view_pcopy(ctx.sub, out.view_mut().cluster_tile(1, m["C"], 1, m["1 #{!} 2"]))
        """
        expect_context(sub, ("sub",), "to_dm_view_pcopy")
        _expect_writable(destination, DmTensor, "to_dm_view_pcopy")
        verify_memory.check_sizes_preserved(self.outer[1:], destination.outer[1:], "to_dm_view_pcopy")
        params = (*destination.outer, destination.element)
        destination.write(moved(self.read(), DmTensor, params, False, "to_dm_view_pcopy"), "to_dm_view_pcopy")
        recorded("to_dm_view_pcopy", (self, destination), None, ctx=sub)

    @user_facing
    def dm_chip_shuffle(self, tdma: DmaContext, pattern, chip_dim: int | None = None) -> DmTensor:
        """A new DM tensor whose chip `target` holds this view's chip `pattern[target]` (DM → DM DMA
        across chips); `chip_dim` (upstream's `CHIP_DIM`, default the pattern's length) must be the chip
        level's size.

            shuffled = dm.view().dm_chip_shuffle(ctx.tdma, [1, 2, 3, 0])   # chip 1 → 0, 2 → 1, …
        """
        expect_context(tdma, ("tdma",), "dm_chip_shuffle")
        return _shuffled(self, 0, tdma, pattern, chip_dim, "dm_chip_shuffle")

    @user_facing
    def dm_cluster_shuffle(self, tdma: DmaContext, pattern, cluster_dim: int | None = None) -> DmTensor:
        """A new DM tensor whose cluster `target` holds this view's cluster `pattern[target]`;
        `cluster_dim` (upstream's `CLUSTER_DIM`, default the pattern's length) must be the cluster level's
        size. A pattern shorter than it leaves the clusters it does not name unwritten.

            swapped = dm.view().dm_cluster_shuffle(ctx.tdma, [1, 0])
        """
        expect_context(tdma, ("tdma",), "dm_cluster_shuffle")
        return _shuffled(self, 1, tdma, pattern, cluster_dim, "dm_cluster_shuffle")


class DmTensorViewMut(_DmLevels):
    """A write view of a DM tensor (`DmTensor.view_mut()`), the target of `commit_view` and `to_dm_view`.

    Examples:
        >>> A, I = axes(A=2048, I=2)
        >>> In, Out = HbmTensor[i8, m["1"], m["A"]], HbmTensor[i32, m["1"], m["A"]]
        >>> @device
        ... def add(ctx: Context, a: In, b: In) -> Out:
        ...     a_dm = a.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     b_dm = b.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     out = DmTensor.new(i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     (
        ...         ctx.main.begin_interleaved(a_dm.view(), b_dm.view(), I)    # I = 0: a, I = 1: b
        ...         .fetch(m["I"], m["A % 8"]).fetch_cast(i32).collect(m["I"], m["A % 8"])
        ...         .vector_init()
        ...         .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])           # a VectorPair: g0 = a, g1 = b
        ...         .vector_clip_zip(ClipBinaryOpI32.AddFxp)                  # one stream again: a + b
        ...         .vector_final()
        ...         .commit_trim(m["A % 8"])
        ...         .commit_view(out.view_mut())                              # into the DmTensorViewMut
        ...     )
        ...     return out.to_hbm(ctx.tdma, m["A"])
        >>> rng = np.random.default_rng(0)
        >>> a, b = HostTensor.rand(i8, m[A], rng), HostTensor.rand(i8, m[A], rng)
        >>> with Context.acquire() as ctx:
        ...     y = launch(add, ctx, a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == a.to_numpy().astype(np.int32) + b.to_numpy()).all())
        True
    """

    writable = True
    levels = ("chip", "cluster", "slice", "element")

    @user_facing
    def memset(self, value: Any, sub: ExecutionContext) -> None:
        """Upstream's `DmTensorViewMut::memset`: every live cell of the DM tensor becomes `value` (in the
        tensor's dtype, converted as `HostTensor.from_vec` converts; padding is left as it was). One
        ParallelMemSet on the sub context: the Commit Adapter's Generate Mode writes the constant in
        every slice at once, with no stream behind it.

            dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
            dm.view_mut().memset(bf16.from_f32(1.0), ctx.sub)   # or simply 1.0

        Only a whole tensor is filled (`memset-view`), as upstream. Upstream needs `const { .. }` around
        a computed value and does not fill f4e2m1 yet; any Python value is a constant here, and f4e2m1
        fills like i4.
        """
        expect_context(sub, ("sub",), "memset")
        verify_memory.check_memset_view(self.window, self.element, self.base.params[-1])
        try:
            stored = dtypes.from_user(np.asarray(value), self.dtype)
        except dtypes.DTypeError as error:
            raise VerifyError("memset-value", f"memset: {error}") from None
        count = math.prod(p.size for p in self.base.params)
        self.write(
            DmTensor(self.dtype, self.base.params, active().constant(stored, self.dtype.storage, count)), "memset"
        )
        recorded("memset", (self,), None, ctx=sub, code=dtypes.code_of(stored, self.dtype))
