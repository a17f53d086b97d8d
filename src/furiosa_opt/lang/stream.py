"""The Tensor Unit pipeline as method chains: begin → fetch → collect → … → commit.

A stream is a tensor over `[Chip, Cluster, Slice, Time, Packet]`: spatial levels, the cycle order
within a slice, and the data of one cycle. Each method checks the stage graph and the stage's static
rules (verify/), then asks the backend for the values. Methods take values first, then the type
parameters in upstream's Rust order (also accepted as keywords).
"""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.backend import active
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import ExecutionContext, expect_context
from furiosa_opt.lang.contraction import Contraction, contract_outer
from furiosa_opt.lang.tensors import (
    DmTensor,
    DmTensorView,
    TensorView,
    TrfTensor,
    VrfTensor,
    _expect_writable,
)
from furiosa_opt.lang.vector import VectorStream, vector_init
from furiosa_opt.mapping import Axis, Mapping, MappingError, m
from furiosa_opt.mapping.algebra import pair
from furiosa_opt.mapping.expr import Sym
from furiosa_opt.stages import STAGES, following, rule
from furiosa_opt.switch import SwitchConfig
from furiosa_opt.verify import memory as verify_memory
from furiosa_opt.verify import stream as rules


class TuContext(ExecutionContext):
    """`ctx.main` or `ctx.sub`: starts Tensor Unit pipelines with `begin(dm_view)`.

    stream = ctx.main.begin(dm.view()).fetch(m["1"], m["A % 8"])

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

    @user_facing
    def begin(self, view: TensorView) -> Stream:
        """Start a Tensor Unit pipeline over a DM view; the methods of the returned `Stream` are its stages."""
        return begin(self, view)

    @user_facing
    def begin_interleaved(self, lhs: TensorView, rhs: TensorView, axis: Axis) -> Stream:
        """Start a pair-mode pipeline on two DM views of one shape: a new size-2 time axis `axis` picks
        the view (0: `lhs`, 1: `rhs`); `vector_intra_slice_unzip` splits them into groups again.

            ctx.main.begin_interleaved(a.view(), b.view(), I).fetch(m["I"], m["A % 8"])
        """
        return begin_interleaved(self, lhs, rhs, axis)

    @user_facing
    def parallel_copy_cluster_slice(
        self,
        tensor: DmTensorView,
        slice_indices,
        cluster_dim: int | None,
        axis_to_slice: Mapping,
        axis_sliced_element: Mapping,
        element: Mapping,
    ) -> DmTensor:
        """Sub context only: a new DM tensor whose cluster c holds the cluster-c part of `tensor` at
        position `slice_indices[c]` of the digit `axis_to_slice` (its element tiled to
        `axis_sliced_element`), written as `element`; one ParallelCopy per cluster.

            rows = ctx.sub.parallel_copy_cluster_slice(dm.view(), [1, 0], 2, m["R"], m["R = 1 # 4, E"], m["E"])
        """
        return _parallel_slice(self, tensor, 1, slice_indices, cluster_dim, axis_to_slice, axis_sliced_element, element)

    @user_facing
    def parallel_copy_chip_slice(
        self,
        tensor: DmTensorView,
        slice_indices,
        chip_dim: int | None,
        axis_to_slice: Mapping,
        axis_sliced_element: Mapping,
        element: Mapping,
    ) -> DmTensor:
        """As `parallel_copy_cluster_slice`, per chip: chip c takes position `slice_indices[c]`.

        rows = ctx.sub.parallel_copy_chip_slice(dm.view(), [3, 0, 1, 2], 4, m["R"], m["R = 1 # 4, E"], m["E"])
        """
        return _parallel_slice(self, tensor, 0, slice_indices, chip_dim, axis_to_slice, axis_sliced_element, element)


def _parallel_slice(ctx, tensor, level, indices, dim, axis, sliced, element) -> DmTensor:
    """Upstream's composition: per position p of the level, tile p of `tensor` there, tile its element at
    `indices[p]` of `axis`, and ParallelCopy it into tile p of a new tensor."""
    what = ("parallel_copy_chip_slice", "parallel_copy_cluster_slice")[level]
    expect_context(ctx, ("sub",), what)
    indices = [int(i) for i in indices]
    index = tensor.params[level]
    dim = len(indices) if dim is None else dim
    verify_memory.check_shuffle(list(range(len(indices))), dim, index, what)
    out = DmTensor.new(tensor.dtype, *tensor.params[:3], element)
    tile = ("chip_tile", "cluster_tile")[level]
    for position, chosen in enumerate(indices):
        piece = getattr(tensor, tile)(position, index, 1, m[f"1 # {dim}"]).tile(chosen, axis, 1, sliced)
        piece.to_dm_view_pcopy(ctx, getattr(out.view_mut(), tile)(position, index, 1, m[f"1 #{{!}} {dim}"]))
    return out


class Stream:
    """A Tensor Unit stream at one pipeline stage."""

    def __init__(
        self,
        ctx: TuContext,
        stage: str,
        dtype: DType,
        spatial: tuple[Mapping, Mapping, Mapping],
        time: Mapping,
        packet: Mapping,
        data: object,
    ):
        verify_memory.check_spatial(spatial[1], spatial[2], stage)
        self.ctx, self.stage, self.dtype, self.spatial = ctx, stage, dtype, spatial
        self.time, self.packet, self.data = time, packet, data

    def __repr__(self) -> str:
        return f'Stream({self.ctx!r}, {self.stage}, {self.dtype}, time=m["{self.time}"], packet=m["{self.packet}"])'

    @property
    def layout(self) -> Mapping:
        return pair(*self.spatial, self.time, self.packet)

    def _expect(self, method: str) -> None:
        """The stage table's order (furiosa_opt/stages.py): `method` must be able to follow this stage."""
        if self.stage not in STAGES[method].after:
            allowed, after = following(self.stage), STAGES[method].after
            raise VerifyError(
                "pipeline-order",
                f"`{method}` cannot follow `{self.stage}`",
                notes=(
                    f"`{method}` follows {', '.join(f'`{a}`' for a in after) or 'no stage'}",
                    f"after `{self.stage}` come {', '.join(f'`{a}`' for a in allowed) or 'nothing'}",
                ),
            )

    def _next(
        self,
        stage: str,
        time: Mapping,
        packet: Mapping,
        broadcast: bool,
        dtype: DType | None = None,
        data: object = None,
        drop: bool = False,
        slice_: Mapping | None = None,
    ) -> Stream:
        """The same values re-laid out over a new time and packet, and slices if the stage moves data
        between them (a relayout by logical index)."""
        source = self.data if data is None else data
        spatial = (*self.spatial[:2], self.spatial[2] if slice_ is None else slice_)
        target = pair(*spatial, time, packet)
        try:
            moved = active().relayout(source, self.layout.factors, target.factors, broadcast, drop)
        except MappingError as error:
            raise VerifyError(f"{stage}-relayout", f"{stage}: {error}") from None
        return Stream(self.ctx, stage, dtype or self.dtype, spatial, time, packet, moved)

    def advanced(
        self, stage: str, dtype: DType, time: Mapping, packet: Mapping, data: object, slice_: Mapping | None = None
    ) -> Stream:
        """The stream after `stage` on the same context and slices (or on `slice_`, after the inter-slice
        reducer): how the contraction and the Vector Engine hand a stream back without importing this module."""
        spatial = self.spatial if slice_ is None else (*self.spatial[:2], slice_)
        return Stream(self.ctx, stage, dtype, spatial, time, packet, data)

    def _recorded(self, result, name: str, **attrs):
        """Note the operation with the backend (the tracer turns it into a vISA op) and return `result`."""
        active().record(name, (self,), (result,), **attrs)
        return result

    # ---- fetch and its adapter ----

    @user_facing
    def fetch(self, time: Mapping, packet: Mapping) -> Stream:
        """Read the DM view as `time` steps of `packet` elements. Axes the view lacks are re-read, and so is a
        digit named more often than the view holds it (its outer occurrences repeat the innermost's read):

            s.fetch(m["A, B / 8"], m["B"])  # DM `A, B`: every step (a, b8) reads the whole row a
        """
        self._expect("fetch")
        rule("fetch")(self.time, self.packet, time, packet)
        return self._recorded(self._next("fetch", time, packet, broadcast=True), "fetch", time=time, packet=packet)

    @user_facing
    def fetch_table_lookup(self, dtype: DType) -> Stream:
        """Decode narrow floats through the fetch adapter's table (main context): f4e2m1 → f8e4m3/f8e5m2,
        f8e4m3/f8e5m2 → bf16, each value exactly.

            s.fetch(m["K"], m["N"]).fetch_table_lookup(f8e4m3)
        """
        self._expect("fetch_table_lookup")
        rule("fetch_table_lookup")(self.ctx.name, self.dtype, dtype)
        source = self.dtype  # the function keeps the dtype, not the stream (a launch plan holds it)
        return self._adapted(
            "fetch_table_lookup", lambda v: STAGES["fetch_table_lookup"].arithmetic(v, source, dtype), dtype=dtype
        )

    @user_facing
    def fetch_zero_point_sub(self, zero_point: int, dtype: DType) -> Stream:
        """Subtract an asymmetric quantisation's zero point into the one-bit-wider staging type (i4 → i5,
        i8 → i9), which only `contract_outer` reads.

            s.fetch(m["T"], m["K"]).fetch_zero_point_sub(3, i9)
        """
        self._expect("fetch_zero_point_sub")
        rule("fetch_zero_point_sub")(self.dtype, dtype, zero_point)
        subtract = lambda v: STAGES["fetch_zero_point_sub"].arithmetic(v, zero_point, dtype)  # noqa: E731
        return self._adapted("fetch_zero_point_sub", subtract, zero_point=zero_point, dtype=dtype)

    @user_facing
    def fetch_mask(self, time: Mapping, packet: Mapping) -> Stream:
        """Turn the fetch's `#` padding into `#{0}`. Upstream's body is `todo!()`, so this refuses.

        s.fetch(m["T"], m["K # 32"]).fetch_mask(m["T"], m["K #{0} 32"])  # error[upstream-undefined]
        """
        raise VerifyError("upstream-undefined", "fetch_mask: upstream does not define its meaning yet (`todo!()`)")

    def _adapted(self, stage: str, convert, **attrs) -> Stream:
        """A fetch-adapter stage: the elements converted to `attrs["dtype"]`, the layout unchanged."""
        data = active().elementwise(convert, self.data)
        result = Stream(self.ctx, stage, attrs["dtype"], self.spatial, self.time, self.packet, data)
        return self._recorded(result, stage, **attrs)

    @user_facing
    def fetch_cast(self, dtype: DType) -> Stream:
        """Convert the fetched elements (i4/i8/i16 → i32, f8/bf16 → f32, f32 → bf16, or identity).

        s.fetch(m["A"], m["B"]).fetch_cast(f32)
        """
        self._expect("fetch_cast")
        rule("fetch_cast")(self.dtype, dtype)
        source = self.dtype  # the function keeps the dtype, not the stream (a launch plan holds it)
        return self._adapted("fetch_cast", lambda v: STAGES["fetch_cast"].arithmetic(v, source, dtype), dtype=dtype)

    @user_facing
    def switch(self, config: SwitchConfig, slice: Mapping, time: Mapping) -> Stream:
        """Move data between slices on the Switch Engine's ring: broadcast, transpose or route Slice
        sub-dimensions (some into Time) as `config` states; the packet passes through unchanged.

            s.switch(SwitchConfig.Broadcast1(slice1=4, slice0=8), m["A / 32, X, A % 8"], m["B, A / 8 % 4"])
        """
        self._expect("switch")
        rules.check_flit_aligned(self.dtype, self.packet, "Switch")
        rule("switch")(config, self.spatial[2], self.time, slice, time)
        result = self._next("switch", time, self.packet, broadcast=True, slice_=slice)
        return self._recorded(result, "switch", config=config, slice=slice, time=time)

    @user_facing
    def collect(self, time: Mapping, packet: Mapping) -> Stream:
        """Normalise the stream into 32-byte flits: pad the packet, split it at one flit."""
        self._expect("collect")
        rules.check_flit_aligned(self.dtype, self.packet, "collect")
        rule("collect")(self.dtype, self.time, self.packet, time, packet)
        result = self._next("collect", time, packet, broadcast=False)
        return self._recorded(result, "collect", time=time, packet=packet)

    # ---- register files ----

    @user_facing
    def to_trf(self, lane: Mapping, element: Mapping) -> TrfTensor:
        """Store into the tensor register file; the lane axes are the outermost time axes."""
        self._expect("to_trf")
        _materializable(self.dtype, "to_trf")
        rule("to_trf")(self.dtype, self.time, self.packet, lane, element)
        target = pair(*self.spatial, lane, element)
        data = active().relayout(self.data, self.layout.factors, target.factors, False)
        result = TrfTensor(self.dtype, (*self.spatial, lane, element), data)
        return self._recorded(result, "to_trf", lane=lane, element=element)

    @user_facing
    def to_vrf(self, element: Mapping) -> VrfTensor:
        """Store into the vector register file (i32/f32, at most 8 KiB per slice)."""
        self._expect("to_vrf")
        target = pair(*self.spatial, element)
        try:
            data = active().relayout(self.data, self.layout.factors, target.factors, False)
        except MappingError as error:
            raise VerifyError("to_vrf-relayout", f"to_vrf: {error}") from None
        return self._recorded(VrfTensor(self.dtype, (*self.spatial, element), data), "to_vrf", element=element)

    # ---- compute engines ----

    @user_facing
    def contract_outer(self, trf: TrfTensor, time: Mapping, packet: Mapping) -> Contraction:
        """Multiply the stream with a TRF tensor (its Lane axes broadcast the stream)."""
        self._expect("contract_outer")
        return contract_outer(self, trf, time, packet)

    @user_facing
    def vector_init(self) -> VectorStream:
        """Enter the Vector Engine (i32 or f32 streams)."""
        self._expect("vector_init")
        return vector_init(self)

    @user_facing
    def cast(self, dtype: DType, packet: Mapping) -> Stream:
        """Narrow one flit into one flit (i32 → i4/i8/i16 wrap; f32 → bf16/f8 with hardware rounding)."""
        self._expect("cast")
        rule("cast")(self.dtype, dtype, self.packet, packet)
        source = self.dtype  # the function keeps the dtype, not the stream (a launch plan holds it)
        data = active().elementwise(lambda v: STAGES["cast"].arithmetic(v, source, dtype), self.data)
        result = self._next("cast", self.time, packet, broadcast=False, dtype=dtype, data=data)
        return self._recorded(result, "cast", dtype=dtype, packet=packet)

    @user_facing
    def transpose(self, time: Mapping, packet: Mapping) -> Stream:
        """Swap Time and Packet axes inside each slice on the Transpose Engine: up to a flit's worth of
        consecutive time steps become the packet, the packet's elements become time steps.

            s.transpose(m["B, D, E"], m["C # 32"])  # i8 [B, C, D] × [E # 32] → [B, D, E] × [C # 32]
        """
        self._expect("transpose")
        _materializable(self.dtype, "transpose")
        rule("transpose")(self.dtype, self.time, self.packet, time, packet)
        result = self._next("transpose", time, packet, broadcast=False)
        return self._recorded(result, "transpose", time=time, packet=packet)

    # ---- commit ----

    @user_facing
    def commit_trim(self, packet: Mapping) -> Stream:
        """Keep the leading 8, 16, 24 or 32 bytes of each flit."""
        self._expect("commit_trim")
        _materializable(self.dtype, "commit_trim")
        rule("commit_trim")(self.dtype, self.packet, packet)
        result = self._next("commit_trim", self.time, packet, broadcast=False, drop=True)
        return self._recorded(result, "commit_trim", packet=packet)

    @user_facing
    def commit_cast(self, dtype: DType = dtypes.bf16) -> Stream:
        """Round an f32 stream to `dtype` (bf16) on its way into DM."""
        return self._commit_cast(dtype, relu=False)

    @user_facing
    def commit_cast_relu(self, dtype: DType = dtypes.bf16) -> Stream:
        """As `commit_cast`, with negative values (and -0.0) written as zero: a ReLU on the way out."""
        return self._commit_cast(dtype, relu=True)

    def _commit_cast(self, dtype: DType, relu: bool) -> Stream:
        stage = "commit_cast_relu" if relu else "commit_cast"
        self._expect(stage)
        rule(stage)(self.packet, self.dtype, dtype)
        commit_cast = STAGES[stage].arithmetic
        data = active().elementwise(lambda v: commit_cast(v, relu), self.data)
        result = Stream(self.ctx, stage, dtype, self.spatial, self.time, self.packet, data)
        return self._recorded(result, stage, dtype=dtype)

    @user_facing
    def commit_valid_count_pack(self, count: int) -> Stream:
        """Pack each packet's first `count` valid elements (sub context). Upstream's body is `todo!()`, so
        this refuses.

            s.commit_trim(m["K"]).commit_valid_count_pack(4)  # error[upstream-undefined]
        """
        raise VerifyError(
            "upstream-undefined", "commit_valid_count_pack: upstream does not define its meaning yet (`todo!()`)"
        )

    @user_facing
    def commit(self, element: Mapping) -> DmTensor:
        """Write the stream into a new DM tensor with this element mapping."""
        self._expect("commit")
        target = pair(*self.spatial, element)
        rule("commit")(self.dtype, self.time, self.packet, element)
        data = active().relayout(self.data, self.layout.factors, target.factors, False)
        return self._recorded(DmTensor(self.dtype, (*self.spatial, element), data), "commit", element=element)

    @user_facing
    def commit_view(self, view: TensorView) -> None:
        """Write the stream into the live cells of a DM `view_mut()` (tile holes stay untouched)."""
        self._expect("commit_view")
        _expect_writable(view, DmTensor, "commit_view")
        target = pair(*view.outer, view.element)
        if view.dtype != self.dtype:
            raise VerifyError(
                "commit-dtype",
                f"commit_view: a {self.dtype} stream cannot be written into a {view.dtype} tensor",
            )
        rule("commit_view")(self.dtype, self.time, self.packet, view.element)
        data = active().relayout(self.data, self.layout.factors, target.factors, False)
        view.write(DmTensor(self.dtype, (*view.outer, view.element), data), "commit_view")
        active().record("commit_view", (self, view), ())


