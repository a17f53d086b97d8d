"""The HBM address map against the book's bit table ("Address Space in a Chip"), read by hand and by a
plain per-address loop written from the book's formula."""

import numpy as np
import pytest

from furiosa_opt.memsys.hbm import BANKS, hbm_place

FIELDS = ("byte", "stack", "channel", "bank_group", "bank", "slice", "row")

# the fields the address with only bit k set lands in, from the book's table; the channel's share of
# bits 13–28 is the XOR (bit k adds channel bit (k − 13) mod 4)
ONE_BIT = {
    **{k: {"byte": 1 << k} for k in range(8)},
    8: {"stack": 1},
    **{k: {"channel": 1 << (k - 9)} for k in range(9, 13)},
    13: {"bank_group": 1, "channel": 1},
    14: {"byte": 1 << 8, "channel": 2},
    15: {"byte": 1 << 9, "channel": 4},
    16: {"byte": 1 << 10, "channel": 8},
    17: {"bank": 1, "channel": 1},
    18: {"bank": 2, "channel": 2},
    19: {"bank_group": 2, "channel": 4},
    20: {"slice": 1, "channel": 8},
    **{k: {"row": 1 << (k - 21), "channel": 1 << (k - 21) % 4} for k in range(21, 29)},
    **{k: {"row": 1 << (k - 21)} for k in range(29, 34)},
    34: {"slice": 2},
    35: {"row": 1 << 13},
}


def book_place(address: int) -> tuple[int, ...]:
    """One address, bit by bit, as the book's table and its channel XOR say."""

    def bit(k: int) -> int:
        return address >> k & 1

    channel = address >> 9 & 0xF
    for i in range(4):  # the channel's bit i takes bits 13 + i, 17 + i, 21 + i and 25 + i
        channel ^= (bit(13 + i) ^ bit(17 + i) ^ bit(21 + i) ^ bit(25 + i)) << i
    slice_, row = bit(20) | bit(34) << 1, (address >> 21 & 0x1FFF) | bit(35) << 13
    if slice_ == 3:  # no slice 3: slice 2's upper rows (see arch.py)
        slice_, row = 2, row | 1 << 13
    byte = (address & 0xFF) | (address >> 14 & 0x7) << 8
    return byte, bit(8), channel, bit(13) | bit(19) << 1, address >> 17 & 0x3, slice_, row


def as_tuples(addresses) -> list[tuple[int, ...]]:
    place = hbm_place(addresses)
    return list(zip(*(getattr(place, f).tolist() for f in FIELDS), strict=True))


@pytest.mark.parametrize("k", range(36))
def test_the_address_with_one_bit_set_lands_where_the_table_says(k):
    place = hbm_place(np.array([1 << k]))
    found = {f: int(getattr(place, f)[0]) for f in FIELDS}
    assert found == {f: ONE_BIT[k].get(f, 0) for f in FIELDS}


def test_random_addresses_match_the_per_address_formula():
    rng = np.random.default_rng(35)
    addresses = rng.integers(0, 48 << 30, 4000)
    assert as_tuples(addresses) == [book_place(int(a)) for a in addresses]


def test_consecutive_256_byte_units_walk_the_channels_by_the_xor():
    units = np.arange(4096) * 256
    place = hbm_place(units)
    assert place.channel_id.tolist() == [book_place(int(a))[1] * 16 + book_place(int(a))[2] for a in units]
    # unit u: the stack is its bit 0 (address bit 8), the channel its bits 1–4 (9–12), and from unit 32 on
    # bit 13 flips the channel's bit 0; so every 32 units take each of the 32 channels once
    assert place.channel_id[:64].tolist() == [(u & 1) * 16 + ((u >> 1 & 15) ^ (u >> 5 & 1)) for u in range(64)]
    assert (np.sort(place.channel_id.reshape(-1, 32), axis=1) == np.arange(32)).all()


def test_the_channel_xor_cancels_in_pairs():
    """Bits 9 and 13 both feed channel bit 0: set together, the channel is 0 again (bit 13 still picks a bank
    group); bits 13, 17, 21 and 25 all feed it too, so four of them cancel."""
    place = hbm_place([1 << 9 | 1 << 13, 1 << 13 | 1 << 17 | 1 << 21 | 1 << 25, 1 << 9 | 1 << 17])
    assert place.channel.tolist() == [0, 0, 0]
    assert place.bank_group.tolist() == [1, 1, 0] and place.bank.tolist() == [0, 1, 1]


def test_every_place_is_in_range_and_no_two_addresses_share_one():
    rng = np.random.default_rng(7)
    addresses = np.unique(np.concatenate([rng.integers(0, 48 << 30, 20000), (48 << 30) - 1 - np.arange(64)]))
    place = hbm_place(addresses)
    limits = {"byte": 2048, "stack": 2, "channel": 16, "bank_group": 4, "bank": 4, "slice": 3, "row": 16384}
    for field, limit in limits.items():
        values = getattr(place, field)
        assert values.min() >= 0 and values.max() < limit, field
    assert place.bank_id.max() < BANKS == 1536
    assert len(set(as_tuples(addresses))) == len(addresses)


def test_the_three_top_regions_fill_slices_0_to_2_with_both_row_halves():
    """Bits 35, 34 and 20 take six of their eight values below 48 GiB; they give six (slice, top row bit)."""
    tops = [(b35, b34, b20) for b35 in (0, 1) for b34 in (0, 1) for b20 in (0, 1) if not (b35 and b34)]
    place = hbm_place([b35 << 35 | b34 << 34 | b20 << 20 for b35, b34, b20 in tops])
    pairs = set(zip(place.slice.tolist(), (place.row >> 13).tolist(), strict=True))
    assert pairs == {(s, r) for s in range(3) for r in range(2)}


def test_the_fields_are_the_inputs_shape_and_read_only():
    place = hbm_place(np.arange(6).reshape(2, 3) * 256)
    assert place.stack.shape == (2, 3) and place.stack.tolist() == [[0, 1, 0], [1, 0, 1]]
    with pytest.raises(ValueError, match="read-only"):
        place.row[0, 0] = 1


@pytest.mark.parametrize(
    ("addresses", "error", "message"),
    [
        ([48 << 30], ValueError, r"HBM address 51539607552 with 1 byte\(s\) is outside \[0, 51539607552\)"),
        ([0, -1], ValueError, "HBM address -1"),
        ([1.0], TypeError, "HBM address values are float64, not integers"),
    ],
)
def test_an_address_outside_the_chip_is_refused(addresses, error, message):
    with pytest.raises(error, match=message):
        hbm_place(addresses)


def test_an_empty_array_has_empty_fields():
    assert hbm_place([]).bank_id.shape == (0,)
