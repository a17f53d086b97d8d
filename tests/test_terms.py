"""The exact folds' arithmetic (`terms.py`) against plain per-output loops: f32 sums of products one term at
a time from zero (each product and each sum rounded to f32, as upstream folds), i32 wrapping, masks that
leave terms out (also along an axis neither operand holds), and a batch folded in blocks."""

from __future__ import annotations

import numpy as np
import pytest

from furiosa_opt import terms
from furiosa_opt.terms import fold_products, fold_walked


def looped(lhs: np.ndarray, rhs: np.ndarray, keep: np.ndarray, dtype: type) -> np.ndarray:
    """[outputs…]: each output's Σ over the last axis in order, a scalar at a time, only where `keep`."""
    shape = np.broadcast_shapes(lhs.shape[:-1], rhs.shape[:-1], keep.shape[:-1])
    a, b, k = (np.broadcast_to(x, (*shape, x.shape[-1])) for x in (lhs, rhs, keep))
    out = np.zeros(shape, dtype=dtype)
    with np.errstate(over="ignore"):
        for at in np.ndindex(*shape):
            total = dtype(0)
            for t in range(a.shape[-1]):
                if k[at][t]:
                    total = dtype(total + dtype(a[at][t] * b[at][t]))
            out[at] = total
    return out


def test_f32_products_fold_in_order_with_a_mask_wider_than_the_operands():
    rng = np.random.default_rng(5)
    lhs = (rng.standard_normal((3, 1, 9)) * 1e3).astype(np.float32)  # no axis 1: the mask alone has it
    rhs = rng.standard_normal((3, 1, 9)).astype(np.float32)
    keep = rng.random((1, 4, 9)) < 0.7
    keep[..., 0] = True  # the first term needs no mask, so the mask widens the sum midway
    steps = [(lhs[..., t], rhs[..., t]) if t == 0 else (lhs[..., t], rhs[..., t], keep[..., t]) for t in range(9)]
    got = fold_products(steps, np.dtype(np.float32))
    assert got.shape == (3, 4)
    assert np.array_equal(got.view(np.uint32), looped(lhs, rhs, keep, np.float32).view(np.uint32))


def test_i32_products_wrap():
    lhs = np.array([[2**30, 2**30, 7]], dtype=np.int32)
    rhs = np.array([[2, 2, -3]], dtype=np.int32)
    got = fold_products([(lhs[:, t], rhs[:, t]) for t in range(3)], np.dtype(np.int32))
    assert got.tolist() == [-21]  # 2^31 wraps to -2^31, + 2^31 wraps to 0, then -21
    assert np.array_equal(got, looped(lhs, rhs, np.ones((1, 3), bool), np.int32))


def test_no_terms_sum_to_zero():
    assert fold_products([], np.dtype(np.float32)).tolist() == 0.0


@pytest.mark.parametrize("rows", [1, 3, 64])
def test_a_batch_folds_the_same_in_blocks(monkeypatch, rows):
    """`fold_walked` on a batch of 7 rows (the right side broadcasting one) with its accumulator limit set
    so that each block holds `rows` rows: the loops' sums, bit for bit."""
    rng = np.random.default_rng(11)
    outputs, reduced = 6, 5
    lhs = rng.standard_normal((7, outputs, reduced)).astype(np.float32)
    rhs = rng.standard_normal((1, outputs, reduced)).astype(np.float32)
    live = rng.random((outputs, reduced)) < 0.8
    monkeypatch.setattr(terms, "ACCUMULATOR_BYTES", rows * outputs * 4)
    got = fold_walked(lhs, rhs, (np.asarray, np.asarray), live, 1, np.dtype(np.float32))
    expected = looped(lhs, rhs, np.broadcast_to(live, (7, outputs, reduced)), np.float32)
    assert got.shape == (7, outputs)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
