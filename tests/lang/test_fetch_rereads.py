"""A fetch may read one DM digit at several stream positions: the innermost occurrence reads it, the outer
ones repeat that read (stride 0), as upstream's read mode repeats an axis the DM tensor lacks. A commit
writes, so the same stream needs a DM element that holds the digit as often as the stream names it.

The kernels are module level, so tests/test_differential.py also compares their every byte between the
two backends; here each runs on both against a numpy statement of its meaning.
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *

A, B = axes(A=8, B=32)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["1 # 256"]


@device(chip=1)
def fetch_rows_per_step(ctx: Context, x: HbmTensor[i8, Chip, m["A, B"]]) -> HbmTensor[i8, Chip, m["A, B / 8, B"]]:
    """Each step (a, b8) of `[A, B / 8]` fetches the whole row a (the packet `B`): four copies per row."""
    x_dm = x.to_dm(ctx.tdma, Cluster, Slice, m["A, B"])
    rows = (
        ctx.main.begin(x_dm.view())
        .fetch(m["A, B / 8"], m["B"])
        .collect(m["A, B / 8"], m["B"])
        .commit_trim(m["B"])
        .commit(m["A, B / 8, B"])
    )
    return rows.to_hbm(ctx.tdma, m["A, B / 8, B"])


@device(chip=1)
def fetch_axis_per_step(ctx: Context, x: HbmTensor[i8, Chip, m["B"]]) -> HbmTensor[i8, Chip, m["B, B"]]:
    """Each of the 32 steps of `B` fetches all of `B` (the shape of upstream's `invalid_slice0_mismatch` fetch)."""
    x_dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    rows = (
        ctx.main.begin(x_dm.view()).fetch(m["B"], m["B"]).collect(m["B"], m["B"]).commit_trim(m["B"]).commit(m["B, B"])
    )
    return rows.to_hbm(ctx.tdma, m["B, B"])


def run(kernel, x: np.ndarray, mapping: Mapping, out: Mapping, name: str) -> np.ndarray:
    """`kernel(x)` on backend `name`; the output's buffer in wire order (its positions, digit by digit)."""
    with backend(name) as launch_on, Context.acquire() as ctx:
        inp = HostTensor.from_numpy(x, i8, mapping).to_hbm(ctx.pdma, Chip, mapping)
        return launch_on(kernel, ctx, inp).to_host(ctx.pdma, out).values()


def ramp(n: int) -> np.ndarray:
    """0..n-1 as i8 (wrapping past 127), so every cell differs from its neighbours."""
    return (np.arange(n) % 256).astype(np.uint8).view(np.int8)


@pytest.mark.parametrize("name", ["cpu", "npu"])
def test_every_step_reads_the_whole_row(name):
    x = ramp(A.size * B.size).reshape(A.size, B.size)
    got = run(fetch_rows_per_step, x, m["A, B"], m["A, B / 8, B"], name).reshape(A.size, B.size // 8, B.size)
    for b8 in range(B.size // 8):
        np.testing.assert_array_equal(got[:, b8, :], x)  # result[a, b8, :] == x[a, :]


@pytest.mark.parametrize("name", ["cpu", "npu"])
def test_every_step_reads_the_whole_axis(name):
    x = ramp(B.size)
    got = run(fetch_axis_per_step, x, m["B"], m["B, B"], name).reshape(B.size, B.size)
    np.testing.assert_array_equal(got, np.tile(x, (B.size, 1)))  # result[t, :] == x


def test_commit_of_a_digit_named_twice_needs_it_twice_in_dm():
    with Context.acquire() as ctx:
        dm = DmTensor.new(i8, Chip, Cluster, Slice, m["A, B"])
        trimmed = (
            ctx.main.begin(dm.view()).fetch(m["A, B / 8"], m["B"]).collect(m["A, B / 8"], m["B"]).commit_trim(m["B"])
        )
        with pytest.raises(VerifyError) as info:
            trimmed.commit(m["A, B"])
    assert info.value.rule == "commit-unwritable"
    assert "`B / 8 % 4` is claimed twice by the streams" in info.value.message
