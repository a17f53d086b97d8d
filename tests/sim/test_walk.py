"""The simulator's walks against loops written out (`itertools.product`), and its refusals of walks that do
not fit their destination."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

from furiosa_opt.sim.memory import Fault
from furiosa_opt.sim.walk import _on_digits, box_mask, extent, gather, inner_axes, refined, walked
from furiosa_opt.terms import fold_terms, fold_walked


def visited(walk: list[int]) -> list[int]:
    """The source position of each destination position, loop by loop (outer first)."""
    sizes, strides = walk[::2], walk[1::2]
    return [sum(i * s for i, s in zip(index, strides, strict=True)) for index in itertools.product(*map(range, sizes))]


@pytest.mark.parametrize(
    "walk",
    # a transpose, a broadcast, three loops, an over-read; then in order: whole, in two loops, with a loop of one
    # step, and a prefix (fewer positions than the source holds)
    [[8, 1, 4, 8], [4, 0, 8, 1], [2, 16, 3, 1, 4, 4], [6, 7], [32, 1], [4, 8, 8, 1], [4, 8, 1, 5, 8, 1], [16, 1]],
)
def test_a_walk_reads_what_its_loops_address(walk):
    values = np.arange(3 * 32, dtype=np.int32).reshape(3, 32)
    padded = np.concatenate([values, np.zeros((3, 64), np.int32)], axis=1)  # an over-read reads zero
    got = gather(values, walk, [], len(visited(walk)), None)
    assert np.array_equal(got, padded[:, visited(walk)])
    assert extent(walk) == max(visited(walk)) + 1


def test_a_walk_in_order_over_the_whole_source_moves_nothing():
    values = np.arange(2 * 32, dtype=np.int16).reshape(2, 32)
    assert gather(values, [4, 8, 8, 1], [], 32, None) is values
    assert not np.shares_memory(gather(values, [16, 1], [], 16, None), values)  # a prefix is a new array


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


@pytest.mark.parametrize(
    ("lhs", "rhs", "outputs", "reduced"),
    [
        ([4, 8, 8, 1], [4, 0, 8, 1], 4, 8),  # a matrix times a broadcast vector: 4 outputs of 8 terms
        ([2, 16, 2, 4, 4, 1], [2, 0, 2, 1, 4, 2], 4, 4),  # boundaries the sides do not share: both cut
        ([4, 1, 6, 4], [24, 1], 2, 12),  # the loop of 6 cut at the term boundary: 2 outputs of 4 · 3 terms
    ],
)
def test_terms_folded_through_views_equal_terms_copied_out(lhs, rhs, outputs, reduced):
    """The contraction's view path (`refined` loops, `fold_walked`) against the copying one (`gather`,
    `fold_terms`), bit for bit, with a mask that leaves some terms out."""
    rng = np.random.default_rng(3)
    left, right = (rng.standard_normal((2, 64)).astype(np.float32) for _ in range(2))
    live = rng.random((outputs, reduced)) < 0.8
    copied = fold_terms(gather(left, lhs, [], outputs * reduced, None), gather(right, rhs, [], outputs * reduced, None),
                        live, np.float32)  # fmt: skip
    loops = refined([lhs, rhs], reduced)
    assert loops is not None and [n for n, _ in loops[0]] == [n for n, _ in loops[1]]
    views = [walked(values, side).view(np.float32) for values, side in zip((left, right), loops, strict=True)]
    folded = fold_walked(*views, (np.asarray, np.asarray), live, inner_axes(loops[0], reduced), np.float32)
    assert np.array_equal(folded.view(np.uint32), copied.view(np.uint32))


def test_loops_that_a_boundary_cuts_unevenly_are_not_refined():
    assert refined([[6, 1], [2, 3, 3, 1]], 4) is None  # 4 does not divide the 6 positions
    assert refined([[3, 2, 2, 1], [2, 3, 3, 1]], 2) is None  # boundaries 2 and 3 do not nest


def digit_view(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """[2, shape…] values over random memory, a random axis of them rereading (stride 0), as a fetch that
    rereads leaves a stream (`Stream`): a view whose row-major order is the positions."""
    reread = int(rng.integers(len(shape)))
    held = tuple(1 if i == reread else n for i, n in enumerate(shape))
    memory = rng.integers(0, 1 << 16, (2, *held), dtype=np.uint16)
    return np.broadcast_to(memory, (2, *shape))


@pytest.mark.parametrize("seed", range(40))
def test_a_walk_over_a_streams_digits_reads_what_it_reads_over_the_positions(seed):
    """`walked` and `gather` on a stream kept as digits against the same on its positions copied out:
    loops that fit the digits (a view of the digits, nothing copied) and loops that carry between them,
    reach past the end or come from a table (the positions, copied)."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(2, 4)))
    digits = digit_view(rng, shape)
    positions = digits.reshape(2, -1)
    total = positions.shape[1]
    loops = [(int(rng.integers(1, 4)), int(rng.integers(0, total))) for _ in range(rng.integers(1, 3))]
    if extent([x for loop in loops for x in loop]) <= total:
        assert np.array_equal(walked(digits, loops), walked(positions, loops))
    walk = [x for loop in loops for x in loop]
    count = math.prod(n for n, _ in loops)
    if extent(walk) <= total:
        moved = gather(digits, walk, [], count, None)  # an in-order walk leaves the digits as they are
        assert np.array_equal(moved.reshape(2, -1), gather(positions, walk, [], count, None))
    table = rng.integers(-1, total, count).tolist()
    assert np.array_equal(gather(digits, [], table, count, None), gather(positions, [], table, count, None))
    in_order = [total, 1]
    live = rng.random(total) < 0.7
    assert gather(digits, in_order, [], total, None) is digits  # nothing moves: the digits stay
    assert np.array_equal(gather(digits, in_order, [], total, live), gather(positions, in_order, [], total, live))


def test_loops_that_carry_between_digits_are_not_read_as_a_view():
    digits = digit_view(np.random.default_rng(1), (3, 4))
    assert _on_digits((3, 4), [(3, 4), (4, 1)]) == [[1, 0], [0, 1]]  # one digit each: a view
    assert np.shares_memory(walked(digits, [(3, 4), (4, 1)]), digits)  # read in place, nothing copied
    assert _on_digits((3, 4), [(2, 3)]) == [[0, 3]]  # positions 0 and 3: digits (0, 0) and (0, 3)
    assert _on_digits((3, 4), [(3, 3)]) is None  # position 6 is (1, 2): the inner digit carries
    assert _on_digits((3, 4), [(2, 5)]) == [[1, 1]]  # 5 = one of each: 0 then (1, 1)
    assert np.array_equal(walked(digits, [(3, 3)]), walked(digits.reshape(2, -1), [(3, 3)]))
