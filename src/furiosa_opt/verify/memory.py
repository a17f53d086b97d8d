"""Rules on memory tensors and moves: spatial sizes, capacities, preserved sizes, DMA alignment."""

from __future__ import annotations

from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.algebra import dma_tails
from furiosa_opt.mapping.sequencer import Mode, sequence


def check_spatial(cluster: Mapping, slice_: Mapping, what: str) -> None:
    """Cluster and Slice sizes every DM tensor and stream stage must have (constraints.rs)."""
    if cluster.size not in RNGD.cluster_sizes:
        raise VerifyError(
            "cluster-size",
            f"{what}: Cluster size must be 1 or 2, got {cluster.size} (`{cluster}`)",
            notes=('pad a single cluster with `m["1 # 2"]`',),
        )
    if slice_.size not in RNGD.slice_sizes:
        sizes = " | ".join(map(str, RNGD.slice_sizes))
        raise VerifyError(
            "slice-size",
            f"{what}: Slice size must be one of {sizes}, got {slice_.size} (`{slice_}`)",
            notes=('pad the slice mapping, e.g. `m["A / 8 # 256"]`',),
        )


def check_whole_bytes(dtype: DType, count: int, what: str) -> None:
    """A 4-bit tensor packs two elements per byte and memory is addressed in bytes: each block the
    hardware places on its own (a chip's HBM element, a slice's DM element) must be whole bytes."""
    if count * dtype.bits % 8:
        raise VerifyError(
            "subbyte-alignment",
            f"{what}: {count} {dtype} elements make {count * dtype.bits} bits, not a whole number of bytes "
            f"({dtype} packs two elements per byte)",
            notes=('pad the element mapping to an even size, e.g. `m["O # 4"]`',),
        )


def check_capacity(rule: str, memory: str, dtype: DType, count: int, limit: int, unit: str) -> None:
    check_whole_bytes(dtype, count, f"{memory} tensor element ({unit})")
    used = dtype.nbytes(count)
    if used > limit:
        raise VerifyError(
            rule,
            f"{memory} data must fit the {memory} ({limit} bytes {unit}): {count} × {dtype} = {used} bytes",
        )


def check_sizes_preserved(old: tuple[Mapping, ...], new: tuple[Mapping, ...], what: str) -> None:
    for level, a, b in zip(("Cluster", "Slice"), old, new, strict=True):
        if a.size != b.size:
            raise VerifyError(
                "size-preserved",
                f"{what}: {level} size must be preserved: `{a}` has {a.size} positions, `{b}` has {b.size}",
            )


def check_dma_layout(
    src: Mapping, dst: Mapping, src_element: Mapping, dst_element: Mapping, dtype: DType, min_align: int, what: str
) -> None:
    """DMA writes into SRAM move 8-byte units: the burst both element layouts share must end on that
    boundary, and so must every destination stride from the burst outward (`assert_dma_layout`)."""
    _, packet, _ = dma_tails(src_element, dst_element)
    if packet * dtype.bits % (8 * min_align):
        raise VerifyError(
            "dma-tail-alignment",
            f"{what}: DMA tail alignment violation: reachable destination tail end is not aligned to "
            f"{min_align} bytes: the innermost run `{src_element}` → `{dst_element}` shares is {packet} "
            f"elements = {_bytes(packet, dtype)} bytes",
            notes=(f"keep the innermost axis contiguous on both sides, or pad it to a multiple of {min_align} bytes",),
        )
    (entries,) = sequence([src], [dst], Mode.CARVE)
    stride = 1
    for entry in reversed(entries):
        if stride >= packet and stride * dtype.bits % (8 * min_align):
            raise VerifyError(
                "dma-stride-alignment",
                f"{what}: DMA address stride alignment violation: destination stream stride {stride} (at or "
                f"past the burst packet) is {_bytes(stride, dtype)} bytes, not aligned to {min_align}-byte "
                "granularity",
            )
        stride *= entry.size


def _bytes(count: int, dtype: DType) -> str:
    """The bytes `count` elements take, as a number (half a byte for an odd count of a 4-bit type)."""
    return f"{count * dtype.bits / 8:g}"


def check_memset_view(window: int, element: Mapping, whole: Mapping) -> None:
    """`memset` fills a whole DM tensor: one ParallelMemSet command covers the buffer's region in every
    slice; a ranged fill (a tile of it) has no command yet, upstream's rule too."""
    if window or element != whole:
        raise VerifyError(
            "memset-view",
            f"memset fills a whole DM tensor (`tensor.view_mut()`), not the view `{element}` of `{whole}`",
            notes=("fill the whole tensor, then write the other cells with `commit_view` or `to_dm_view`",),
        )


def check_shuffle(pattern: list[int], dim: int, level: Mapping, what: str) -> None:
    """A shuffle pattern `pattern[target] = source` over a level of `dim` positions: upstream's const
    `CHIP_DIM`/`CLUSTER_DIM` is the level's size, and every source and target lies inside it."""
    if dim != level.size:
        raise VerifyError(
            "shuffle-pattern",
            f"{what}: the level `{level}` has {level.size} positions, the shuffle's dimension is {dim}",
        )
    if len(pattern) > dim or any(not 0 <= source < dim for source in pattern):
        raise VerifyError(
            "shuffle-pattern",
            f"{what}: the pattern {pattern} must name at most {dim} targets, each with a source in 0..{dim - 1}",
        )
