"""Rules of the indirect DMAs (gather and scatter), whose addresses come from an index tensor at run
time: which axis the index selects, what the payload is, and how large an on-chip index may be.

A gather reads rows of a table (`HbmTensor`) into a DM tensor: the output's axes are the index's axes
(one output row per index cell) and the payload axes it shares with the table; the one table axis left
over is the gather axis the index values select. A scatter writes the rows of a DM tensor named by the
key axes into an HBM tensor: the output axis left over after the payload is the scatter axis.

| rule | upstream |
|---|---|
| `indirect-index` | the index is an `i32` tensor (`HbmTensor<i32>` / `DmTensor<i32>` in the signatures) |
| `gather-axes` | `gather_params`: the table minus the payload must leave exactly one axis |
| `scatter-key` | `dma_scatter`'s assert: the key is contained in the source's `Slice ⊗ Element` |
| `scatter-axes` | `scatter_params`: the output minus the payload must leave exactly one axis |
| `indirect-row` | the hardware adds a row offset to one base: the selected axis is one digit of its tensor |
| `gather-index-spm` | `verify_indirect_tensor_dma`: an unscaled index list fits one PE's SPM (4 KiB) |
"""

from __future__ import annotations

from dataclasses import dataclass

from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType, i32
from furiosa_opt.mapping import Mapping
from furiosa_opt.mapping.factors import Comp, SymAtom


@dataclass(frozen=True)
class Indirect:
    """The axes of one gather or scatter, each as (name, size) in order of first appearance."""

    selected: tuple[str, int]  # the gather axis of the table, or the scatter axis of the output
    index: tuple[tuple[str, int], ...]  # the index tensor's axes (the key of a scatter)
    payload: tuple[tuple[str, int], ...]  # the axes every selected row carries

    @property
    def row(self) -> int:
        """Elements per selected row: what a scaled index's byte offsets count in (times the bytes)."""
        size = 1
        for _, n in self.payload:
            size *= n
        return size


def axes_of(mapping: Mapping) -> tuple[tuple[str, int], ...]:
    """The live axes of a mapping, in order of first appearance, each with the coordinates it covers
    (`Indices % 32` covers 32 of 128: a tile's chunk; an axis inside a composite covers all of it)."""
    found: dict[str, int] = {}

    def walk(factors, whole: bool) -> None:
        for f in factors:
            if isinstance(f.atom, SymAtom) and f.m > 1:
                extent = f.atom.n if whole else min(f.atom.n, f.s * f.m)
                found[f.atom.name] = max(found.get(f.atom.name, 0), extent)
            elif isinstance(f.atom, Comp):
                walk(f.atom.k, True)

    walk(mapping.factors, False)
    return tuple(found.items())


def check_index(dtype: DType, what: str) -> None:
    if dtype != i32:
        raise VerifyError("indirect-index", f"{what}: the index tensor holds i32 row offsets, not {dtype}")


def gather(table: Mapping, index: Mapping, out: Mapping) -> Indirect:
    """A gather's axes: `out` is the gathered DM tensor's mapping (all levels), `table` the table's."""
    index_axes = axes_of(index)
    names = {name for name, _ in index_axes}
    payload = tuple(axis for axis in axes_of(out) if axis[0] not in names)
    table_axes = dict(axes_of(table))
    missing = [name for name, _ in payload if name not in table_axes]
    left = [axis for axis in table_axes.items() if axis[0] not in dict(payload)]
    if missing or len(left) != 1:
        raise VerifyError(
            "gather-axes",
            f"dma_gather: the output `{out}` has the index's axes {sorted(names)} and the payload "
            f"{[n for n, _ in payload]}, which must be the table `{table}`'s axes but one (the gather axis); "
            + (f"the table lacks {missing}" if missing else f"the table has {[n for n, _ in left]} left"),
        )
    return Indirect(left[0], index_axes, payload)


def scatter(source: Mapping, spatial: Mapping, key: Mapping, index: Mapping, out: Mapping) -> Indirect:
    """A scatter's axes: `source` is the DM tensor's mapping (all levels), `spatial` its `Slice ⊗ Element`."""
    key_axes, spatial_axes = axes_of(key), dict(axes_of(spatial))
    outside = [name for name, _ in key_axes if name not in spatial_axes]
    if outside:
        raise VerifyError(
            "scatter-key",
            f"dma_scatter: the key `{key}` must lie in the source's slice and element `{spatial}`; "
            f"{outside} do not (a key split across chip and element cannot be addressed by an indirect DMA)",
        )
    if {n for n, _ in axes_of(index)} != {n for n, _ in key_axes}:
        raise VerifyError(
            "scatter-key", f"dma_scatter: the index `{index}` must hold one offset per key cell of `{key}`"
        )
    names = {name for name, _ in key_axes}
    payload = tuple(axis for axis in axes_of(source) if axis[0] not in names)
    out_axes = axes_of(out)
    left = [axis for axis in out_axes if axis[0] not in dict(payload)]
    missing = [name for name, _ in payload if name not in dict(out_axes)]
    if missing or len(left) != 1:
        raise VerifyError(
            "scatter-axes",
            f"dma_scatter: the output `{out}` must hold the payload {[n for n, _ in payload]} and one more axis "
            f"(the scatter axis); " + (f"it lacks {missing}" if missing else f"it has {[n for n, _ in left]} besides"),
        )
    return Indirect(left[0], key_axes, payload)


def check_spm_index(count: int, what: str) -> None:
    """An unscaled index is read from one PE's scratchpad: its cells must fit there."""
    if count * 4 > RNGD.spm_bytes_per_pe:
        raise VerifyError(
            "gather-index-spm",
            f"{what}: the unscaled index has {count} i32 cells ({count * 4} bytes); it is read from one PE's "
            f"scratchpad, which holds {RNGD.spm_bytes_per_pe} bytes",
            notes=(
                "scale the index on-device and use dma_gather_scaled, or split the index into chunks of at most "
                f"{RNGD.spm_bytes_per_pe // 4} cells",
            ),
        )
