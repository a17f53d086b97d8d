"""Host tensors: numpy in and out, DLPack in and out (torch), upstream's flat buffer API (`from_vec`,
`into_vec`, `from_buf`, `to_buf`, `zero`), safetensors files, and the upload to HBM.

A host tensor's buffer holds every position of its mapping in wire order; most of this module is the
translation between that buffer and a logical numpy array (one dimension per axis), through views of the
mapping's digits where they can express it and cell by cell where they cannot.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.backend import cpu
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import DmaContext, expect_context
from furiosa_opt.lang.tensors import dlpack
from furiosa_opt.lang.tensors.base import Tensor, moved, recorded
from furiosa_opt.lang.tensors.memory import HbmTensor
from furiosa_opt.mapping import Mapping, MappingError, m, views
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.expr import Pair
from furiosa_opt.mapping.factors import Comp, SymAtom


def logical_axes(mapping: Mapping) -> list[tuple[str, int]]:
    """The axes of a host tensor's logical array (`to_numpy`, DLPack), in order of first appearance in the
    (canonical) mapping, with their sizes: its shape is their sizes.

        logical_axes(m["A / 2, B, A % 2"])   # A=4, B=2: [("A", 4), ("B", 2)]
    """
    found: dict[str, int] = {}

    def walk(factors) -> None:
        for f in factors:
            if isinstance(f.atom, SymAtom) and f.m > 1:
                found.setdefault(f.atom.name, f.atom.n)
            elif isinstance(f.atom, Comp):
                walk(f.atom.k)

    walk(mapping.factors)
    return list(found.items())


def _placed(logical: np.ndarray, order: list[tuple[str, int]], mapping: Mapping, dtype: DType) -> np.ndarray:
    """The buffer of `mapping` holding `logical`, found cell by cell (for mappings views cannot express)."""
    layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
    buffer = np.zeros(mapping.size, dtype=dtype.storage)
    live = layout.live
    if order:
        buffer[live] = logical[tuple(layout.coords[a][live] for a, _ in order)]
    else:
        buffer[live] = logical.reshape(())
    return buffer


def _live_logical(mapping: Mapping, order: list[tuple[str, int]], shape: tuple[int, ...]) -> np.ndarray:
    """The distinct logical cells `mapping` holds, as row-major indices into `shape`, in increasing order."""
    layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
    live = layout.live
    if not order:
        return np.zeros(int(live.any()), dtype=np.int64)
    return np.unique(np.ravel_multi_index(tuple(layout.coords[a][live] for a, _ in order), shape))


def _pair_items(node) -> list:
    """The items of a mapping written as a pair chain, outermost first (`A / 2, B` → `A / 2`, `B`)."""
    return [*_pair_items(node.outer), *_pair_items(node.inner)] if isinstance(node, Pair) else [node]


def _host_length(dtype: DType, count: int, what: str) -> None:
    """Upstream's host buffers hold whole bytes: a 4-bit tensor needs an even number of positions."""
    if count * dtype.bits % 8:
        raise VerifyError("host-length", f"{what}: {count} positions of {dtype} are not a whole number of bytes")


# safetensors' names of the byte-aligned dtypes (upstream's `ScalarBytes`), the ones a file can carry
_SAFETENSORS_DTYPES = {
    dtypes.i8: "I8",
    dtypes.u8: "U8",
    dtypes.i16: "I16",
    dtypes.i32: "I32",
    dtypes.f32: "F32",
    dtypes.bf16: "BF16",
    dtypes.f8e4m3: "F8_E4M3",
    dtypes.f8e5m2: "F8_E5M2",
}


