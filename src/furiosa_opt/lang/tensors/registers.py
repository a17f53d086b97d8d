"""The register files the Tensor Unit fills from a stream: `TrfTensor` (the contraction's second operand)
and `VrfTensor` (the Vector Engine's operand). Neither has views or DMA moves; streams make and read them.
"""

from __future__ import annotations

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.lang.tensors.base import Tensor
from furiosa_opt.verify import memory as verify_memory


class TrfTensor(Tensor):
    """Tensor register file contents: `TrfTensor[bf16, Chip, Cluster, Slice, Lane, Element]`.

    Examples:
        >>> J, K = axes(J=32, K=64)
        >>> TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["J % 8"], m["J / 8 % 4, K"]]
        TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["J % 8"], m["J / 8 % 4, K"]]
    """

    levels = ("chip", "cluster", "slice", "lane", "element")
    kind = "trf"


class VrfTensor(Tensor):
    """Vector register file contents (i32/f32): `VrfTensor[i32, Chip, Cluster, Slice, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> T = HbmTensor[i32, m["1"], m["A"]]
        >>> @device
        ... def mul(ctx: Context, a: T, b: T) -> T:
        ...     a_dm = a.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     b_dm = b.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     b_vrf = ctx.sub.begin(b_dm.view()).fetch(m["1"], m["A % 8"]).collect(m["A % 8 / 8"], m["A % 8 % 8"])
        ...     b_vrf = b_vrf.to_vrf(m["A % 8"])
        ...     s = ctx.main.begin(a_dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.MulInt, b_vrf).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(2048, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     a, b = (HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma) for _ in range(2))
        ...     y = launch(mul, ctx, a, b).to_host(ctx.pdma).to_numpy()
        >>> bool((y == v * v).all())
        True
    """

    levels = ("chip", "cluster", "slice", "element")
    kind = "vrf"

    def _validate(self) -> None:
        super()._validate()
        if self.dtype not in (dtypes.i32, dtypes.f32):
            raise VerifyError("vrf-dtype", f"the vector register file holds i32 or f32, not {self.dtype}")
        verify_memory.check_capacity(
            "vrf-capacity", "VRF", self.dtype, self.params[3].size, RNGD.vrf_bytes_per_slice, "per slice"
        )
