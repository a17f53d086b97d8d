"""The simulator's data movement as strided views, against the element-by-element walk it replaces.

The oracle walks a DMA descriptor or sequencer address by address (`walk_dma`, `walk_sequencer`), checks
every byte against the memory the way the simulator did before views (first offset outside, else first
slice outside) and moves the bytes by index. Random descriptors and sequencers — negative, zero and
slice-crossing strides, overlapping source and destination, padding that reaches outside — must leave
the same bytes everywhere or raise the same fault. A 16 MiB transfer must cost its data, not an index per
byte.
"""

import re
import tracemalloc

import numpy as np
import pytest

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.lir import (
    DM_BASE,
    SLICE_STRIDE,
    Buffer,
    DmaWalk,
    Entry,
    Loop,
    Sequencer,
    walk_dma,
    walk_sequencer,
)
from furiosa_opt.compiler.lower.walks import box
from furiosa_opt.mapping.relayout import live_mask, relaid
from furiosa_opt.sim import SimulatorError, run
from furiosa_opt.sim.memory import SLICES, Fault, Memories
from furiosa_opt.sim.walk import box_mask


def placed(name: str, memory: str, address: int, size: int) -> Buffer:
    """A buffer as an EDF places it (no vISA value or lifetime)."""
    return Buffer(name, "", memory, "u8", [], address, size, 0, -1)


DRAM = placed("H", "dram", 0x2000, 700)
OTHER = placed("G", "dram", 0x9000, 300)
DM = placed("D", "sram", 0, 600)
TRF = placed("T", "trf", 0, 128)


def fresh(seed: int) -> Memories:
    """Memories with random contents (the same for the same seed)."""
    rng = np.random.default_rng(seed)
    dram = {b.name: rng.integers(0, 256, b.bytes, dtype=np.uint8) for b in (DRAM, OTHER)}
    memories = Memories((DRAM, OTHER, DM, TRF), dram)
    for file in memories.files.values():
        file[...] = rng.integers(0, 256, file.shape, dtype=np.uint8)
    return memories


def snapshot(memories: Memories) -> list[bytes]:
    return [memories.dram[name].tobytes() for name in sorted(memories.dram)] + [
        memories.files[name].tobytes() for name in sorted(memories.files)
    ]


# ---- the oracle: one index per byte, checked and moved the way the simulator did before views ----------


def byte_addresses(elements: np.ndarray, unit: int) -> np.ndarray:
    return (elements[:, None] + np.arange(unit, dtype=np.int64)).ravel()


def first_outside(values: np.ndarray, size: int) -> int | None:
    bad = np.flatnonzero((values < 0) | (values >= size))
    return int(values[bad[0]]) if len(bad) else None


def locate(memories: Memories, buffer: Buffer, addresses: np.ndarray) -> tuple:
    """The index into the DRAM array or DM file of each byte address, or raise the walk's first fault."""
    if buffer.memory == "dram":
        flat = addresses - buffer.address
        if (bad := first_outside(flat, buffer.bytes)) is not None:
            raise Fault(
                f"DRAM address {bad + buffer.address:#x} is outside {buffer.name} "
                f"({buffer.bytes} bytes at {buffer.address:#x})"
            )
        return (flat,)
    slices, offsets = np.divmod(addresses - DM_BASE, SLICE_STRIDE)
    size = memories.files["sram"].shape[1]
    if (bad := first_outside(offsets, size)) is not None:
        raise Fault(f"SRAM offset {bad} is outside the {size} bytes placed per slice")
    if (bad := first_outside(slices, SLICES)) is not None:
        raise Fault(f"DM slice {bad} does not exist (a chip has {SLICES})")
    return slices, offsets


def walked_dma(memories: Memories, source: Buffer, target: Buffer, config: DmaWalk, unit: int) -> None:
    src, dst = walk_dma(config.src_base, config.dst_base, config.packet, config.loops, unit)
    array = {"dram": lambda b: memories.dram[b.name], "sram": lambda b: memories.files["sram"]}
    data = array[source.memory](source)[locate(memories, source, byte_addresses(src, unit))]
    array[target.memory](target)[locate(memories, target, byte_addresses(dst, unit))] = data


def outcome(action) -> str | None:
    try:
        action()
    except Fault as fault:
        return str(fault)
    return None


# ---- random descriptors ----------------------------------------------------------------------------------