def _safetensors_bytes(path: str, name: str) -> bytes:
    """The data bytes of tensor `name` (the file format: u64 header length, JSON header, data)."""
    with open(path, "rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        begin, end = json.loads(file.read(length))[name]["data_offsets"]
        file.seek(8 + length + begin)
        return file.read(end - begin)


class HostTensor(Tensor):
    """A tensor in host memory, laid out by one mapping (`HostTensor[bf16, m["I, K"]]`).

    Its buffer holds every position of the mapping in wire order, padding included, as upstream's
    `HostTensor<D, Element>`: `from_vec` / `into_vec` / `from_buf` / `to_buf` read and write that buffer;
    `from_numpy` / `to_numpy` go through the logical array (one dimension per axis).

    Examples:
        >>> I, K = axes(I=2, K=3)
        >>> t = HostTensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3), bf16, m["I, K"])
        >>> t
        HostTensor[bf16, m["I, K"]]
        >>> t.to_numpy().tolist(), t.to_vec().tolist()   # the logical array and the wire buffer
        ([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    """

    levels = ("element",)
    kind = "host"

    @classmethod
    @user_facing
    def from_numpy(cls, array: Any, dtype: DType, mapping: Mapping) -> HostTensor:
        """`array` has one dimension per axis, in the order the axes first appear in `mapping`; or it is
        flat, one value per logical cell the mapping holds, in row-major order of those axes (so
        `m["1"]` takes a one-element array, and `m["A, B / 2"]` the A x B/2 cells it keeps):

            HostTensor.from_numpy(np.arange(8).reshape(2, 4), i32, m["A, B"])   # A=2, B=4
            HostTensor.from_numpy(np.array([7]), i32, m["1"])
        """
        return cls._from_array(np.asarray(array), dtype, mapping, "from_numpy", share=False)

    @classmethod
    @user_facing
    def from_dlpack(cls, producer: Any, dtype: DType, mapping: Mapping) -> HostTensor:
        """The tensor of any DLPack producer (a torch tensor, a numpy array, ...), taken as `from_numpy`
        takes an array; bf16 comes in from torch's `bfloat16` (numpy cannot export ml_dtypes' bf16).

            HostTensor.from_dlpack(torch.ones(2, 4, dtype=torch.bfloat16), bf16, m["A, B"])   # A=2, B=4

        The tensor shares the producer's memory, no copy, when the producer's dtype is `dtype`'s storage
        (torch `bfloat16` for bf16, `float32` for f32, ...), its shape is the mapping's logical shape, it is
        C-contiguous, and `mapping` lays each axis out whole, without padding (`m["A, B"]`, not
        `m["A / 2, B, A % 2"]` nor `m["A, B # 8"]`). Then the producer's later writes show in the tensor; the tensor
        itself never writes into that memory (a kernel's in-place write copies it first). Otherwise the
        values are copied once, converted as `from_numpy` converts them.
        """
        try:
            array = dlpack.to_numpy(producer)
        except (TypeError, BufferError, RuntimeError) as error:
            reason = " ".join(str(error).split())
            raise VerifyError("host-dlpack", f"from_dlpack: cannot read the producer: {reason}") from None
        return cls._from_array(array, dtype, mapping, "from_dlpack", share=True)

    @classmethod
    def _from_array(cls, array: np.ndarray, dtype: DType, mapping: Mapping, what: str, share: bool) -> HostTensor:
        """The tensor of a logical or flat array (see `from_numpy`); with `share`, the array itself is the
        buffer when it already is the buffer's wire order, else one copy."""
        order = logical_axes(mapping)
        shape = tuple(n for _, n in order)
        if array.shape != shape:
            cells = _live_logical(mapping, order, shape)
            if array.ndim != 1 or array.size != cells.size:
                names = ", ".join(f"{a}={n}" for a, n in order)
                raise VerifyError(
                    "host-shape",
                    f"{what}: expected shape {shape} ({names}) for `{mapping}`, or a flat array of its "
                    f"{cells.size} cells, got {array.shape}",
                )
            flat, array = array, np.zeros(shape, dtype=array.dtype)
            array.reshape(-1)[cells] = flat  # the cells the mapping does not hold are never read
        try:
            logical = dtypes.from_user(array, dtype, copy=False)  # the one copy comes below
        except dtypes.DTypeError as error:
            raise VerifyError("host-values", f"{what}: {error}") from None
        try:  # a view of the array in the mapping's digits, one copy
            moved = cpu.relayout(cpu.Buf(logical.reshape(-1)), views.dense(order), mapping.factors, True, True)
            values = moved.values()
            # one copy in all, unless sharing: the array itself when it is in wire order already
            data = cpu.fresh(values.copy() if np.may_share_memory(values, array) and not share else values)
        except MappingError:  # a mapping cutting an axis where views cannot: cell by cell
            data = cpu.fresh(_placed(logical, order, mapping, dtype))
        return cls(dtype, (mapping,), data)

    @classmethod
    @user_facing
    def rand(cls, dtype: DType, mapping: Mapping, rng: np.random.Generator) -> HostTensor:
        """Random values at the live cells (upstream's distributions), zero padding."""
        buffer = np.zeros(mapping.size, dtype=dtype.storage)
        live = views.live_cells(mapping.factors)
        if live is None:  # composite atoms: find the live cells one by one
            cells = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64)).live
            buffer[cells] = dtypes.rand(dtype, int(cells.sum()), rng)
        else:  # the live cells in wire order are the per-factor prefixes in C order
            shape = tuple(s.stop for s in live.take)
            buffer.reshape(live.shape)[live.take] = dtypes.rand(dtype, live.count, rng).reshape(shape)
        return cls(dtype, (mapping,), cpu.fresh(buffer))

    @classmethod
    @user_facing
    def zeros(cls, dtype: DType, mapping: Mapping) -> HostTensor:
        """Every position zero: `HostTensor.zeros(bf16, m["A, B"])`."""
        return cls(dtype, (mapping,), cpu.zeros(dtype.storage, mapping.size))

    @classmethod
    @user_facing
    def zero(cls, dtype: DType, mapping: Mapping) -> HostTensor:
        """Upstream's spelling of `zeros`: every position zero, padding included.

            HostTensor.zero(i8, m["A # 8"]).into_vec()   # A=5: eight zeros

        The same tensor as `zeros` gives.
        """
        return cls.zeros(dtype, mapping)

    @classmethod
    @user_facing
    def from_vec(cls, values: Any, dtype: DType, mapping: Mapping) -> HostTensor:
        """Upstream's `HostTensor::from_vec`: one value per position of `mapping`, in wire order, padding
        positions included (stored as given). Values convert with the user constructors (`bf16.from_f32`
        rounding; integers must fit the dtype).

            HostTensor.from_vec([1, 2, 3, 4, 5, 6], i8, m["B, A"])   # A=2, B=3: position = b * 2 + a
            HostTensor.from_vec(bf16.from_bits([0x3F80, 0x7FC1]), bf16, m["A"])   # raw codes kept
        """
        if not isinstance(values, np.ndarray | list | tuple):
            values = list(values)
        flat = np.asarray(values)
        if flat.ndim != 1:
            raise VerifyError(
                "host-length",
                f"from_vec takes a flat sequence in wire order, got shape {flat.shape}; "
                "use from_numpy for a shaped array",
            )
        if flat.size != mapping.size:
            raise VerifyError(
                "host-length",
                f"from_vec: {flat.size} values for `{mapping}`, which has {mapping.size} positions (padding included)",
            )
        _host_length(dtype, mapping.size, "from_vec")
        try:
            buffer = dtypes.from_user(flat, dtype)  # always a copy
        except dtypes.DTypeError as error:
            raise VerifyError("host-values", f"from_vec: {error}") from None
        return cls(dtype, (mapping,), cpu.fresh(buffer))

    @classmethod
    @user_facing
    def from_buf(cls, data: Any, dtype: DType, mapping: Mapping) -> HostTensor:
        """Upstream's `HostTensor::from_buf`: the packed little-endian byte image of every position of
        `mapping` in wire order (4-bit types: element 2k in the low nibble of byte k), the inverse of
        `to_buf`.

            HostTensor.from_buf(bytes([0x21, 0x43]), i4, m["A"])   # A=4: values 1, 2, 3, 4
        """
        if not dtype.materializable:
            raise VerifyError("not-materializable", f"{dtype} is a stream-only staging type: no HostTensor")
        data = bytes(data)
        _host_length(dtype, mapping.size, "from_buf")
        if len(data) != dtype.nbytes(mapping.size):
            raise VerifyError(
                "host-length",
                f"from_buf: {len(data)} bytes for `{mapping}`, whose {mapping.size} positions of {dtype} "
                f"take {dtype.nbytes(mapping.size)}",
            )
        return cls(dtype, (mapping,), cpu.fresh(dtypes.unpack(data, dtype, mapping.size)))

    @classmethod
    @user_facing
    def from_safetensors(cls, path: str | os.PathLike, name: str, dtype: DType, mapping: Mapping) -> HostTensor:
        """Upstream's `HostTensor::from_safetensors`: tensor `name` of a safetensors file, whose shape must
        be the sizes of `mapping`'s pair items (`m["H, X"]` wants `[H, X]`, `m["A / 2, B"]` wants
        `[A/2, B]`) and whose dtype must be `dtype`'s; its bytes are the buffer, as from `from_buf`.

            HostTensor.from_safetensors("model.safetensors", "embed", bf16, m["V, H"])

        Upstream checks only the shape and byte count; a dtype of another name (F16 read as bf16) is
        refused here too. Needs the `safetensors` package (the `safetensors` extra).
        """
        try:
            from safetensors import SafetensorError, safe_open
        except ImportError:
            raise ImportError("from_safetensors needs the `safetensors` package: pip install safetensors") from None
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"from_safetensors: no such file: {path}")
        if dtype not in _SAFETENSORS_DTYPES:
            raise VerifyError(
                "safetensors-dtype",
                f"from_safetensors: {dtype} is not a byte-aligned dtype (a safetensors file holds "
                f"{', '.join(d.name for d in _SAFETENSORS_DTYPES)})",
            )
        try:
            with safe_open(path, framework="numpy") as file:
                names = list(file.keys())
                if name not in names:
                    held = ", ".join(repr(n) for n in names[:8]) + (", ..." if len(names) > 8 else "")
                    raise VerifyError("safetensors-name", f"from_safetensors: {path} has no tensor {name!r} ({held})")
                entry = file.get_slice(name)
                got_dtype, got_shape = entry.get_dtype(), list(entry.get_shape())
        except SafetensorError as error:
            reason = " ".join(str(error).split())
            raise VerifyError(
                "safetensors-file", f"from_safetensors: {path} is not a safetensors file: {reason}"
            ) from None
        want_dtype, want_shape = _SAFETENSORS_DTYPES[dtype], [item.size for item in _pair_items(mapping.node)]
        if got_dtype != want_dtype:
            raise VerifyError(
                "safetensors-dtype",
                f"from_safetensors: tensor {name!r} of {path} is {got_dtype}, not {dtype} ({want_dtype})",
            )
        if got_shape != want_shape:
            raise VerifyError(
                "safetensors-shape",
                f"from_safetensors: tensor {name!r} of {path} has shape {got_shape}, `{mapping}` wants {want_shape}",
            )
        return cls.from_buf(_safetensors_bytes(path, name), dtype, mapping)

    @user_facing
    def into_vec(self) -> np.ndarray:
        """Upstream's `HostTensor::into_vec`: every position in wire order, padding included, as a flat
        array of the dtype's storage (a copy; the tensor stays usable, as Python has no moves).

            HostTensor.from_vec([1, 2, 3], i32, m["A"]).into_vec().tolist()   # [1, 2, 3]
        """
        return np.array(self.values(), copy=True).reshape(-1)

    @user_facing
    def to_vec(self) -> np.ndarray:
        """`into_vec` by its borrowing name (upstream's views have both): the same flat copy.

            HostTensor.zero(f32, m["A"]).to_vec()   # A=3: [0.0, 0.0, 0.0]

        Python has no moves, so the two names do the same.
        """
        return self.into_vec()

    @user_facing
    def to_buf(self) -> bytes:
        """The packed little-endian byte image of the buffer (what `from_buf` takes; 4-bit types pack two
        per byte, element 2k in the low nibble), as upstream's `to_buf`.

            HostTensor.from_vec([1, 2, 3, 4], i4, m["A"]).to_buf()   # bytes 0x21, 0x43
        """
        _host_length(self.dtype, self.params[0].size, "to_buf")
        return dtypes.pack(self.values(), self.dtype)

    @user_facing
    def into_inner(self) -> np.ndarray:
        """Upstream's `into_inner` hands over the plain `Tensor` its tests build oracles with (`map`,
        `zip_with`, `transpose`); here numpy is that vehicle, so this is the logical array, as `to_numpy`.

            expected = x.into_inner() + 1   # upstream: x.into_inner().map(|v| v + 1)
        """
        return self.to_numpy()

    @user_facing
    def to_numpy(self) -> np.ndarray:
        """One dimension per axis, in the order the axes first appear in the mapping (always a copy)."""
        values, shared = self._logical()
        return values.copy() if shared else values

    def _logical(self) -> tuple[np.ndarray, bool]:
        """The logical array (see `to_numpy`) and whether it is the tensor's own buffer, reshaped: it is when
        the mapping lays each axis out whole, without padding, and the buffer is a plain array."""
        mapping = self.params[0]
        order = logical_axes(mapping)
        shape = tuple(n for _, n in order)
        try:  # the buffer's digits viewed as the array's dimensions, one copy
            moved = cpu.relayout(self.data, mapping.factors, views.dense(order), False, True)
            values = moved.values().reshape(shape)
            return values, moved is self.data and np.may_share_memory(values, self.data.values())
        except MappingError:  # a mapping covering part of an axis, or cutting it where views cannot
            out = np.zeros(shape, dtype=self.dtype.storage)
            layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
            live = layout.live
            values = self.values()[live]
            if order:
                out[tuple(layout.coords[a][live] for a, _ in order)] = values
            elif len(values):
                out[()] = values[0]
            return out, False

    def _exported(self, copy: bool | None, what: str) -> np.ndarray:
        """The logical array `__dlpack__` and `__array__` hand out: the buffer itself where `_logical` finds
        it writable and contiguous and `copy` is not True, else a fresh array (`copy=False` then refused)."""
        values, shared = self._logical()
        if shared and not (values.flags.writeable and values.flags.c_contiguous):
            values, shared = np.array(values), False  # a constant's stride-0 view, a read-only buffer
        if copy is False and not shared:  # numpy's __array__ protocol says ValueError, DLPack's BufferError
            raise (BufferError if what == "__dlpack__" else ValueError)(
                f"{what}: the buffer of `{self.params[0]}` is not its logical array; it needs a copy"
            )
        return values.copy() if copy and shared else values

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """The logical array (`to_numpy`'s) as a DLPack capsule, bf16 included: `torch.from_dlpack(t)`.

            torch.from_dlpack(HostTensor.zeros(bf16, m["A, B"]))   # a torch.bfloat16 tensor [A, B]

        Shared, no copy, when the mapping lays each axis out whole, without padding (`m["A, B"]`), and the
        buffer is the tensor's own array: then the consumer's writes change this tensor. Otherwise (or with
        `copy=True`) the consumer gets a fresh array; `copy=False` refuses a layout that needs one.
        """
        asked = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        kwargs = {key: value for key, value in asked.items() if value is not None}  # numpy < 2.1 takes `stream`
        return dlpack.capsule(self._exported(copy, "__dlpack__"), **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """Host memory: DLPack's `(kDLCPU, 0)`."""
        return (1, 0)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """`np.asarray(t)`: the logical array, shared or copied as in `__dlpack__`.

        np.asarray(HostTensor.zeros(f32, m["A"]))   # A=3: array([0., 0., 0.], dtype=float32)
        """
        values = self._exported(copy, "__array__")
        return values if dtype is None else values.astype(dtype, copy=False)

    @user_facing
    def to_hbm(self, pdma: DmaContext, chip: Mapping | None = None, element: Mapping | None = None) -> HbmTensor:
        """Upload over PCIe; keeps the host mapping on `chip = m["1"]` unless told otherwise."""
        expect_context(pdma, ("pdma",), "HostTensor.to_hbm")
        params = (chip if chip is not None else m["1"], element if element is not None else self.params[0])
        return recorded("host_to_hbm", (self,), moved(self, HbmTensor, params, True, "HostTensor.to_hbm"))
