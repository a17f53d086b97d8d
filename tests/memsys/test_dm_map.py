"""The DM maps against the book's bit table ("Bank Structure in a Slice") and its DMN layout."""

import numpy as np
import pytest

from furiosa_opt.arch import RNGD
from furiosa_opt.compiler.lir import DM_BASE, SLICE_STRIDE
from furiosa_opt.memsys.dm import dm_bank_place, dm_place

SLICE = 4 << 20


def test_128_consecutive_bytes_cover_all_16_banks_8_bytes_each():
    place = dm_bank_place(np.arange(128) + 128 * 37)
    assert np.bincount(place.bank).tolist() == [8] * 16
    assert set(place.row.tolist()) == {37}
    assert place.byte.tolist() == list(range(8)) * 16


def test_the_bank_of_offset_8k_is_k_mod_16():
    k = np.arange(65536)
    assert (dm_bank_place(8 * k).bank == k % 16).all()


@pytest.mark.parametrize("k", range(19))
def test_the_offset_with_one_bit_set_lands_where_the_table_says(k):
    place = dm_bank_place([1 << k])
    expected = {"byte": 1 << k if k < 3 else 0, "bank": 1 << (k - 3) if 3 <= k < 7 else 0}
    expected["row"] = 1 << (k - 7) if k >= 7 else 0
    assert {f: int(getattr(place, f)[0]) for f in expected} == expected


def test_row_is_bits_7_to_18_and_bank_bits_3_to_6():
    offsets = np.random.default_rng(3).integers(0, 512 << 10, 5000)
    place = dm_bank_place(offsets)
    assert (place.row == (offsets >> 7) & 0xFFF).all()
    assert (place.bank == (offsets >> 3) & 0xF).all()
    assert (place.byte == offsets & 0x7).all()
    assert place.row.max() < 4096


def test_a_dmn_is_32_consecutive_slices_and_a_cluster_8_dmns():
    slices = np.arange(512)
    place = dm_place(slices * SLICE + 40)
    assert place.dmn_id.tolist() == (slices // 32).tolist()
    assert place.cluster.tolist() == (slices // 256).tolist()
    assert place.dmn.tolist() == (slices // 32 % 8).tolist()
    assert (place.offset == 40).all()


def test_dm_slices_follow_the_lir_addresses():
    """Slice s of cluster c at DM_BASE + (c·256 + s)·SLICE_STRIDE (docs/lir.md); its DMN is s // 32."""
    cluster, slice_ = np.meshgrid(np.arange(2), np.arange(256), indexing="ij")
    offset = (cluster * 7 + slice_ * 8) % RNGD.dm_bytes_per_slice
    lir_address = DM_BASE + (cluster * 256 + slice_) * SLICE_STRIDE + offset
    place = dm_place(lir_address - DM_BASE)
    assert (place.cluster == cluster).all() and (place.slice == slice_).all() and (place.offset == offset).all()
    assert (place.dmn == slice_ // 32).all()
    assert (place.slice_id == cluster * 256 + slice_).all() and (place.dmn_id == cluster * 8 + slice_ // 32).all()
    # the book's DMN_stride: one DMN's 32 slices further on
    assert (dm_place(32 * SLICE_STRIDE + np.arange(8) * 32 * SLICE_STRIDE).dmn == np.arange(1, 9) % 8).all()


@pytest.mark.parametrize(
    ("call", "address", "message"),
    [
        (dm_bank_place, 512 << 10, "DM slice offset 524288"),
        (dm_place, 3 * SLICE + (512 << 10), "DM address 13107200 is 524288 bytes into slice 3, which holds 524288"),
        (dm_place, 512 * SLICE, "DM address 2147483648 with 1 byte"),
        (dm_place, -8, "DM address -8"),
    ],
)
def test_an_address_with_no_byte_behind_it_is_refused(call, address, message):
    with pytest.raises(ValueError, match=message):
        call([0, address])