def packed_strides(rng: np.random.Generator, sizes: list[int], inner: int) -> list[int]:
    """Strides that visit every byte at most once: the loops laid out in a random order, forwards or
    backwards, some with gaps between their steps."""
    strides = [0] * len(sizes)
    step = inner
    for i in rng.permutation(len(sizes)):
        strides[i] = step * int(rng.choice([1, -1]))
        step *= max(1, sizes[i]) * int(rng.choice([1, 1, 3]))
    return strides


def descriptor(rng: np.random.Generator, source: Buffer, target: Buffer, unit: int) -> DmaWalk:
    sizes = [int(n) for n in rng.integers(0, 5, rng.integers(0, 4))]
    packet = unit * int(rng.integers(0, 5)) + int(rng.integers(0, 2) * rng.integers(0, unit))
    dst = packed_strides(rng, sizes, max(packet, 1))
    src = [int(rng.choice([0, -packet, packet, 2 * packet + 1, -7, s])) for s in dst]

    def base(buffer: Buffer, strides: list[int]) -> int:
        if buffer.memory == "dram":
            return buffer.address + int(rng.integers(-20, buffer.bytes))
        return DM_BASE + int(rng.integers(0, 4)) * SLICE_STRIDE + int(rng.integers(-20, DM.bytes))

    if target.memory == "sram":  # some loops step across slices, as a descriptor's slice levels do
        dst = [s + int(rng.choice([0, 0, 1, -1])) * SLICE_STRIDE for s in dst]
    if source.memory == "sram":
        src = [s + int(rng.choice([0, 0, 1, -1])) * SLICE_STRIDE for s in src]
    loops = [Loop(n, s, d) for n, s, d in zip(sizes, src, dst, strict=True)]
    return DmaWalk(base(source, src), base(target, dst), packet, loops)


ROUTES = [(DRAM, DM), (DM, DRAM), (DM, DM), (DRAM, DRAM), (DRAM, OTHER)]


@pytest.mark.parametrize("route", range(len(ROUTES)), ids=[f"{s.memory}-{t.name}" for s, t in ROUTES])
def test_a_dma_moves_and_faults_like_the_byte_walk(route):
    source, target = ROUTES[route]
    rng = np.random.default_rng(route)
    moved = faults = 0
    for case in range(300):
        unit = int(rng.choice([1, 2, 4]))
        config = descriptor(rng, source, target, unit)
        strided, walked = fresh(case), fresh(case)
        expected = outcome(lambda: walked_dma(walked, source, target, config, unit))  # noqa: B023
        assert outcome(lambda: strided.dma(source, target, config, unit)) == expected, config  # noqa: B023
        assert snapshot(strided) == snapshot(walked), config
        moved += expected is None and config.packet >= unit and all(loop.size for loop in config.loops)
        faults += expected is not None
    assert moved > 50 and faults > 15  # both outcomes are exercised


def test_overlapping_source_and_destination_read_before_writing():
    """A DM → DM move one element up: every byte is read before any is written, as the walk did."""
    memories = fresh(1)
    before = memories.files["sram"][3].copy()
    config = DmaWalk(DM_BASE + 3 * SLICE_STRIDE, DM_BASE + 3 * SLICE_STRIDE + 4, 4, [Loop(100, 4, 4)])
    memories.dma(DM, DM, config, 4)
    assert np.array_equal(memories.files["sram"][3, 4:404], before[:400])
    assert np.array_equal(memories.files["sram"][3, :4], before[:4])


def test_a_store_over_the_bytes_a_load_read_writes_what_was_read():
    """A load with every position live may be a view of DM (no copy); a store of it one element up, over the
    bytes it reads (a fetch and a commit of one command overlapping), writes the values as they were."""
    memories = fresh(2)
    before = memories.files["sram"].copy()
    loaded = memories.load("sram", 0, ((100,), (4,)), 4)
    assert np.shares_memory(loaded, memories.files["sram"])  # the view, not a copy
    memories.store("sram", 4, ((100,), (4,)), 4, loaded)
    assert np.array_equal(memories.files["sram"][:, 4:404], before[:, :400])
    assert np.array_equal(memories.files["sram"][:, :4], before[:, :4])


# ---- random sequencers (the Tensor Unit's fetch and commit) ------------------------------------------------


