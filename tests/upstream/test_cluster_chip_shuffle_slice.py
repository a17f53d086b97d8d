"""Port of upstream `furiosa-opt-examples/src/cluster_chip_shuffle_slice.rs` and its answer test
`tests/shuffle_slice_tests.rs`.

A 4-chip kernel: an `[A, B]` i32 tensor is spread over the chips by `A / 4 % 4`, relaid in HBM, moved to a
two-cluster DM layout, and `dm_chip_shuffle` with pattern `[1, 2, 3, 0]` makes a fresh DM tensor whose chip
`t` holds chip `pattern[t]` of the input (chip 1 → 0, 2 → 1, 3 → 2, 0 → 3); the result goes back to HBM.

Differences from upstream: Rust's `to_hbm` and `to_dm` infer their target mappings from the declared result
types; here they are passed explicitly. Rust's const `CHIP_DIM = 4` is the third argument of
`dm_chip_shuffle`. Upstream's answer test runs the CPU backend only; ours runs the CPU backend and the
simulator and compares both with the same numpy oracle (two of them: upstream's per-element formula, and a
gather over the chip digit of `A`).
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

A, B = axes(A=256, B=4096)

Chip = m["A / 4 % 4"]
Element = m["A / 16, A % 4, B"]


@device(chip=4)
def chip_shuffle(ctx: Context, hbm_tensor: HbmTensor[i32, Chip, Element]) -> HbmTensor[i32, Chip, Element]:
    hbm_tensor = hbm_tensor.to_hbm(ctx.tdma, m["B, A % 4, A / 16"])
    dm_tensor = hbm_tensor.to_dm(ctx.tdma, m["A / 2 % 2"], m["B % 16, B / 16 % 16"], m["B / 256, A % 2, A / 16"])
    shuffled = dm_tensor.view().dm_chip_shuffle(ctx.tdma, [1, 2, 3, 0], 4)
    return shuffled.to_hbm(ctx.tdma, Element)


PATTERN = [1, 2, 3, 0]


def upstream_oracle() -> np.ndarray:
    """Upstream's expected vector, element by element as `shuffle_slice_tests.rs` writes it (vectorised)."""
    x = np.arange(A.size * B.size, dtype=np.int32)
    index_a_16 = x // 4096 // 16
    index_a_4 = ((x // 4096) % 16) // 4
    index_a_1 = x // 4096 % 4
    index_b = x % 4096
    out_index_a_4 = np.array(PATTERN, dtype=np.int32)[index_a_4]
    flat = index_a_16 * 4096 * 16 + out_index_a_4 * 4096 * 4 + index_a_1 * 4096 + index_b
    return flat.reshape(A.size, B.size)


def gather_oracle(values: np.ndarray) -> np.ndarray:
    """Output chip `t` (the digit `A / 4 % 4`) is input chip `PATTERN[t]`; every other digit stays."""
    split = values.reshape(A.size // 16, 4, 4, B.size)  # A / 16, A / 4 % 4, A % 4, B
    return split[:, PATTERN].reshape(A.size, B.size)


def test_oracles_agree():
    values = np.arange(A.size * B.size, dtype=np.int32).reshape(A.size, B.size)
    np.testing.assert_array_equal(upstream_oracle(), gather_oracle(values))
    assert not np.array_equal(upstream_oracle(), values)  # the shuffle moves data: an identity cannot pass


@pytest.mark.parametrize("on", ["cpu", "npu"])
def test_chip_shuffle(on):
    values = np.arange(A.size * B.size, dtype=np.int32).reshape(A.size, B.size)
    with backend(on) as launch_, Context.acquire() as ctx:
        hbm_tensor = HostTensor.from_numpy(values, i32, m["A, B"]).to_hbm(ctx.pdma, Chip, Element)
        output = launch_(chip_shuffle, ctx, hbm_tensor)
        got = output.to_host(ctx.pdma, m["A, B"]).to_numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, upstream_oracle())


def test_one_dma_per_target_chip():
    """Upstream composes the shuffle as one DM → DM DMA per target chip, between one-chip tiles."""
    result = compile_kernel(chip_shuffle)
    assert result.ok, result.diagnostics
    assert result.visa_text.count("chip_tile") == 2 * len(PATTERN)
    assert result.visa_text.count("to_dm_view") == len(PATTERN)