def begin(ctx: TuContext, view: TensorView) -> Stream:
    """Start a pipeline on a DM view: one time step whose packet is the view's element."""
    if not isinstance(view, DmTensorView):
        raise VerifyError("begin-view", f"begin reads a DM tensor's `view()`, got {view!r}")
    source = view.read()
    chip, cluster, slice_, element = source.params
    result = Stream(ctx, "begin", view.dtype, (chip, cluster, slice_), m["1"], element, source.data)
    active().record("begin", (view,), (result,), ctx=ctx)
    return result


def begin_interleaved(ctx: TuContext, lhs: TensorView, rhs: TensorView, axis: Axis) -> Stream:
    for view in (lhs, rhs):
        if not isinstance(view, DmTensorView):
            raise VerifyError("begin-view", f"begin_interleaved reads DM tensors' `view()`s, got {view!r}")
    left, right = lhs.read(), rhs.read()
    rule("begin_interleaved")(left.dtype, right.dtype, left.params, right.params, axis)
    chip, cluster, slice_, element = left.params
    outer = chip.size * cluster.size * slice_.size
    data = active().interleave(left.data, right.data, outer, element.size)
    selector = Mapping.from_node(Sym(axis))
    result = Stream(ctx, "begin_interleaved", lhs.dtype, (chip, cluster, slice_), selector, element, data)
    active().record("begin_interleaved", (lhs, rhs), (result,), ctx=ctx, axis=selector)
    return result


def _materializable(dtype: DType, what: str) -> None:
    if not dtype.materializable:
        raise VerifyError("not-materializable", f"{what}: an {dtype} stream only feeds contract_outer")
