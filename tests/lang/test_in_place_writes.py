"""Writes into a view on the CPU backend go into the base tensor's array in place when that tensor alone
holds it (`cpu.exclusive`), and into a copy otherwise: a tensor that shares the buffer, a reshape of it, or a
numpy array a user still holds never sees the write. The oracle is numpy on copies taken before."""

import weakref

import numpy as np
import pytest
from row_copy_kernels import H, V, write_row

from furiosa_opt import Context, HbmTensor, HostTensor, i32, m
from furiosa_opt.backend import cpu


@pytest.fixture
def table():
    return np.random.default_rng(7).integers(-(2**31), 2**31, (V.size, H.size), dtype=np.int32)


def test_a_tensor_alone_with_its_buffer_is_written_in_place(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        write_row(ctx, source, out, 3)  # the first write copies the zeros out of their stride-0 view
        array = weakref.ref(out.data.base)  # a weak reference: holding the array would make it shared
        for token in (5, 63, 0):
            write_row(ctx, source, out, token)
            assert out.data.base is array()  # the same array, written into
        expected = np.zeros_like(table)
        expected[[3, 5, 63, 0]] = table[[3, 5, 63, 0]]
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy(), expected)


def test_a_tensor_sharing_the_buffer_never_sees_the_write(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        out = HbmTensor.new(i32, m["1"], m["V, H"])
        write_row(ctx, source, out, 1)
        alias = out.reshape(m["1"], m["V / 2, V % 2, H"])  # the same buffer under other mappings
        assert alias.data is out.data
        before = alias.to_host(ctx.pdma).to_numpy().copy()
        array = weakref.ref(out.data.base)
        write_row(ctx, source, out, 2)
        assert array() is alias.data.base is not out.data.base  # shared: the write went into a copy
        assert np.array_equal(alias.to_host(ctx.pdma).to_numpy(), before)
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy()[2], table[2])


def test_a_users_array_and_a_view_of_the_buffer_are_never_written(table):
    with Context.acquire() as ctx:
        source = HostTensor.from_numpy(table, i32, m["V, H"]).to_hbm(ctx.pdma)
        mine = np.zeros((V.size, H.size), np.int32)  # the user keeps it
        out = HostTensor.from_numpy(mine, i32, m["V, H"]).to_hbm(ctx.pdma)
        write_row(ctx, source, out, 4)
        assert not mine.any()
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy()[4], table[4])
        view = out.data.base[: H.size]  # a numpy view of the buffer's array, held here
        kept = view.copy()
        write_row(ctx, source, out, 0)
        assert np.array_equal(view, kept)
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy()[0], table[0])


def test_exclusive_counts_only_the_callers_local():
    def caller() -> tuple[bool, bool]:
        buf = cpu.Buf(np.zeros(8, np.int32))
        alone = cpu.exclusive(buf)
        other = buf  # a second holder
        return alone, cpu.exclusive(other)

    assert caller() == (True, False)
    assert not cpu.exclusive(cpu.Buf(np.broadcast_to(np.int32(0), (8,))))  # a stride-0 view: not its own memory
