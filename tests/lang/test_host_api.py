"""The host API of upstream's `HostTensor` (`furiosa-opt-std/src/tensor/memory.rs`): `from_vec`, `into_vec`,
`to_vec`, `from_buf`, `to_buf`, `zero`, `into_inner`, `from_safetensors`, and the flat forms of `from_numpy`.

Upstream's buffer holds every position of the mapping in wire order, padding included (`Element::SIZE`
elements), so `from_vec` takes and `into_vec` gives that many values; `from_buf` / `to_buf` are the packed
little-endian image of the same buffer. Upstream's `into_inner` returns its plain `Tensor`, the vehicle of
its oracles; numpy is that vehicle here, so `into_inner` gives the logical array. Upstream's
`from_safetensors` takes an opened view and checks shape and byte count; here it takes a path and a name
and also checks the dtype's safetensors name. Oracles are written out by hand (`struct`, explicit
position formulas, a minimal safetensors writer), not taken from the code under test.
"""

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from furiosa_opt import *
from furiosa_opt.dtypes import i5, i9

A, B, C = axes(A=5, B=4, C=6)


def bits16(array) -> list[int]:
    return np.asarray(array).view(np.uint16).tolist()


# ---- from_vec / into_vec / to_vec ---------------------------------------------------------------------


def test_from_vec_keeps_wire_order_and_padding_as_given():
    # `A # 8`: positions 0..4 hold A = 0..4, positions 5..7 are padding; from_vec stores all eight.
    t = HostTensor.from_vec([10, 11, 12, 13, 14, -1, -2, -3], i8, m["A # 8"])
    assert t.into_vec().tolist() == [10, 11, 12, 13, 14, -1, -2, -3]
    assert t.into_vec().dtype == np.int8
    assert t.to_numpy().tolist() == [10, 11, 12, 13, 14]  # the logical view drops the padding


def test_from_vec_positions_follow_the_mapping():
    # `A % 2, B, A / 2` (A=6 here as C): position = (c % 2) * B * 3 + b * 3 + c // 2.
    values = np.arange(C.size * B.size, dtype=np.int32) * 7 - 50
    t = HostTensor.from_vec(values, i32, m["C % 2, B, C / 2"])
    got = t.to_numpy()  # axes in order of first appearance: C, B
    assert got.shape == (C.size, B.size)
    for c in range(C.size):
        for b in range(B.size):
            assert got[c, b] == values[(c % 2) * B.size * 3 + b * 3 + c // 2]
    assert t.into_vec().tolist() == values.tolist()


def test_from_vec_takes_iterables_and_converts_with_the_user_constructors():
    t = HostTensor.from_vec((x for x in [1.01, 2.0**-130, -3.0, float("inf")]), bf16, m["B"])
    # 1.01 rounds to the nearest bf16 (1 + 2^-7); 2^-130 stays a subnormal (8 units of 2^-133), unlike the
    # engines' f32 -> bf16 leg, which flushes it to zero.
    assert bits16(t.into_vec()) == [0x3F81, 0x0008, 0xC040, 0x7F80]


def test_from_vec_keeps_raw_codes():
    codes = [0x7FC1, 0xFF80, 0x0001, 0x8000]  # a NaN with a payload, -inf, the smallest subnormal, -0
    t = HostTensor.from_vec(bf16.from_bits(codes), bf16, m["B"])
    assert bits16(t.into_vec()) == codes


def test_into_vec_and_to_vec_are_copies():
    t = HostTensor.from_vec([1, 2, 3, 4], i16, m["B"])
    v = t.into_vec()
    v[0] = 99
    w = t.to_vec()
    assert w.tolist() == [1, 2, 3, 4]
    w[1] = 99
    assert t.into_vec().tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("values", "dtype", "mapping", "rule", "words"),
    [
        ([1, 2, 3], i8, "B", "host-length", "3 values for `B`, which has 4 positions"),
        ([1, 2, 3, 4, 5], i8, "A # 8", "host-length", "has 8 positions (padding included)"),
        ([[1, 2], [3, 4]], i8, "B", "host-length", "flat sequence in wire order"),
        ([1, 2, 3, 128], i8, "B", "host-values", "128"),
        ([1, 2, 3, 8], i4, "B", "host-values", "[-8, 7]"),
        ([1.5, 2, 3, 4], i32, "B", "host-values", "1.5"),
        ([1, 2, 3, 4, 5], i4, "A", "host-length", "5 positions of i4 are not a whole number of bytes"),
        ([1, 2, 3, 4], i5, "B", "not-materializable", "stream-only"),
    ],
)
def test_from_vec_refusals(values, dtype, mapping, rule, words):
    with pytest.raises(VerifyError) as info:
        HostTensor.from_vec(values, dtype, m[mapping])
    assert info.value.rule == rule
    assert words in info.value.message
    assert "\n" not in info.value.message