def sequencer_case(rng: np.random.Generator, unit: int, distinct: bool) -> tuple[Sequencer, np.ndarray | None]:
    """A sequencer over DM (memory 0) and a live mask; `distinct`: no two live positions share an address."""
    sizes = [int(n) for n in rng.integers(1, 5, rng.integers(1, 4))]
    strides = packed_strides(rng, sizes, unit) if distinct else [int(rng.choice([0, unit, -unit, 3])) for _ in sizes]
    entries = [Entry(n, s, int(rng.choice([0, 0, 1])) if not distinct else 0) for n, s in zip(sizes, strides)]  # noqa: B905
    sequencer = Sequencer("D", DM_BASE + int(rng.integers(-40, DM.bytes + 8)), entries[:1], entries[1:], unit)
    offsets = walk_sequencer(sequencer, 0) - DM_BASE
    live = [
        None,
        rng.random(len(offsets)) < 0.8,
        (rng.random(len(offsets)) < 0.8) & (offsets >= 0) & (offsets + unit <= DM.bytes),  # padding outside
    ][int(rng.integers(0, 3))]
    return sequencer, live


def reaches_outside(sequencer: Sequencer, unit: int) -> bool:
    """Whether some position, live or not, reaches outside DM (so no view of the whole walk exists)."""
    offsets = walk_sequencer(sequencer, 0) - DM_BASE
    return bool(offsets.min() < 0 or offsets.max() + unit > DM.bytes)


def loops_of(sequencer: Sequencer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    entries = [*sequencer.time, *sequencer.packet]
    return tuple(e.size for e in entries), tuple(e.stride if e.memory == 0 else 0 for e in entries)


def walked_offsets(memories: Memories, sequencer: Sequencer, live: np.ndarray | None, unit: int) -> np.ndarray:
    offsets = walk_sequencer(sequencer, 0) - DM_BASE
    at = byte_addresses(offsets if live is None else offsets[live], unit)
    size = memories.files["sram"].shape[1]
    if (bad := first_outside(at, size)) is not None:
        raise Fault(f"SRAM offset {bad} is outside the {size} bytes placed per slice")
    return at


def test_a_sequencer_reads_like_the_address_walk():
    rng = np.random.default_rng(7)
    read = faults = padded_outside = views = 0
    for case in range(400):
        unit = int(rng.choice([1, 2, 4]))
        sequencer, live = sequencer_case(rng, unit, distinct=False)
        memories = fresh(case)
        positions = len(walk_sequencer(sequencer, 0))
        start, loops = sequencer.base - DM_BASE, loops_of(sequencer)
        try:
            at = walked_offsets(memories, sequencer, live, unit)
        except Fault as fault:
            with pytest.raises(Fault, match=f"^{re.escape(str(fault))}$"):
                memories.load("sram", start, loops, unit, live)
            faults += 1
            continue
        expected = np.zeros((SLICES, positions, unit), dtype=np.uint8)
        expected[:, np.flatnonzero(live) if live is not None else slice(None)] = memories.files["sram"][:, at].reshape(
            SLICES, -1, unit
        )
        assert np.array_equal(memories.load("sram", start, loops, unit, live), expected)
        # a fetch's load (`digits`): a walk whose positions do not flatten stays its view [slices, loop sizes…, unit]
        digits = memories.load("sram", start, loops, unit, live, digits=True)
        assert np.array_equal(digits.reshape(SLICES, -1, unit), expected)
        if digits.ndim > 3:
            assert np.shares_memory(digits, memories.files["sram"])
            views += 1
        read += 1
        padded_outside += reaches_outside(sequencer, unit)
    assert read > 100 and faults > 20 and padded_outside > 10  # padding that reaches outside is read as zero
    assert views > 10


def test_a_sequencer_writes_like_the_address_walk():
    rng = np.random.default_rng(8)
    written = faults = padded_outside = 0
    for case in range(400):
        unit = int(rng.choice([1, 2, 4]))
        sequencer, live = sequencer_case(rng, unit, distinct=True)
        strided, walked = fresh(case), fresh(case)
        positions = len(walk_sequencer(sequencer, 0))
        data = np.random.default_rng(case).integers(0, 256, (SLICES, positions, unit), dtype=np.uint8)

        def by_index():
            at = walked_offsets(walked, sequencer, live, unit)  # noqa: B023
            walked.files["sram"][:, at] = (data if live is None else data[:, live]).reshape(SLICES, -1)  # noqa: B023

        expected = outcome(by_index)
        got = outcome(lambda: strided.store("sram", sequencer.base - DM_BASE, loops_of(sequencer), unit, data, live))  # noqa: B023
        assert got == expected
        assert snapshot(strided) == snapshot(walked)
        written += expected is None
        faults += expected is not None
        padded_outside += expected is None and reaches_outside(sequencer, unit)
    assert written > 100 and faults > 20 and padded_outside > 10  # padding that reaches outside is not written


def test_register_files_are_read_and_written_whole():
    memories = fresh(3)
    data = np.arange(SLICES * 24, dtype=np.uint32).view(np.uint8).reshape(SLICES, 24, 4)
    memories.store("trf", 8, ((24,), (4,)), 4, data)
    assert np.array_equal(memories.files["trf"][:, 8:104], data.reshape(SLICES, -1))
    assert np.array_equal(memories.load("trf", 8, ((24,), (4,)), 4), data)
    with pytest.raises(Fault, match=r"^TRF offset 128 is outside the 128 bytes placed per slice$"):
        memories.load("trf", 40, ((24,), (4,)), 4)


def test_dm_buffers_beyond_a_slice_are_refused():
    with pytest.raises(Fault, match=r"DM buffers reach 524289 bytes per slice, a slice has 524288"):
        Memories((placed("D", "sram", 1, 512 << 10),), {})


# ---- a 16 MiB move costs its data ----------------------------------------------------------------------------

TA, TB, TC = axes(TA=256, TB=256, TC=256)


@device
def dm_round_trip(ctx: Context, x: HbmTensor[i8, m["1"], m["TB, TA, TC"]]) -> HbmTensor[i8, m["1"], m["TA, TB, TC"]]:
    """HBM → DM → DM (a transpose inside each slice) → HBM: 16 MiB each way."""
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["TA / 4"], m["TA % 4, TB, TC"])
    moved = dm.to_dm(ctx.tdma, m["TA / 4"], m["TB, TA % 4, TC"])
    return moved.to_hbm(ctx.tdma, m["TA, TB, TC"])


