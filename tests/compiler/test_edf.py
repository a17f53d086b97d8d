"""The EDF container (docs/edf.md): every base-template kernel round-trips, the bytes are deterministic
(also across processes with different hash seeds), the reader refuses every truncation, corruption,
other version and malformed body with an `EdfError`, and file writes are atomic."""

import dataclasses
import hashlib
import os
import struct
import subprocess
import sys

import msgpack
import pytest
from example_kernels import KERNELS

from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler import edf
from furiosa_opt.compiler.edf import (
    FORMAT_VERSION,
    MAGIC,
    Edf,
    EdfError,
    Leaf,
    read_edf,
    read_edf_file,
    write_edf,
    write_edf_file,
)
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule as list_schedule
from furiosa_opt.diagnostics import FuriosaOptError

VERSION, KEY = "0.1.0-test", "cafef00d"
HEADER = struct.Struct("<8sHHI32s")  # as docs/edf.md states it, independently of the module's own


def lowered(name):
    ir, errors = trace(KERNELS[name])
    assert not errors
    return lower(ir)


@pytest.fixture(scope="module")
def lirs():
    return {name: lowered(name) for name in KERNELS}


@pytest.fixture(scope="module")
def small(lirs):
    return write_edf(lirs["constant_add"], compiler_version=VERSION, cache_key=KEY)


def schedule_of(lir):
    return [(c.index, 10 * i, 10 * i + 7) for i, c in enumerate(lir.commands) if c.context != "none"]


def reheader(body: bytes, version: int = FORMAT_VERSION, flags: int = 0) -> bytes:
    return HEADER.pack(MAGIC, version, flags, len(body), hashlib.sha256(body).digest()) + body


def body_of(data: bytes) -> dict:
    return msgpack.unpackb(data[HEADER.size :], raw=False)


def refused(data: bytes, *fragments: str) -> EdfError:
    with pytest.raises(EdfError) as caught:
        read_edf(data)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    return caught.value


# ---- round trip and layout ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", KERNELS)
def test_round_trip_keeps_every_field_of_the_lir(lirs, name):
    lir = lirs[name]
    schedule = schedule_of(lir)
    got = read_edf(write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=schedule))
    assert isinstance(got, Edf)
    assert (got.compiler_version, got.identity, got.chip, got.pe, got.cache_key) == (
        VERSION,
        lir.kernel,
        lir.chip,
        lir.pe,
        KEY,
    )
    buffers = {b.name: b for b in lir.buffers}

    def table(names, leaves):
        return tuple(
            Leaf(buffers[n].value, path, kind, buffers[n].dtype, tuple(buffers[n].levels), buffers[n].bytes, n)
            for n, (path, kind) in zip(names, leaves, strict=True)
        )

    outputs = [(f"return.{i}", "hbm") for i in range(len(lir.results))]
    assert got.arguments == table(lir.arguments, lir.leaves) and got.outputs == table(lir.results, outputs)
    assert [t.path for t in got.arguments] == [p.name for p in KERNELS[name].parameters if p.type is not None]
    assert len(got.arguments) == len(lir.arguments) >= 1
    fields = ("name", "memory", "address", "bytes", "dtype", "levels", "region", "slots")
    assert [{f: getattr(b, f) for f in fields} for b in got.buffers] == [
        {f: getattr(b, f) for f in fields} for b in lir.buffers
    ]
    assert set(got.streams) == {"main", "sub", "tdma", "pdma"}
    for context, stream in got.streams.items():  # the same dataclasses, every field
        assert list(stream) == [command for command in lir.commands if command.context == context]
    in_streams = sum(len(s) for s in got.streams.values())
    assert in_streams == sum(c.context != "none" for c in lir.commands) > 0
    assert got.spans == tuple((c.index, c.loc) for c in lir.commands if c.context != "none" and c.loc is not None)
    assert got.schedule == tuple(schedule)


def test_header_layout_matches_the_documentation(small):
    magic, version, flags, length, digest = HEADER.unpack_from(small)
    assert (magic, version, flags, HEADER.size) == (b"FOPTEDF\0", 8, 0, 48)
    assert length == len(small) - 48 and digest == hashlib.sha256(small[48:]).digest()
    body = body_of(small)
    assert list(body) == sorted(body) == sorted(edf.BODY_KEYS)
    assert body["device"] == {"chip": 1, "pe": 8} and body["schedule"] == []


