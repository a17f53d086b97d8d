"""The simulator's walks against loops written out (`itertools.product`), and its refusals of walks that do
not fit their destination."""

import itertools

import ml_dtypes
import numpy as np
import pytest

from furiosa_opt.sim.memory import Fault
from furiosa_opt.sim.walk import box_mask, extent, gather


def visited(walk: list[int]) -> list[int]:
    """The source position of each destination position, loop by loop (outer first)."""
    sizes, strides = walk[::2], walk[1::2]
    return [sum(i * s for i, s in zip(index, strides, strict=True)) for index in itertools.product(*map(range, sizes))]


@pytest.mark.parametrize(
    "walk",
    [[8, 1, 4, 8], [4, 0, 8, 1], [2, 16, 3, 1, 4, 4], [6, 7]],  # a transpose, a broadcast, three loops, an over-read
)
def test_a_walk_reads_what_its_loops_address(walk):
    values = np.arange(3 * 32, dtype=np.int32).reshape(3, 32)
    padded = np.concatenate([values, np.zeros((3, 64), np.int32)], axis=1)  # an over-read reads zero
    got = gather(values, walk, [], len(visited(walk)), None)
    assert np.array_equal(got, padded[:, visited(walk)])
    assert extent(walk) == max(visited(walk)) + 1


def test_padding_reads_zero_and_bf16_moves_bit_for_bit():
    values = (np.arange(2 * 16, dtype=np.float32).reshape(2, 16) + 0.5).astype(ml_dtypes.bfloat16)
    live = box_mask([4, 3, 4, 4])  # the last of 4 rows is padding
    got = gather(values, [4, 1, 4, 4], [], 16, live)
    assert got.dtype == values.dtype
    expected = values[:, visited([4, 1, 4, 4])].view(np.uint16)
    expected[:, ~live] = 0
    assert np.array_equal(got.view(np.uint16), expected)


def test_a_table_reads_its_positions_and_minus_one_is_padding():
    values = np.arange(10, dtype=np.int8).reshape(1, 10)
    assert gather(values, [], [9, -1, 0, 3], 4, None).tolist() == [[9, 0, 0, 3]]


def test_a_walk_that_does_not_fit_its_destination_is_a_fault():
    values = np.zeros((1, 8), np.int32)
    with pytest.raises(Fault, match="visits 8 positions, its destination has 4"):
        gather(values, [8, 1], [], 4, None)
    with pytest.raises(Fault, match="reads position 8 of a source of 8"):
        gather(values, [], [0, 8], 2, None)


def test_a_box_is_an_and_of_its_digits():
    assert box_mask([2, 2, 3, 3]) is None
    assert box_mask([2, 1, 3, 2]).tolist() == [True, True, False, False, False, False]