# ---- from_buf / to_buf ---------------------------------------------------------------------------------


def test_to_buf_is_the_little_endian_image():
    t = HostTensor.from_vec([1, -2, 300, -32768], i16, m["B"])
    assert t.to_buf() == struct.pack("<4h", 1, -2, 300, -32768)
    f = HostTensor.from_vec([1.5, -0.25, 3e38, 7], f32, m["B"])
    assert f.to_buf() == struct.pack("<4f", 1.5, -0.25, 3e38, 7)


def test_four_bit_types_pack_two_per_byte():
    # Element 2k in the low nibble of byte k: [1, 2, 3, 4] -> 0x21, 0x43 (upstream's `to_buf_4bit_is_dense`).
    assert HostTensor.from_vec([1, 2, 3, 4], i4, m["B"]).to_buf() == bytes([0x21, 0x43])
    assert HostTensor.from_vec([-1, -8, 7, 0], i4, m["B"]).to_buf() == bytes([0x8F, 0x07])
    e2m1 = HostTensor.from_vec(f4e2m1.from_bits([0x1, 0x2, 0xF, 0x8]), f4e2m1, m["B"])
    assert e2m1.to_buf() == bytes([0x21, 0x8F])


def test_from_buf_reads_the_image():
    t = HostTensor.from_buf(struct.pack("<4i", 7, -1, 2**31 - 1, -(2**31)), i32, m["B"])
    assert t.into_vec().tolist() == [7, -1, 2**31 - 1, -(2**31)]
    nibbles = HostTensor.from_buf(bytes([0x21, 0x8F]), i4, m["B"])
    assert nibbles.into_vec().tolist() == [1, 2, -1, -8]  # sign-extended nibbles
    e2m1 = HostTensor.from_buf(bytes([0x21, 0x8F]), f4e2m1, m["B"])
    assert e2m1.to_numpy().astype(np.float32).tolist() == [0.5, 1.0, -6.0, -0.0]


def test_from_buf_keeps_padding_and_the_logical_view_drops_it():
    image = bytes(range(1, 9))  # `A # 8` with A=5: bytes 6..8 sit in the padding
    t = HostTensor.from_buf(image, u8, m["A # 8"])
    assert t.to_numpy().tolist() == [1, 2, 3, 4, 5]
    assert t.to_buf() == image


@pytest.mark.parametrize("dtype", [i4, i8, u8, i16, i32, f32, bf16, f8e4m3, f8e5m2, f4e2m1], ids=str)
def test_buf_round_trips_every_byte(dtype):
    # Every byte image (NaN payloads, both zeros, every nibble) comes back unchanged through a tensor.
    count = 96
    image = np.random.default_rng(7).integers(0, 256, dtype.nbytes(count), dtype=np.uint8).tobytes()
    t = HostTensor.from_buf(image, dtype, m["C, B % 2, B / 2 # 8"])  # 6 x 2 x 8 = 96 positions
    assert t.to_buf() == image
    assert HostTensor.from_vec(t.into_vec(), dtype, t.element).to_buf() == image


def test_to_buf_of_a_shaped_tensor_has_zero_padding():
    t = HostTensor.from_numpy(np.arange(1, 6, dtype=np.int16), i16, m["A # 8"])
    assert t.to_buf() == struct.pack("<8h", 1, 2, 3, 4, 5, 0, 0, 0)


@pytest.mark.parametrize(
    ("data", "dtype", "mapping", "rule", "words"),
    [
        (b"\x00" * 7, i16, "B", "host-length", "7 bytes for `B`, whose 4 positions of i16 take 8"),
        (b"\x00" * 4, i16, "A # 8", "host-length", "take 16"),
        (b"\x00" * 3, i4, "A", "host-length", "5 positions of i4 are not a whole number of bytes"),
        (b"\x00" * 4, i9, "B", "not-materializable", "stream-only"),
    ],
)
def test_from_buf_refusals(data, dtype, mapping, rule, words):
    with pytest.raises(VerifyError) as info:
        HostTensor.from_buf(data, dtype, m[mapping])
    assert info.value.rule == rule
    assert words in info.value.message


def test_to_buf_of_an_odd_four_bit_tensor_is_refused():
    t = HostTensor.zeros(i4, m["A"])  # five 4-bit positions
    with pytest.raises(VerifyError) as info:
        t.to_buf()
    assert info.value.rule == "host-length"