def test_a_16_mib_transfer_costs_the_placed_bytes_plus_its_data():
    edf = read_edf(compile_kernel(dm_round_trip).edf)
    data = np.random.default_rng(0).integers(-128, 128, (256, 256, 256), dtype=np.int8)
    held = sum(b.bytes for b in edf.buffers if b.memory == "dram") + SLICES * sum(
        max((b.address + b.bytes for b in edf.buffers if b.memory == memory), default=0)
        for memory in ("sram", "trf", "vrf")
    )
    tracemalloc.start()
    try:
        (out,) = run(edf, [data.tobytes()])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(np.frombuffer(out, dtype=np.int8).reshape(256, 256, 256), data.transpose(1, 0, 2))
    transfer = data.nbytes
    # placed: 2 × 16 MiB of HBM and 512 slices × 512 KiB of DM; beyond it, the DM → DM source copy and the
    # output's bytes. An index per byte (what the simulator kept before) needs 8 bytes per byte moved.
    assert peak < held + 3 * transfer, f"peak {peak >> 20} MiB, placed {held >> 20} MiB"


def test_a_dm_extent_beyond_a_slice_names_the_kernel():
    edf = read_edf(compile_kernel(dm_round_trip).edf)
    for b in edf.buffers:
        if b.memory == "sram":
            b.address += 512 << 10
    with pytest.raises(SimulatorError, match=r"^kernel .*dm_round_trip: its DM buffers reach \d+ bytes per slice"):
        run(edf, [bytes(1 << 24)])


# ---- layouts with composite atoms: beyond view plans, moved and masked by index ----------------------------

P, Q = axes(P=256, Q=8)


def test_composite_layouts_move_by_index_map_and_mask_by_decoding():
    composite = m["[Q, P] # 2100"]  # Q-major over P, then 52 padding positions
    values = np.random.default_rng(0).integers(0, 1000, (3, 2100)).astype(np.int32)
    got = relaid(values, composite.factors, m["P, Q"].factors, broadcast=False)
    assert np.array_equal(got, values[:, :2048].reshape(3, 8, 256).transpose(0, 2, 1).reshape(3, 2048))
    assert np.array_equal(live_mask(composite.factors), np.arange(2100) < 2048)
    assert np.array_equal(box_mask(box(m["P # 300, Q"])), (np.arange(300) < 256).repeat(8))
    assert box_mask(box(m["P, Q"])) is None
