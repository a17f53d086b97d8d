"""Where a byte of one chip's HBM lives: stack, channel, slice, bank group, bank, row and byte in the row.

The map is the book's ("Address Space in a Chip"), held in `RNGD.hbm_address_bits`: each field gathers
its address bits, and the channel is then XORed with bits 13–28, four at a time, so that strides which
leave bits 9–12 alone still spread over the channels. The HBM of a chip is 48 GiB from address 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from furiosa_opt.arch import RNGD
from furiosa_opt.memsys.arrays import byte_addresses, read_only

BITS = dict(RNGD.hbm_address_bits)
CHANNELS = RNGD.hbm_stacks_per_chip * RNGD.hbm_channels_per_stack
BANKS_PER_SLICE = RNGD.hbm_bank_groups_per_slice * RNGD.hbm_banks_per_bank_group
BANKS = CHANNELS * RNGD.hbm_slices_per_channel * BANKS_PER_SLICE


def gather_bits(addresses: np.ndarray, bits: tuple[int, ...]) -> np.ndarray:
    """The number whose bit i is bit `bits[i]` of each address: one field of a bit map.

    >>> gather_bits(np.array([0b1010]), (1, 3)).tolist()
    [3]
    """
    field = np.zeros(addresses.shape, np.int64)
    for i, bit in enumerate(bits):
        field |= ((addresses >> bit) & 1) << i
    return field


def channel_xor(addresses: np.ndarray) -> np.ndarray:
    """What the book XORs into the channel field: bits 13–28 folded four at a time (13–16 ^ 17–20 ^ …).

    >>> channel_xor(np.array([1 << 13, 1 << 17, 1 << 29])).tolist()
    [1, 1, 0]
    """
    width = len(BITS["channel"])
    low, high = RNGD.hbm_channel_xor_bits
    folded = np.zeros(addresses.shape, np.int64)
    for start in range(low, high + 1, width):
        folded ^= (addresses >> start) & ((1 << width) - 1)
    return folded


@dataclass(frozen=True, slots=True, eq=False)
class HbmPlace:
    """Where each address of an array lives; every field is a read-only int64 array of the input's shape."""

    byte: np.ndarray  # within the row (2 KiB)
    stack: np.ndarray
    channel: np.ndarray  # within the stack, after the XOR
    bank_group: np.ndarray  # within the slice
    bank: np.ndarray  # within the bank group
    slice: np.ndarray  # within the channel
    row: np.ndarray  # within the bank

    @property
    def channel_id(self) -> np.ndarray:
        """The channel among the chip's 32: stack-major, as the stack bit sits below the channel bits."""
        return self.stack * RNGD.hbm_channels_per_stack + self.channel

    @property
    def bank_id(self) -> np.ndarray:
        """The bank among the chip's 1,536 (stack, channel, slice, bank group, bank): the unit that holds one
        open row, so two accesses with the same bank id and different rows are a row switch."""
        slice_id = self.channel_id * RNGD.hbm_slices_per_channel + self.slice
        return (slice_id * RNGD.hbm_bank_groups_per_slice + self.bank_group) * RNGD.hbm_banks_per_bank_group + self.bank


def hbm_place(addresses: ArrayLike) -> HbmPlace:
    """Where each byte address of one chip's HBM lives, for a whole array at once.

    Bits 20 and 34 spell the slice, but a channel has only three: the addresses that would spell slice 3
    are slice 2's upper rows (arch.py says why), so each of the 48 GiB has a place of its own.

    >>> place = hbm_place([0, 1 << 8, 1 << 9, 1 << 13])
    >>> place.stack.tolist(), place.channel.tolist(), place.bank_group.tolist()
    ([0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1])

    Bit 13 is a bank-group bit and, through the XOR, a channel bit. Bits 34 and 20 together name slice 2's
    upper half of rows:

    >>> top = hbm_place([1 << 34 | 1 << 20])
    >>> top.slice.tolist(), top.row.tolist()
    ([2], [8192])
    """
    a = byte_addresses(addresses, RNGD.hbm_bytes_per_chip, "HBM address")
    fields = {name: gather_bits(a, bits) for name, bits in BITS.items()}
    fields["channel"] ^= channel_xor(a)
    upper = fields["slice"] == RNGD.hbm_slices_per_channel
    fields["slice"][upper] -= 1
    fields["row"][upper] |= 1 << (len(BITS["row"]) - 1)
    return HbmPlace(**{name: read_only(field) for name, field in fields.items()})