def test_every_map_is_packed_with_sorted_keys(small):
    def check(value):
        if isinstance(value, dict):
            assert list(value) == sorted(value)
            for item in value.values():
                check(item)
        elif isinstance(value, list):
            for item in value:
                check(item)
        else:
            assert not isinstance(value, float)

    check(msgpack.unpackb(small[48:], raw=False, object_pairs_hook=dict))


# ---- determinism ----------------------------------------------------------------------------------------


def test_writing_twice_gives_the_same_bytes(lirs):
    for name, lir in lirs.items():
        first = write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=schedule_of(lir))
        again = write_edf(lowered(name), compiler_version=VERSION, cache_key=KEY, schedule=schedule_of(lir))
        assert first == again
        shuffled = list(reversed(schedule_of(lir)))
        assert write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=shuffled) == first


SCRIPT = """
import sys
from furiosa_opt.backend.trace import trace
from furiosa_opt.compiler.edf import write_edf
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.schedule import schedule as list_schedule
from base_template.kernel import {modules}
for kernel in ({kernels},):
    ir, errors = trace(kernel)
    sys.stdout.write(write_edf(lower(ir), compiler_version={version!r}, cache_key={key!r}).hex() + "\\n")
"""


def test_bytes_do_not_depend_on_the_process_or_its_hash_seed(lirs):
    script = SCRIPT.format(
        modules=", ".join(f"{name}_kernel" for name in KERNELS),
        kernels=", ".join(f"{name}_kernel.{name}_kernel" for name in KERNELS),
        version=VERSION,
        key=KEY,
    )
    expected = [write_edf(lir, compiler_version=VERSION, cache_key=KEY).hex() for lir in lirs.values()]
    for seed in ("0", "2718281"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.split() == expected


# ---- refusals ---------------------------------------------------------------------------------------------


def test_every_truncation_is_refused_with_an_edf_error(lirs):
    for lir in lirs.values():
        data = write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=schedule_of(lir))
        for length in range(len(data)):
            with pytest.raises(EdfError) as caught:
                read_edf(data[:length])
            message = str(caught.value)
            assert "truncated" in message or (length < 8 and "not an EDF file" in message), (length, message)


def test_trailing_bytes_are_refused(small):
    refused(small + b"\0", "corrupted", "after the")


def test_every_flipped_byte_is_refused(small):
    for position in range(len(small)):
        data = bytearray(small)
        data[position] ^= 0xFF
        with pytest.raises(EdfError) as caught:
            read_edf(bytes(data))
        message = str(caught.value)
        if position < 8:
            assert "not an EDF file" in message
        elif position >= 16:
            assert "corrupted EDF: checksum mismatch" in message, (position, message)


def test_a_flipped_magic_byte_is_not_an_edf(small):
    refused(b"G" + small[1:], "not an EDF file")
    refused(b"PK\x03\x04 a zip file", "not an EDF file")


def test_another_format_version_is_refused_naming_the_kernel(small):
    expects = f"EDF format version 1 is not supported by this build (expects {FORMAT_VERSION})"
    error = refused(reheader(small[48:], version=1), expects)
    assert "recompile it with `furiosa-opt compile`" in str(error)
    assert error.identity == KERNELS["constant_add"].identity
    refused(reheader(b"\x00\x01garbage", version=9), "version 9")


def test_unknown_flags_are_refused(small):
    refused(reheader(small[48:], flags=1), "flags")


@pytest.mark.parametrize("key", edf.BODY_KEYS)
def test_a_body_missing_a_key_is_malformed(small, key):
    body = body_of(small)
    del body[key]
    error = refused(reheader(msgpack.packb(body, use_bin_type=True)), "malformed EDF", f"missing key '{key}'")
    if key != "identity":
        assert error.identity == body["identity"] and body["identity"] in str(error)


def edit(data: bytes, change) -> bytes:
    body = body_of(data)
    change(body)
    return reheader(msgpack.packb(body, use_bin_type=True))