# ---- zero / into_inner ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [i4, i8, u8, i16, i32, f32, bf16, f8e4m3, f8e5m2, f4e2m1], ids=str)
def test_zero_is_zero_everywhere(dtype):
    t = HostTensor.zero(dtype, m["A # 8, B"])
    assert t.into_vec().size == 32
    assert t.to_buf() == bytes(dtype.nbytes(32))  # the all-zero code is +0 for every type
    assert t.to_numpy().shape == (A.size, B.size)


def test_into_inner_is_the_logical_array():
    values = np.arange(A.size * B.size, dtype=np.int32).reshape(B.size, A.size)
    t = HostTensor.from_numpy(values, i32, m["B, A # 8"])
    inner = t.into_inner()
    np.testing.assert_array_equal(inner, values)
    inner += 1  # an oracle built from it leaves the tensor alone
    np.testing.assert_array_equal(t.to_numpy(), values)


# ---- from_numpy: the shaped form and the flat forms -----------------------------------------------------


def test_from_numpy_one_element_array_for_the_unit_mapping():
    t = HostTensor.from_numpy(np.array([7], np.int32), i32, m["1"])
    assert t.into_vec().tolist() == [7]
    assert HostTensor.from_numpy(np.int32(-3), i32, m["1"]).into_vec().tolist() == [-3]  # shape () as before


def test_from_numpy_flat_array_fills_the_cells_a_split_mapping_holds():
    # `A, B / 2` (B=4) holds B = 0 and 2 of each A: 10 cells, in row-major (a, b) order.
    flat = np.arange(10, dtype=np.int32) + 100
    t = HostTensor.from_numpy(flat, i32, m["A, B / 2"])
    assert t.into_vec().tolist() == flat.tolist()  # here wire order is that row-major order
    expected = np.zeros((A.size, B.size), np.int32)
    expected[:, 0::2] = flat.reshape(A.size, 2)
    np.testing.assert_array_equal(t.to_numpy(), expected)


