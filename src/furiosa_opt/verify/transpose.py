"""Rules of the Transpose Engine: can `.transpose(time, packet)` swap those Time and Packet axes?

The engine reads `valid_size` elements of each 32-byte packet (Unpack), joins the `packets_per_col`
innermost time steps into one row of `in_cols` elements (Gather), stacks `in_rows` such rows, transposes
the `[in_rows × in_cols]` matrix, keeps its first `out_rows` rows (Trim) and pads each to a flit (Align),
once per remaining time step. So Time must read `[outer, rows, columns]`, the output packet is `rows`
padded to a flit and the output time `[outer, the first out_rows of (columns, valid packet)]`.

Upstream checks this in a closed library (`config_transpose`); the rules are re-derived from the book's
transpose-engine page and upstream's `TransposeError` kinds:

| code | upstream kind | what is wrong |
|---|---|---|
| `transpose-element-bits` | UnsupportedElementBits | elements of 4, 8, 16 or 32 bits only |
| `transpose-input-packet` | InputPacketSize | the input packet is not one 32-byte flit |
| `transpose-output-packet` | OutputPacketSize | the output packet is not one 32-byte flit |
| `transpose-input-padding` | InputPacketPadding | input lanes past `valid_size` are not pure padding |
| `transpose-output-padding` | OutputPacketPadding | output lanes past the row limit are not pure padding |
| `transpose-rows` | RowEvidenceNotPresent, InRowsDoesNotSplitTime | the output rows are not consecutive time steps |
| `transpose-columns` | ConfigColumns, PacketsPerColDoesNotSplitTime | `in_cols` is not one the element size allows |
| `transpose-out-rows` | ConfigRows | more output rows than input columns |
| `transpose-out-time` | CannotPlaceInRows | OutTime is not `[outer, columns]` (or its first rows) |

Upstream's `ConfigPacketWidth`, `ConfigPacketPadding` and `InconsistentPacketsPerCol` check a config a
caller supplies; here the config is always derived, so they cannot arise.
"""

from __future__ import annotations

from dataclasses import dataclass

from furiosa_opt.arch import RNGD
from furiosa_opt.diagnostics import VerifyError
from furiosa_opt.dtypes import DType
from furiosa_opt.mapping import Mapping, MappingError
from furiosa_opt.mapping.algebra import is_padding, padded, pair, resized, split_at
from furiosa_opt.stages import register

LIMITS = dict(RNGD.transpose_limits)


@dataclass(frozen=True)
class TransposeParams:
    """The engine's parameters for one transpose (upstream `TransposeConfig`), all counts in elements."""

    in_rows: int  # time steps stacked into the input matrix
    in_cols: int  # packets_per_col × valid_size
    out_rows: int  # rows kept after the transpose (≤ in_cols)
    packets_per_col: int
    valid_size: int
    iterations: int  # matrices per stream: OutTime::SIZE / out_rows


@dataclass(frozen=True)
class _Split:
    outer: Mapping
    rows: Mapping
    columns: Mapping  # the packets_per_col innermost time steps


@register("rule", "transpose")
def check_transpose(
    dtype: DType, time: Mapping, packet: Mapping, out_time: Mapping, out_packet: Mapping
) -> TransposeParams:
    """The engine parameters that turn `[time, packet]` into `[out_time, out_packet]`, or the rule broken."""
    if dtype.bits not in LIMITS:
        raise VerifyError(
            "transpose-element-bits", f"Transpose: element_bits ({dtype.bits}) must be one of {sorted(LIMITS)}"
        )
    valid, max_rows, legal_cols = LIMITS[dtype.bits]
    flit = RNGD.flit_bytes * 8 // dtype.bits
    for rule, which, mapping in (
        ("transpose-input-packet", "input", packet),
        ("transpose-output-packet", "output", out_packet),
    ):
        if mapping.size != flit:
            raise VerifyError(
                rule,
                f"Transpose {which} packet must be {RNGD.flit_bytes} bytes, got {mapping.size} elements "
                f"(expected {flit} {dtype} elements)",
            )
    lanes = _lanes(packet, valid, "transpose-input-padding", f"input packet beyond valid_size_per_packet ({valid})")
    _lanes(out_packet, max_rows, "transpose-output-padding", f"output packet beyond max_in_rows ({max_rows})")
    splits = [s for s in _splits(time, max_rows) if padded(s.rows, flit) == out_packet]
    if not splits:
        raise VerifyError(
            "transpose-rows",
            f"Transpose: the output packet `{out_packet}` must be up to {max_rows} consecutive time steps of Time "
            f"`{time}`, padded to a flit",
            notes=(f"Time reads [outer, rows, columns]: the rows go to the packet, the columns ({legal_cols} "
                   f"elements of {valid} per packet) to the output time",),
        )  # fmt: skip
    refusal = None
    for split in splits:
        columns = split.columns.size * valid
        if columns not in legal_cols:
            refusal = refusal or VerifyError(
                "transpose-columns",
                f"Transpose: in_cols = packets_per_col ({split.columns.size}) × valid_size ({valid}) = {columns} "
                f"must be one of {list(legal_cols)} for {dtype}",
            )
            continue
        out_rows = out_time.size // split.outer.size
        if out_rows > columns:
            refusal = VerifyError(
                "transpose-out-rows", f"TransposeConfig out_rows ({out_rows}) must be <= in_cols ({columns})"
            )
            continue
        gathered = pair(split.columns, lanes)
        expected = pair(split.outer, resized(gathered, out_rows)) if out_time.size % split.outer.size == 0 else None
        if expected == out_time:
            return TransposeParams(
                split.rows.size, columns, out_rows, split.columns.size, valid, out_time.size // out_rows
            )
        refusal = VerifyError(
            "transpose-out-time",
            f"Transpose OutTime mismatch. Expected `{pair(split.outer, gathered)}` or a trim of its innermost "
            f"{columns} rows, got `{out_time}`",
        )
    raise refusal


def _lanes(packet: Mapping, width: int, rule: str, what: str) -> Mapping:
    """The inner `width` lanes of a packet, after checking the lanes outside them are pure padding."""
    try:
        outside, inside = split_at(packet, width)
    except MappingError:
        outside = inside = None
    if outside is None or not is_padding(outside):
        shown = outside if outside is not None else packet
        raise VerifyError(rule, f"Transpose: {what} must be `1 # n` pure padding, got: `{shown}`")
    return inside


def _splits(time: Mapping, max_rows: int) -> list[_Split]:
    """Every way to read Time as `[outer, rows, columns]` with at most `max_rows` rows, fewest columns first."""
    out = []
    for columns in (q for q in range(1, time.size + 1) if time.size % q == 0):
        for rows in (r for r in range(1, max_rows + 1) if (time.size // columns) % r == 0):
            try:
                rest, inner = split_at(time, columns)
                outer, middle = split_at(rest, rows)
            except MappingError:
                continue
            out.append(_Split(outer, middle, inner))
    return out