def test_malformed_bodies_name_the_offending_field(lirs):
    data = write_edf(lirs["gemm"], compiler_version=VERSION, cache_key=KEY)
    refused(edit(data, lambda b: b["device"].update(chip="1")), "body.device.chip: expected an integer")
    refused(edit(data, lambda b: b.update(extra=1)), "unknown key 'extra'")
    refused(edit(data, lambda b: b["streams"]["main"][-1]["fetch"].pop("base")), "body.streams.main[1].fetch")
    refused(edit(data, lambda b: b["streams"].pop("pdma")), "missing key 'pdma'")
    refused(edit(data, lambda b: b["streams"]["sub"][0].update(index=True)), "expected an integer")
    refused(edit(data, lambda b: b["arguments"][0].update(buffer="T99")), "buffer 'T99' is not in body.buffers")
    refused(edit(data, lambda b: b["streams"]["tdma"].append(b["streams"]["tdma"][0])), "is repeated")
    refused(edit(data, lambda b: b["streams"]["main"][0].update(waits=[99])), "main[0].waits: command 99 is not in")
    refused(edit(data, lambda b: b["spans"].append([0, 5])), "body.spans[")
    refused(edit(data, lambda b: b.update(schedule=[[1, 9, 3]])), "start 9 and end 3")
    refused(edit(data, lambda b: b["streams"]["main"][-1]["engines"][0].update(scale=1.5)), "fields are integers")
    refused(reheader(b"\xc1"), "malformed EDF", "not valid msgpack")
    refused(reheader(msgpack.packb([1, 2, 3])), "malformed EDF", "expected a map")


def test_the_writer_refuses_what_it_cannot_encode(lirs):
    lir = lirs["gemm"]
    with pytest.raises(EdfError, match="index outside"):
        write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=[(len(lir.commands), 0, 1)])
    with pytest.raises(EdfError, match="not 0 <= start <= end"):
        write_edf(lir, compiler_version=VERSION, cache_key=KEY, schedule=[(1, 5, 2)])
    broken = dataclasses.replace(lir, commands=[dataclasses.replace(c) for c in lir.commands])
    exec_command = next(c for c in broken.commands if c.kind == "exec")
    exec_command.engines = [{"stage": "cast", "scale": 0.5}]
    with pytest.raises(EdfError, match="no floats") as caught:
        write_edf(broken, compiler_version=VERSION, cache_key=KEY)
    assert lir.kernel in str(caught.value) and isinstance(caught.value, FuriosaOptError)
    with pytest.raises(EdfError, match="is not a buffer"):
        write_edf(dataclasses.replace(lir, results=["T404"]), compiler_version=VERSION, cache_key=KEY)


# ---- files ---------------------------------------------------------------------------------------------------


def test_atomic_write_leaves_only_the_file(tmp_path, small, lirs):
    target = tmp_path / "out" / "base_template" / "kernel.edf"
    write_edf_file(target, small)
    assert os.listdir(target.parent) == ["kernel.edf"] and target.read_bytes() == small
    assert read_edf_file(target) == read_edf(small)
    other = write_edf(lirs["gemm"], compiler_version=VERSION, cache_key=KEY)
    write_edf_file(target, other)  # replaces
    assert os.listdir(target.parent) == ["kernel.edf"] and target.read_bytes() == other


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path, small, monkeypatch):
    target = tmp_path / "kernel.edf"
    write_edf_file(target, small)

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(EdfError, match="No space left") as caught:
        write_edf_file(target, b"new")
    assert str(target) in str(caught.value)
    assert os.listdir(tmp_path) == ["kernel.edf"] and target.read_bytes() == small


def test_reading_a_missing_or_bad_file_names_the_path(tmp_path, small):
    missing = tmp_path / "absent.edf"
    with pytest.raises(EdfError, match="no such EDF file") as caught:
        read_edf_file(missing)
    assert str(missing) in str(caught.value)
    with pytest.raises(EdfError, match="cannot read EDF"):
        read_edf_file(tmp_path)
    bad = tmp_path / "bad.edf"
    bad.write_bytes(small[:-1])
    with pytest.raises(EdfError, match="truncated") as caught:
        read_edf_file(bad)
    assert str(bad) in str(caught.value) and caught.value.path == bad


def test_streams_are_in_the_order_the_schedule_issues_them(lirs):
    """Gemm's schedule loads B before A on the one DMA context; the binary must say so, or the device
    would issue them in program order and lose the overlap the makespan assumes."""
    schedule = [(s.costed.command.index, s.start, s.end) for s in list_schedule(lirs["gemm"]).slots]
    edf = read_edf(write_edf(lirs["gemm"], compiler_version=VERSION, cache_key=KEY, schedule=schedule))
    starts = {index: start for index, start, _ in schedule}
    for stream in edf.streams.values():
        issued = [starts[c.index] for c in stream]
        assert issued == sorted(issued)
    assert [c.opcode for c in edf.streams["tdma"]][:2] == ["to_dm", "to_dm"]
    assert [c.index for c in edf.streams["tdma"]][:2] == [3, 1]