def test_from_numpy_flat_array_is_row_major_over_the_axes_not_wire_order():
    # `B % 2, A, B / 2`: the axes appear as B, A; the flat array is the (B, A) array raveled.
    shaped = np.arange(B.size * A.size, dtype=np.int16).reshape(B.size, A.size)
    t = HostTensor.from_numpy(shaped.reshape(-1), i16, m["B % 2, A, B / 2"])
    np.testing.assert_array_equal(t.to_numpy(), shaped)
    wire = [shaped[(p // (A.size * 2)) + 2 * (p % 2), (p // 2) % A.size] for p in range(B.size * A.size)]
    assert t.into_vec().tolist() == wire


def test_from_numpy_shaped_form_is_unchanged_for_one_axis():
    # One axis: the shaped array and the flat one coincide, and the value at index a is cell A = a.
    t = HostTensor.from_numpy(np.arange(5, dtype=np.int8), i8, m["A % 5"])
    assert t.to_numpy().tolist() == [0, 1, 2, 3, 4]
    padded = HostTensor.from_numpy(np.arange(5, dtype=np.int8), i8, m["A # 8"])
    assert padded.into_vec().tolist() == [0, 1, 2, 3, 4, 0, 0, 0]


def test_from_numpy_refuses_other_sizes():
    with pytest.raises(VerifyError) as info:
        HostTensor.from_numpy(np.arange(9), i32, m["A, B / 2"])
    assert info.value.rule == "host-shape"
    assert "expected shape (5, 4) (A=5, B=4)" in info.value.message
    assert "or a flat array of its 10 cells, got (9,)" in info.value.message
    with pytest.raises(VerifyError, match="expected shape"):
        HostTensor.from_numpy(np.arange(2), i32, m["1"])
    with pytest.raises(VerifyError, match="expected shape"):  # a 2-D array of the live size is not flat
        HostTensor.from_numpy(np.arange(10).reshape(2, 5), i32, m["A, B / 2"])


def test_from_numpy_flat_form_round_trips_through_hbm():
    flat = np.arange(A.size * B.size, dtype=np.int32).reshape(-1) * 3
    with Context.acquire() as ctx:
        hbm = HostTensor.from_numpy(flat, i32, m["B, A"]).to_hbm(ctx.pdma, m["1"], m["A, B"])
        back = hbm.to_host(ctx.pdma, m["B, A"]).to_numpy()
    np.testing.assert_array_equal(back, flat.reshape(B.size, A.size))


# ---- from_safetensors ------------------------------------------------------------------------------------


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    """A minimal writer of the format: u64 LE header length, JSON header (padded to 8), then the data."""
    header, offset = {}, 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(d for _, _, d in tensors.values()))


def test_from_safetensors_reads_native_dtypes(tmp_path):
    weights = np.arange(A.size * B.size, dtype=np.int16).reshape(A.size, B.size) * 11 - 99
    scale = np.linspace(-1, 1, B.size * C.size, dtype=np.float32).reshape(B.size, C.size)
    path = tmp_path / "model.safetensors"
    save_file({"weights": weights, "scale": scale}, str(path))
    t = HostTensor.from_safetensors(path, "weights", i16, m["A, B"])
    np.testing.assert_array_equal(t.to_numpy(), weights)
    s = HostTensor.from_safetensors(str(path), "scale", f32, m["B, C"])
    assert s.to_buf() == scale.tobytes()


def test_from_safetensors_reads_bf16_and_f8_codes(tmp_path):
    bf16_codes = [0x3F80, 0xC000, 0x0001, 0x7FC1, 0xFF80, 0x8000]  # 1, -2, a subnormal, a NaN, -inf, -0
    f8_codes = list(range(0, 256, 43))
    path = tmp_path / "narrow.safetensors"
    write_safetensors(
        path,
        {
            "w": ("BF16", [2, 3], struct.pack("<6H", *bf16_codes)),
            "q": ("F8_E4M3", [len(f8_codes)], bytes(f8_codes)),
            "r": ("F8_E5M2", [len(f8_codes)], bytes(f8_codes)),
        },
    )
    K = axes(K=2)
    t = HostTensor.from_safetensors(path, "w", bf16, m["K, C / 2"])  # pair items K=2, C/2=3
    assert bits16(t.into_vec()) == bf16_codes
    q = HostTensor.from_safetensors(path, "q", f8e4m3, m["C"])
    assert q.into_vec().view(np.uint8).tolist() == f8_codes
    r = HostTensor.from_safetensors(path, "r", f8e5m2, m["C"])
    assert r.into_vec().dtype == ml_dtypes.float8_e5m2
    assert r.into_vec().view(np.uint8).tolist() == f8_codes


def test_from_safetensors_shape_is_the_pair_items(tmp_path):
    # Upstream compares the file's shape with the sizes of the mapping's pair items: `A # 8, B / 2` is
    # [8, 2], whatever the axes' own sizes; the bytes fill every position, padding included.
    path = tmp_path / "pad.safetensors"
    data = np.arange(16, dtype=np.int8).reshape(8, 2)
    save_file({"x": data}, str(path))
    t = HostTensor.from_safetensors(path, "x", i8, m["A # 8, B / 2"])
    assert t.into_vec().tolist() == list(range(16))
    assert HostTensor.from_safetensors(path, "x", i8, m["A # 8, B % 2"]).into_vec().tolist() == list(range(16))
    with pytest.raises(VerifyError) as info:
        HostTensor.from_safetensors(path, "x", i8, m["B / 2, A # 8"])
    assert info.value.rule == "safetensors-shape"
    assert "has shape [8, 2], `B / 2, A # 8` wants [2, 8]" in info.value.message


@pytest.mark.parametrize(
    ("name", "dtype", "mapping", "rule", "words"),
    [
        ("missing", i16, "A, B", "safetensors-name", "has no tensor 'missing' ('scale', 'weights')"),
        ("weights", bf16, "A, B", "safetensors-dtype", "tensor 'weights' of"),
        ("weights", i16, "B, A", "safetensors-shape", "has shape [5, 4], `B, A` wants [4, 5]"),
        ("weights", i16, "A, B, 1", "safetensors-shape", "wants [5, 4, 1]"),
        ("scale", f4e2m1, "B, C", "safetensors-dtype", "f4e2m1 is not a byte-aligned dtype"),
    ],
)
def test_from_safetensors_refusals(tmp_path, name, dtype, mapping, rule, words):
    path = tmp_path / "model.safetensors"
    save_file(
        {"weights": np.zeros((A.size, B.size), np.int16), "scale": np.zeros((B.size, C.size), np.float32)}, str(path)
    )
    with pytest.raises(VerifyError) as info:
        HostTensor.from_safetensors(path, name, dtype, m[mapping])
    assert info.value.rule == rule
    assert words in info.value.message
    assert "\n" not in info.value.message


def test_from_safetensors_dtype_mismatch_names_both(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"h": np.zeros(B.size, np.float16)}, str(path))
    with pytest.raises(VerifyError) as info:  # same width as bf16, another format: refused, not reinterpreted
        HostTensor.from_safetensors(path, "h", bf16, m["B"])
    assert info.value.message.endswith("is F16, not bf16 (BF16)")


def test_from_safetensors_missing_or_broken_file(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        HostTensor.from_safetensors(tmp_path / "absent.safetensors", "w", i8, m["B"])
    assert str(info.value) == f"from_safetensors: no such file: {tmp_path / 'absent.safetensors'}"
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(VerifyError) as refused:
        HostTensor.from_safetensors(broken, "w", i8, m["B"])
    assert refused.value.rule == "safetensors-file"
    assert "\n" not in refused.value.message
