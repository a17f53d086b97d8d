"""HostTensor and DLPack: `from_dlpack` from torch and numpy, `__dlpack__` and `__array__` out, bf16 both ways;
when the data is shared and when it is copied (docs/torch.md), checked by writing through one side."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

from furiosa_opt import HostTensor, VerifyError, axes, bf16, f32, i32, m

A, B = axes(A=4, B=2)


def test_a_torch_bf16_tensor_in_a_row_major_layout_is_shared_both_ways():
    source = torch.arange(8, dtype=torch.bfloat16).reshape(4, 2)
    host = HostTensor.from_dlpack(source, bf16, m["A, B"])
    assert host.to_numpy().tolist() == source.float().tolist()
    source[0, 0] = 7  # the producer's write shows in the tensor: no copy was made
    assert host.to_numpy()[0, 0] == 7
    back = torch.from_dlpack(host)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == source.data_ptr()
    array = np.asarray(host)
    assert array.dtype == ml_dtypes.bfloat16 and np.shares_memory(array, host.values())


def test_a_numpy_array_is_shared_and_exported_without_a_copy():
    source = np.arange(8, dtype=np.int32).reshape(4, 2)
    host = HostTensor.from_dlpack(source, i32, m["A, B"])
    assert np.shares_memory(host.values(), source)
    exported = torch.from_dlpack(host)
    exported[3, 1] = -1  # the consumer's write changes the tensor (and the array it shares)
    assert host.to_numpy()[3, 1] == -1 and source[3, 1] == -1


@pytest.mark.parametrize(
    ("source", "dtype", "mapping", "why"),
    [
        (torch.arange(8.0).reshape(4, 2), bf16, m["A, B"], "f32 values rounded to bf16"),
        (torch.arange(8, dtype=torch.bfloat16).reshape(4, 2), bf16, m["A / 2, B, A % 2"], "A split around B"),
        (torch.arange(8, dtype=torch.bfloat16).reshape(4, 2), bf16, m["A, B # 4"], "B padded"),
        (torch.arange(8, dtype=torch.bfloat16).reshape(2, 4).T, bf16, m["A, B"], "a transposed (strided) tensor"),
    ],
)
def test_from_dlpack_copies_when_the_layout_or_dtype_differs(source, dtype, mapping, why):
    expected = source.float().numpy().copy()
    host = HostTensor.from_dlpack(source, dtype, mapping)
    source.zero_()  # the producer's write must not show: the tensor holds a copy
    assert np.array_equal(host.to_numpy().astype(np.float32), expected), why


def test_export_copies_a_layout_that_is_not_the_logical_array():
    values = np.arange(8, dtype=np.float32).reshape(4, 2)
    host = HostTensor.from_numpy(values, f32, m["A / 2, B, A % 2"])
    exported = torch.from_dlpack(host)
    assert exported.tolist() == values.tolist()
    exported.zero_()
    assert host.to_numpy().tolist() == values.tolist()  # the export was a fresh array
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(host, copy=False)
    with pytest.raises(BufferError, match="needs a copy"):
        host.__dlpack__(copy=False, max_version=(1, 0))


def test_copy_true_and_from_numpy_always_copy():
    values = np.arange(8, dtype=np.float32).reshape(4, 2)
    host = HostTensor.from_numpy(values, f32, m["A, B"])
    assert not np.shares_memory(host.values(), values)
    assert not np.shares_memory(np.asarray(host, copy=True), host.values())
    assert not np.shares_memory(host.to_numpy(), host.values())


def test_bf16_round_trips_bit_for_bit_through_torch():
    bits = np.array([0x3F80, 0x7F80, 0xFF80, 0x0001, 0x8000, 0x7FC1, 0xC2F7, 0x0080], np.uint16)
    host = HostTensor.from_numpy(bits.view(ml_dtypes.bfloat16).reshape(4, 2), bf16, m["A, B"])
    through = torch.from_dlpack(host)
    assert through.view(torch.int16).numpy().view(np.uint16).reshape(-1).tolist() == bits.tolist()
    again = HostTensor.from_dlpack(through.clone(), bf16, m["A, B"])
    assert again.to_vec().view(np.uint16).tolist() == bits.tolist()


def test_from_dlpack_refuses_in_one_line():
    with pytest.raises(VerifyError, match=r"from_dlpack: cannot read the producer: .*require") as error:
        HostTensor.from_dlpack(torch.ones(4, 2, requires_grad=True), f32, m["A, B"])
    assert "\n" not in error.value.message
    with pytest.raises(VerifyError, match=r"from_dlpack: expected shape \(4, 2\) \(A=4, B=2\)"):
        HostTensor.from_dlpack(torch.ones(2, 4), f32, m["A, B"])
    with pytest.raises(VerifyError, match="DLPack producer"):
        HostTensor.from_dlpack([1.0, 2.0], f32, m["A"])
