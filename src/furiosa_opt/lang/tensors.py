"""Tensors on physical buffers: host, HBM, DM, TRF and VRF tensors, their views and their moves.

A tensor is a dtype, one mapping per level of its memory (`HbmTensor[bf16, Chip, Element]` stores the
pair chain `[Chip, Element]` as one linear buffer in wire order) and the buffer. Every move between
tensors is a relayout by logical index: destination axes the source lacks are broadcast where the
route allows it, and every live source cell must be read.
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any, ClassVar

import numpy as np

from furiosa_opt import dtypes
from furiosa_opt.arch import RNGD
from furiosa_opt.backend import active, cpu, selected_device
from furiosa_opt.diagnostics import VerifyError, user_facing
from furiosa_opt.dtypes import DType
from furiosa_opt.lang.context import RUNNING, DmaContext, ExecutionContext, expect_context
from furiosa_opt.mapping import Mapping, MappingError, PadKind, m, views
from furiosa_opt.mapping.algebra import check_pad, pair, tile_view
from furiosa_opt.mapping.evaluate import evaluate
from furiosa_opt.mapping.expr import Pair, shown_pair
from furiosa_opt.mapping.factors import Comp, SymAtom
from furiosa_opt.scalar import Scalar
from furiosa_opt.verify import indirect as verify_indirect
from furiosa_opt.verify import memory as verify_memory


class TensorType:
    """What an annotation such as `HbmTensor[bf16, Chip, m["I, K"]]` names.

    Examples:
        >>> I, K = axes(I=4, K=8)
        >>> t = HbmTensor[bf16, m["1"], m["I, K"]]
        >>> t.size()                                          # 32 bf16 values
        64
    """

    def __init__(self, cls: type[Tensor], dtype: DType, params: tuple[Mapping, ...]):
        self.cls, self.dtype, self.params = cls, dtype, params

    def __repr__(self) -> str:
        inner = ", ".join([self.dtype.name, *(f'm["{p}"]' for p in self.params)])
        return f"{self.cls.__name__}[{inner}]"

    def size(self) -> int:
        """Upstream's static `size()`: the bytes of this type's packed device image (a 4-bit dtype packs two
        elements per byte).

            HbmTensor[i4, m["1"], m["A"]].size()   # A = 6: 3
        """
        return self.dtype.nbytes(math.prod(p.size for p in self.params))

    def mismatch(self, value: object) -> str | None:
        """Why `value` is not of this type, or None."""
        if not isinstance(value, self.cls):
            return f"expected {self!r}, got {type(value).__name__}"
        if value.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got {value.dtype}"
        for level, want, got in zip(self.cls.levels, self.params, value.params, strict=True):
            if want != got:
                expected, given = shown_pair(want, got)
                return f"{level} mapping: expected {expected}, got {given}"
        return None


def _annotation(cls: type, item: object) -> TensorType:
    """The type `cls[dtype, level mappings…]` names, checked for shape (tensors and views alike)."""
    item = item if isinstance(item, tuple) else (item,)
    if len(item) != len(cls.levels) + 1 or not isinstance(item[0], DType):
        levels = ", ".join(["dtype", *(level.capitalize() for level in cls.levels)])
        raise TypeError(f"{cls.__name__}[...] takes {levels}")
    if not all(isinstance(p, Mapping) for p in item[1:]):
        raise TypeError(f'{cls.__name__}[...] takes mappings after the dtype, e.g. m["A"]')
    return TensorType(cls, item[0], tuple(item[1:]))


class Tensor:
    """Base of the memory tensors: dtype, one mapping per level, and the buffer (wire order)."""

    levels: ClassVar[tuple[str, ...]] = ()
    kind: ClassVar[str] = ""

    def __init__(self, dtype: DType, params: tuple[Mapping, ...], data: object):
        self.dtype, self.params, self.data = dtype, tuple(params), data
        self._validate()

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    def _validate(self) -> None:
        if not self.dtype.materializable:
            raise VerifyError(
                "not-materializable", f"{self.dtype} is a stream-only staging type: no {type(self).__name__}"
            )

    def __getattr__(self, name: str) -> Mapping:
        levels = type(self).levels
        if name in levels:
            return self.params[levels.index(name)]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def storage(self) -> Mapping:
        """The whole buffer's mapping: the levels paired, outermost first."""
        return pair(*self.params)

    @property
    def type(self) -> TensorType:
        return TensorType(type(self), self.dtype, self.params)

    def __repr__(self) -> str:
        return repr(self.type)

    def values(self) -> np.ndarray:
        """The physical buffer in wire order (storage dtype, padding zero)."""
        return self.data.values()


def moved(tensor: Tensor, cls: type[Tensor], params: tuple[Mapping, ...], broadcast: bool, what: str) -> Tensor:
    """`tensor` re-laid out as a `cls` tensor with `params`, by logical index."""
    target = pair(*params)
    try:
        data = active().relayout(tensor.data, tensor.storage.factors, target.factors, broadcast)
    except MappingError as error:
        raise VerifyError("relayout", f"{what}: {error}") from None
    return cls(tensor.dtype, params, data)


def recorded(name: str, operands: tuple, result, **attrs):
    """Note a memory operation with the backend (the tracer makes it a vISA op); returns `result`."""
    active().record(name, operands, () if result is None else (result,), **attrs)
    return result


# ---- host ------------------------------------------------------------------------------------------


def _axis_order(mapping: Mapping) -> list[tuple[str, int]]:
    """Axes in order of first appearance in the (canonical) mapping, with their sizes."""
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


def _position(mapping: Mapping, offset: dict[str, int]) -> int:
    """The position of `mapping` that holds the cell at `offset` (axis name → coordinate)."""
    from furiosa_opt.mapping.relayout import position_of

    coords = {name: np.array([value]) for name, value in offset.items()}
    return int(position_of(mapping.factors, coords, (1,))[0])


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
        array = np.asarray(array)
        order = _axis_order(mapping)
        shape = tuple(n for _, n in order)
        if array.shape != shape:
            cells = _live_logical(mapping, order, shape)
            if array.ndim != 1 or array.size != cells.size:
                names = ", ".join(f"{a}={n}" for a, n in order)
                raise VerifyError(
                    "host-shape",
                    f"from_numpy: expected shape {shape} ({names}) for `{mapping}`, or a flat array of its "
                    f"{cells.size} cells, got {array.shape}",
                )
            flat, array = array, np.zeros(shape, dtype=array.dtype)
            array.reshape(-1)[cells] = flat  # the cells the mapping does not hold are never read
        try:
            logical = dtypes.from_user(array, dtype, copy=False)  # the one copy comes below
        except dtypes.DTypeError as error:
            raise VerifyError("host-values", f"from_numpy: {error}") from None
        try:  # a view of the array in the mapping's digits, one copy
            moved = cpu.relayout(cpu.Buf(logical.reshape(-1)), views.dense(order), mapping.factors, True, True)
            values = moved.values()
            # one copy in all: the tensor never shares the caller's array
            data = cpu.fresh(values.copy() if np.may_share_memory(values, array) else values)
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
        """One dimension per axis, in the order the axes first appear in the mapping."""
        mapping = self.params[0]
        order = _axis_order(mapping)
        shape = tuple(n for _, n in order)
        try:  # the buffer's digits viewed as the array's dimensions, one copy
            moved = cpu.relayout(self.data, mapping.factors, views.dense(order), False, True)
            values = moved.values()
            return (values.copy() if moved is self.data else values).reshape(shape)  # never the tensor's own
        except MappingError:  # a mapping covering part of an axis, or cutting it where views cannot
            out = np.zeros(shape, dtype=self.dtype.storage)
            layout = evaluate(mapping.factors, np.arange(mapping.size, dtype=np.int64))
            live = layout.live
            values = self.values()[live]
            if order:
                out[tuple(layout.coords[a][live] for a, _ in order)] = values
            elif len(values):
                out[()] = values[0]
            return out

    @user_facing
    def to_hbm(self, pdma: DmaContext, chip: Mapping | None = None, element: Mapping | None = None) -> HbmTensor:
        """Upload over PCIe; keeps the host mapping on `chip = m["1"]` unless told otherwise."""
        expect_context(pdma, ("pdma",), "HostTensor.to_hbm")
        params = (chip if chip is not None else m["1"], element if element is not None else self.params[0])
        return recorded("host_to_hbm", (self,), moved(self, HbmTensor, params, True, "HostTensor.to_hbm"))


def _fault(what: str, error: Exception) -> VerifyError:
    """A run-time fault of the CPU backend (a bad index), naming the kernel that ran into it."""
    kernel = RUNNING.get()
    return VerifyError("dma-index", f"{f'`{kernel}`: ' if kernel else ''}{what}: {error}")


def _gathered(table: Tensor, index: Tensor, levels: tuple[Mapping, ...], scaled: bool, what: str) -> DmTensor:
    """The rows of `table` that `index` selects, in a new DM tensor of `levels` (cluster, slice, element)."""
    home = HbmTensor if scaled else DmTensor
    if not isinstance(index, home):
        raise VerifyError("indirect-index", f"{what} takes its index as a {home.__name__}, got {index!r}")
    verify_indirect.check_index(index.dtype, what)
    params = (table.params[0], *levels)
    axes = verify_indirect.gather(table.storage, index.storage, pair(*params))
    if not scaled:
        verify_indirect.check_spm_index(math.prod(n for _, n in axes.index), what)
    divisor = axes.row * table.dtype.bits // 8 if scaled else 1
    try:
        data = active().dma_gather(
            table.data, table.storage.factors, index.data, index.storage.factors, pair(*params).factors, axes, divisor
        )
    except IndexError as error:
        raise _fault(what, error) from None
    return DmTensor(table.dtype, params, data)


def _scattered(source: DmTensor, index: Tensor, output: object, key: Mapping, scaled: bool, what: str) -> None:
    """Write the rows of `source` named by `key` into `output` where `index` says."""
    home = HbmTensor if scaled else DmTensor
    if not isinstance(index, home):
        raise VerifyError("indirect-index", f"{what} takes its index as a {home.__name__}, got {index!r}")
    if not isinstance(output, HbmTensor) or output.dtype != source.dtype:
        raise VerifyError("indirect-output", f"{what} writes into an HbmTensor of {source.dtype}, got {output!r}")
    verify_indirect.check_index(index.dtype, what)
    spatial = pair(source.params[2], source.params[3])
    axes = verify_indirect.scatter(source.storage, spatial, key, index.storage, output.storage)
    if not scaled:
        verify_indirect.check_spm_index(math.prod(n for _, n in axes.index), what)
    divisor = axes.row * source.dtype.bits // 8 if scaled else 1
    try:
        data = active().dma_scatter(
            source.data,
            source.storage.factors,
            index.data,
            index.storage.factors,
            output.data,
            output.storage.factors,
            axes,
            divisor,
        )
    except IndexError as error:
        raise _fault(what, error) from None
    HbmTensorViewMut(output, output.params[1], 0).write(HbmTensor(output.dtype, output.params, data), what)


# ---- HBM and DM -------------------------------------------------------------------------------------


class HbmTensor(Tensor):
    """A tensor in HBM: `HbmTensor[bf16, Chip, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> HbmTensor[i32, m["1"], m["A"]]                  # an annotation: chip mapping, element mapping
        HbmTensor[i32, m["1"], m["A"]]
        >>> HbmTensor[i32, m["1"], m["A"]].size()           # bytes in device memory
        8192
        >>> with Context.acquire() as ctx:
        ...     hbm = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A]).to_hbm(ctx.pdma)
        ...     print(hbm, hbm.to_host(ctx.pdma).to_numpy()[:3])
        HbmTensor[i32, m["1"], m["A"]] [0 1 2]
    """

    levels = ("chip", "element")
    kind = "hbm"

    def _validate(self) -> None:
        super()._validate()
        verify_memory.check_whole_bytes(self.dtype, self.params[1].size, "HbmTensor element (per chip)")
        home = selected_device() if isinstance(self.data, cpu.Buf) else None
        if home is not None:  # under a device backend, HBM tensors live in its memory from the moment they are made
            self.data = home.upload(self.data.values(), self.dtype)

    @classmethod
    @user_facing
    def new(cls, dtype: DType, chip: Mapping, element: Mapping) -> HbmTensor:
        """A zero-filled HBM tensor made inside a kernel (upstream's `HbmTensor::new`):
        `HbmTensor.new(bf16, Chip, m["A"])`.
        """
        tensor = cls(dtype, (chip, element), active().zeros(dtype.storage, chip.size * element.size))
        return recorded("hbm_new", (), tensor, dtype=dtype, chip=chip, element=element)

    @user_facing
    def to_host(self, pdma: DmaContext, element: Mapping | None = None) -> HostTensor:
        """HBM → host over PCIe (host code): the values as a `HostTensor`, laid out by `element` (default:
        this tensor's element mapping).

            out.to_host(ctx.pdma).to_numpy()
        """
        expect_context(pdma, ("pdma",), "HbmTensor.to_host")
        target = element if element is not None else self.params[1]
        return recorded("hbm_to_host", (self,), moved(self, HostTensor, (target,), True, "HbmTensor.to_host"))

    @user_facing
    def to_hbm(self, dma: DmaContext, element: Mapping) -> HbmTensor:
        """HBM → HBM: a copy laid out by `element`, e.g. `x.to_hbm(ctx.tdma, m["K, I"])` transposes `[I, K]`."""
        expect_context(dma, ("tdma", "pdma"), "HbmTensor.to_hbm")
        result = moved(self, HbmTensor, (self.params[0], element), True, "HbmTensor.to_hbm")
        return recorded("hbm_to_hbm", (self,), result, ctx=dma, element=element)

    @user_facing
    def to_dm(self, tdma: DmaContext, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """HBM → DM with the tensor DMA: `cluster` and `slice` say where each element goes, `element` where it
        sits in the slice's memory.

            dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])   # 8 values in each of 256 slices
        """
        return self.view().to_dm(tdma, cluster, slice, element)

    def size(self) -> int:
        """Upstream's `HbmTensor::size()`: the bytes of the tensor's packed device image, every chip's.

        HbmTensor.new(bf16, m["1"], m["A"]).size()   # A = 6: 12
        """
        return self.dtype.nbytes(self.storage.size)

    def view(self) -> HbmTensorView:
        """A read view of the whole tensor (to `tile`, `pad` or move from)."""
        return recorded("view", (self,), HbmTensorView(self, self.params[1], 0))

    @user_facing
    def dma_gather_scaled(self, index: HbmTensor, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """Upstream's `dma_gather_scaled`: a new DM tensor whose row for each index cell is the table row
        the cell's value selects, as a byte offset (row r of a 128-wide bf16 table is 256·r). The output's
        axes are the index's and the payload it shares with this table; the one table axis left is the
        gathered one. An offset past the table is a fault naming the kernel and line.

            index = HostTensor.from_numpy(rows * 256, i32, m["G"]).to_hbm(ctx.pdma)   # in the host program
            values = table.dma_gather_scaled(index, m["1 # 2"], m["G / 2"], m["G % 2, D"])   # [K, D] table
        """
        result = _gathered(self, index, (cluster, slice, element), True, "dma_gather_scaled")
        return recorded("dma_gather_scaled", (self, index), result, cluster=cluster, slice=slice, element=element)

    @user_facing
    def dma_gather_unscaled(self, index: DmTensor, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """Upstream's `dma_gather_unscaled`: as `dma_gather_scaled`, with the index in DM (on-chip) holding
        row numbers; the index is read from one PE's 4 KiB scratchpad, so it has at most 1024 cells.

            index_dm = index.to_dm(ctx.tdma, m["1 # 2"], m["G / 2"], m["G % 2"])
            values = table.dma_gather_unscaled(index_dm, m["1 # 2"], m["G / 2"], m["G % 2, D"])
        """
        result = _gathered(self, index, (cluster, slice, element), False, "dma_gather_unscaled")
        return recorded("dma_gather_unscaled", (self, index), result, cluster=cluster, slice=slice, element=element)

    @user_facing
    def hbm_cluster_shuffle(self, dma: DmaContext, pattern) -> HbmTensor:
        """Upstream's name for a cluster shuffle in HBM, whose body is `todo!()`: an HBM tensor has no
        cluster level (clusters are chosen at `to_dm`), so it refuses; shuffle a DM view instead.

            x.hbm_cluster_shuffle(ctx.tdma, [1, 0])   # error[upstream-undefined]
            x.to_dm(ctx.tdma, Cluster, Slice, E).view().dm_cluster_shuffle(ctx.tdma, [1, 0])
        """
        raise VerifyError(
            "upstream-undefined",
            "hbm_cluster_shuffle: upstream does not define it (`todo!()`): an HBM tensor has no cluster level, "
            "clusters are chosen at `to_dm`",
            notes=("move to DM first and use `dm.view().dm_cluster_shuffle(ctx.tdma, pattern)`",),
        )

    def view_mut(self) -> HbmTensorViewMut:
        """A write view of the whole tensor: the destination of `to_hbm_view`, or a kernel's out-parameter."""
        return recorded("view_mut", (self,), HbmTensorViewMut(self, self.params[1], 0))

    @user_facing
    def reshape(self, chip: Mapping, element: Mapping) -> HbmTensor:
        """The same buffer under other mappings of the same sizes (nothing moves):
        `x.reshape(Chip, m["A / 8, A % 8"])`.
        """
        return _reshaped(self, (chip, element))


class DmTensor(Tensor):
    """A tensor in the data memory of the slices: `DmTensor[bf16, Chip, Cluster, Slice, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def copy(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])   # 256 slices, 8 elements each
        ...     return dm.to_hbm(ctx.tdma, m["A"])
        >>> x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A])
        >>> with Context.acquire() as ctx:
        ...     y = launch(copy, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == np.arange(2048)).all())
        True
    """

    levels = ("chip", "cluster", "slice", "element")
    kind = "dm"

    def _validate(self) -> None:
        super()._validate()
        _, cluster, slice_, element = self.params
        verify_memory.check_spatial(cluster, slice_, "DmTensor")
        verify_memory.check_capacity(
            "dm-capacity", "DM", self.dtype, element.size, RNGD.dm_bytes_per_slice, "per slice"
        )

    @classmethod
    @user_facing
    def new(cls, dtype: DType, chip: Mapping, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """A zero-filled DM tensor, e.g. the destination of a `commit_view`:
        `DmTensor.new(i32, Chip, Cluster, Slice, E)`.
        """
        count = chip.size * cluster.size * slice.size * element.size
        tensor = cls(dtype, (chip, cluster, slice, element), active().zeros(dtype.storage, count))
        return recorded("dm_new", (), tensor, dtype=dtype, chip=chip, cluster=cluster, slice=slice, element=element)

    def view(self) -> DmTensorView:
        """A read view of the whole tensor: what `ctx.main.begin(...)` streams from."""
        return recorded("view", (self,), DmTensorView(self, self.params[3], 0))

    def view_mut(self) -> DmTensorViewMut:
        """A write view of the whole tensor: the destination of `commit_view` and `to_dm_view`."""
        return recorded("view_mut", (self,), DmTensorViewMut(self, self.params[3], 0))

    @user_facing
    def to_hbm(self, tdma: DmaContext, element: Mapping | None = None) -> HbmTensor:
        """DM → HBM with the tensor DMA, laid out by `element`: `out.to_hbm(ctx.tdma, m["A"])`."""
        return self.view().to_hbm(tdma, element)

    @user_facing
    def to_dm(self, tdma: DmaContext, slice: Mapping, element: Mapping) -> DmTensor:
        """DM → DM relayout with the tensor DMA: the same chip and cluster, a new slice and element mapping
        of the same sizes.
        """
        return self.view().to_dm(tdma, self.params[1], slice, element)

    @user_facing
    def to_dm_pcopy(self, sub: ExecutionContext, slice: Mapping, element: Mapping) -> DmTensor:
        """`to_dm` issued on the sub context as a ParallelCopy (DM → DM, "stos"): a new DM tensor with the
        same chip and cluster, the slice and element given (sizes kept); reads may broadcast.

            moved = dm.to_dm_pcopy(ctx.sub, m["A"], m["B / 2, B % 2"])
        """
        return self.view().to_dm_pcopy(sub, slice, element)

    @user_facing
    def dma_scatter(self, index: HbmTensor, output: HbmTensor, key: Mapping) -> None:
        """Upstream's `dma_scatter`: each cell of the `key` axes (in this tensor's slice and element)
        carries a row of the other axes (the payload); it is written into `output` at the row of the
        output's one remaining axis that the index's value selects, as a byte offset. Rows no key names
        keep their contents; where two keys name one row the later key's row stays.

            data_dm.dma_scatter(index, cache, m["K"])   # [K, D] rows into a [C, D] cache
        """
        _scattered(self, index, output, key, True, "dma_scatter")
        recorded("dma_scatter", (self, index, output), None, key=key)

    @user_facing
    def dma_scatter_unscaled(self, index: DmTensor, output: HbmTensor, key: Mapping) -> None:
        """Upstream's `dma_scatter_unscaled`, whose body is `todo!()` upstream: here it is `dma_scatter`
        with the index in DM holding row numbers (as `dma_gather_unscaled` is to `dma_gather_scaled`),
        the meaning its upstream documentation gives; the index fits one PE's 4 KiB scratchpad.

            data_dm.dma_scatter_unscaled(index_dm, cache, m["K"])
        """
        _scattered(self, index, output, key, False, "dma_scatter_unscaled")
        recorded("dma_scatter_unscaled", (self, index, output), None, key=key)

    @user_facing
    def reshape(self, chip: Mapping, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """The same buffer under other mappings of the same sizes (nothing moves)."""
        return _reshaped(self, (chip, cluster, slice, element))


def _reshaped(tensor: Tensor | TensorView, params: tuple[Mapping, ...]) -> Tensor | TensorView:
    """Relabel the unchanged buffer (or view): every level keeps its size (the caller keeps wire order)."""
    for level, old, new in zip(type(tensor).levels, tensor.params, params, strict=True):
        if old.size != new.size:
            raise VerifyError(
                "reshape-size",
                f"reshape: the {level} size must be preserved: `{old}` has {old.size} positions, "
                f"`{new}` has {new.size}",
            )
    if isinstance(tensor, TensorView):  # the same window of the same base, its levels relabelled
        result = type(tensor)(tensor.base, params[-1], tensor.window, params[:-1])
    else:
        result = type(tensor)(tensor.dtype, params, tensor.data)
    return recorded("reshape", (tensor,), result, **dict(zip(type(tensor).levels, params, strict=True)))


class TrfTensor(Tensor):
    """Tensor register file contents: `TrfTensor[bf16, Chip, Cluster, Slice, Lane, Element]`.

    Examples:
        >>> J, K = axes(J=32, K=64)
        >>> TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["J % 8"], m["J / 8 % 4, K"]]
        TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["J % 8"], m["J / 8 % 4, K"]]
    """

    levels = ("chip", "cluster", "slice", "lane", "element")
    kind = "trf"


class VrfTensor(Tensor):
    """Vector register file contents (i32/f32): `VrfTensor[i32, Chip, Cluster, Slice, Element]`.

    Examples:
        >>> A = axes(A=2048)
        >>> T = HbmTensor[i32, m["1"], m["A"]]
        >>> @device
        ... def mul(ctx: Context, a: T, b: T) -> T:
        ...     a_dm = a.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     b_dm = b.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     b_vrf = ctx.sub.begin(b_dm.view()).fetch(m["1"], m["A % 8"]).collect(m["A % 8 / 8"], m["A % 8 % 8"])
        ...     b_vrf = b_vrf.to_vrf(m["A % 8"])
        ...     s = ctx.main.begin(a_dm.view()).fetch(m["1"], m["A % 8"]).collect(m["1"], m["A % 8"]).vector_init()
        ...     s = s.vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.MulInt, b_vrf).vector_final()
        ...     return s.commit_trim(m["A % 8"]).commit(m["A % 8"]).to_hbm(ctx.tdma, m["A"])
        >>> v = np.arange(2048, dtype=np.int32)
        >>> with Context.acquire() as ctx:
        ...     a, b = (HostTensor.from_numpy(v, i32, m[A]).to_hbm(ctx.pdma) for _ in range(2))
        ...     y = launch(mul, ctx, a, b).to_host(ctx.pdma).to_numpy()
        >>> bool((y == v * v).all())
        True
    """

    levels = ("chip", "cluster", "slice", "element")
    kind = "vrf"

    def _validate(self) -> None:
        super()._validate()
        if self.dtype not in (dtypes.i32, dtypes.f32):
            raise VerifyError("vrf-dtype", f"the vector register file holds i32 or f32, not {self.dtype}")
        verify_memory.check_capacity(
            "vrf-capacity", "VRF", self.dtype, self.params[3].size, RNGD.vrf_bytes_per_slice, "per slice"
        )


# ---- views ------------------------------------------------------------------------------------------


class TensorView:
    """A window on an HBM or DM tensor: the view's levels have the base's sizes, and view position p (over
    all levels, wire order) reads or writes base position `window + p`. `tile` narrows the element's live
    cells (`chip_tile`, `cluster_tile`, `slice_tile` the outer levels'); `pad`/`unpad` re-declare them."""

    writable: ClassVar[bool] = False
    levels: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, base: HbmTensor | DmTensor, element: Mapping, window: int, outer: tuple[Mapping, ...] | None = None
    ):
        self.base, self.element, self.window = base, element, window
        self.outer = tuple(outer) if outer is not None else base.params[:-1]  # the spatial levels

    def __class_getitem__(cls, item: tuple) -> TensorType:
        return _annotation(cls, item)

    @property
    def params(self) -> tuple[Mapping, ...]:
        """The view's type parameters: its spatial levels, then its element."""
        return (*self.outer, self.element)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(element=m["{self.element}"], window={self.window}, base={self.base!r})'

    @property
    def dtype(self) -> DType:
        return self.base.dtype

    @property
    def _blocks(self) -> tuple[int, int, Mapping]:
        """(blocks, positions per block, the view's mapping of a block) for the backend's window ops: the
        base's element blocks while only the element is tiled, else the whole buffer as one block."""
        if self.outer == self.base.params[:-1] and self.window < self.base.params[-1].size:
            return math.prod(p.size for p in self.outer), self.base.params[-1].size, self.element
        return 1, self.base.storage.size, pair(*self.params)

    def _tiled(self, level: int, start: int, index: Mapping, length: int, expected: Mapping | None, what: str):
        """The view with level `level`'s mapping tiled: `length` positions of the digit `index` from
        position `start` of it (`expected`, if given, is checked against the resulting mapping)."""
        hole = PadKind.BOTTOM if self.writable else PadKind.TOP
        current = self.params[level]
        try:
            view = tile_view(current, index, length, hole)
        except MappingError as error:
            raise VerifyError("tile-split", f"{what}: {error}") from None
        if expected is not None and expected != view:
            raise VerifyError(
                "tile-view",
                f"{what}: the split produces `{view.canonical()}`, but the requested view type is `{expected}`",
            )
        inner = math.prod(p.size for p in self.params[level + 1 :])  # positions one step of this level spans
        shifts = []
        for value in start.values() if isinstance(start, Scalar) else [start]:  # a runtime start: each value
            cell = index.cell(value)
            if cell.kind != "index":
                kind = "Bottom" if self.writable else "Top"
                raise VerifyError("tile-start", f"{what} start {value} maps to {kind} padding of `{index}`")
            shifts.append(_position(current, cell.index) * inner)
        shift = shifts[0]  # tracing moves no data: a runtime start's view is typed at its first value
        params = list(self.params)
        params[level] = expected if expected is not None else view
        return type(self)(self.base, params[-1], self.window + shift, params[:-1])

    @user_facing
    def tile(self, start: int, index: Mapping, length: int, element: Mapping | None = None) -> TensorView:
        """Keep `length` positions of the element digit `index`, from position `start` of it; `element`,
        if given, is checked against the resulting view type.

            row = table.view().tile(3, m["C"], 1, m["1 # 64, H"])   # row 3 of a [C, H] element
        """
        result = self._tiled(len(self.params) - 1, start, index, length, element, "tile")
        return recorded("tile", (self,), result, start=start, index=index, length=length, element=result.element)

    @user_facing
    def chip_tile(self, start: int, index: Mapping, length: int, chip: Mapping | None = None) -> TensorView:
        """`tile` on the chip level: keep `length` positions of the chip digit `index` from `start`.

        one = x.view().chip_tile(2, m["A / 4 % 4"], 1, m["1 # 4"])   # the part of x on chip 2
        """
        result = self._tiled(0, start, index, length, chip, "chip_tile")
        return recorded("chip_tile", (self,), result, start=start, index=index, length=length, chip=result.outer[0])

    @user_facing
    def reshape(self, *levels: Mapping) -> TensorView:
        """Upstream's (unsafe) view `reshape`: the same cells relabelled by new mappings of the same
        sizes, one per level; like a tensor's `reshape`, it must keep the wire order (a regrouping, not a
        permutation), which is not checked.

            cache.view_mut().reshape(m["1"], m["L, H / 64, H % 64"])   # [L, H] as [L, heads, head_dim]
        """
        return _reshaped(self, levels)

    @user_facing
    def pad(self, element: Mapping) -> TensorView:
        """The view with padding added to its element mapping, live cells in place: `v.pad(m["A # 16"])`."""
        try:
            check_pad(self.element, element)
        except MappingError as error:
            raise VerifyError("pad-view", str(error)) from None
        return recorded("pad", (self,), type(self)(self.base, element, self.window, self.outer), element=element)

    @user_facing
    def unpad(self, element: Mapping) -> TensorView:
        """The view with padding removed from its element mapping, the inverse of `pad`: `v.unpad(m["A"])`."""
        try:
            check_pad(element, self.element)
        except MappingError as error:
            raise VerifyError("unpad-view", str(error)) from None
        return recorded("unpad", (self,), type(self)(self.base, element, self.window, self.outer), element=element)

    def read(self) -> Tensor:
        """The cells this view sees, as a tensor of the base's kind with the view's levels."""
        if self.window == 0 and self.params == self.base.params:  # the whole tensor: nothing to cut
            return type(self.base)(self.dtype, self.base.params, self.base.data)
        blocks, block, mapping = self._blocks
        try:
            data = active().window_read(self.base.data, blocks, block, self.window, mapping.factors)
        except IndexError as error:
            raise VerifyError("view-bounds", f"the view `{mapping}` at window {self.window}: {error}") from None
        return type(self.base)(self.dtype, self.params, data)

    def write(self, source: Tensor, what: str) -> None:
        """Store `source` (laid out as the view's levels) into the live cells of the view."""
        blocks, block, mapping = self._blocks
        try:
            written = active().window_write(self.base.data, blocks, block, self.window, mapping.factors, source.data)
        except IndexError as error:
            raise VerifyError("view-bounds", f"{what}: the view `{mapping}`: {error}") from None
        self.base.data = written

    # ---- moves out of a view (reads) ----

    @user_facing
    def to_dm(self, tdma: DmaContext, cluster: Mapping, slice: Mapping, element: Mapping) -> DmTensor:
        """HBM → DM (or DM → DM with unchanged chip/cluster/slice sizes), checked for DMA alignment."""
        expect_context(tdma, ("tdma",), f"{type(self.base).__name__}.to_dm")
        source = self.read()
        what = f"{type(self.base).__name__}.to_dm"
        if isinstance(self.base, DmTensor):
            verify_memory.check_sizes_preserved(self.outer[1:], (cluster, slice), what)
        params = (self.outer[0], cluster, slice, element)
        verify_memory.check_dma_layout(
            source.storage, pair(*params), source.params[-1], element, self.dtype, RNGD.dma_sram_write_align, what
        )
        result = moved(source, DmTensor, params, True, what)
        return recorded("to_dm", (self,), result, ctx=tdma, cluster=cluster, slice=slice, element=element)

    @user_facing
    def to_hbm(self, dma: DmaContext, element: Mapping | None = None) -> HbmTensor:
        """The cells of the view into a new HBM tensor laid out by `element` (default: the view's)."""
        allowed = ("tdma",) if isinstance(self.base, DmTensor) else ("tdma", "pdma")
        what = f"{type(self.base).__name__}.to_hbm"
        expect_context(dma, allowed, what)
        target = element if element is not None else self.element
        result = moved(self.read(), HbmTensor, (self.outer[0], target), True, what)
        return recorded("to_hbm", (self,), result, ctx=dma, element=target)

    @user_facing
    def to_dm_view(self, tdma: DmaContext, destination: TensorView) -> None:
        """Write the view's cells into a DM write view (`dm.view_mut()`, tiled or not) with the tensor DMA."""
        expect_context(tdma, ("tdma",), "to_dm_view")
        _expect_writable(destination, DmTensor, "to_dm_view")
        source = self.read()
        params = (*destination.outer, destination.element)
        verify_memory.check_dma_layout(
            source.storage,
            pair(*params),
            source.params[-1],
            destination.element,
            self.dtype,
            RNGD.dma_sram_write_align,
            "to_dm_view",
        )
        destination.write(moved(source, DmTensor, params, True, "to_dm_view"), "to_dm_view")
        recorded("to_dm_view", (self, destination), None, ctx=tdma)

    @user_facing
    def to_hbm_view(self, dma: DmaContext, destination: TensorView) -> None:
        """Write the view's cells into an HBM write view, e.g. a kernel's `HbmTensorViewMut` out-parameter:
        `dm.view().to_hbm_view(ctx.tdma, out)`.
        """
        expect_context(dma, ("tdma", "pdma"), "to_hbm_view")
        _expect_writable(destination, HbmTensor, "to_hbm_view")
        source = self.read()
        target = moved(source, HbmTensor, (*destination.outer, destination.element), True, "to_hbm_view")
        destination.write(target, "to_hbm_view")
        recorded("to_hbm_view", (self, destination), None, ctx=dma)


def _expect_writable(view: object, kind: type[Tensor], what: str) -> None:
    if not isinstance(view, TensorView) or not view.writable or not isinstance(view.base, kind):
        raise VerifyError("view-mut", f"{what} writes into a `{kind.__name__}.view_mut()`, got {view!r}")


def _shuffled(view: TensorView, level: int, dma: DmaContext, pattern, dim: int | None, what: str) -> Tensor:
    """A fresh tensor of the view's type whose level-`level` position `target` holds the view's position
    `pattern[target]`: one DMA per target, between one-position tiles of that level (upstream's
    composition, so the vISA shows each move)."""
    index = view.params[level]
    pattern = [int(p) for p in pattern]
    dim = len(pattern) if dim is None else dim
    verify_memory.check_shuffle(pattern, dim, index, what)
    tile = ("chip_tile", "cluster_tile")[level]
    if isinstance(view.base, DmTensor):
        out = DmTensor.new(view.dtype, *view.params)
    else:
        out = HbmTensor.new(view.dtype, *view.params)
    for target, source in enumerate(pattern):
        piece = getattr(view, tile)(source, index, 1, m[f"1 # {dim}"])
        slot = getattr(out.view_mut(), tile)(target, index, 1, m[f"1 #{{!}} {dim}"])
        if isinstance(out, DmTensor):
            piece.to_dm_view(dma, slot)
        else:
            piece.to_hbm_view(dma, slot)
    return out


class HbmTensorView(TensorView):
    """A read view of an HBM tensor; also a kernel parameter type, `HbmTensorView[bf16, Chip, Element]`:

    row = table.view().tile(3, m["C"], 1, m["1 # 64, H"])   # on the host: row 3 of a [C, H] table
    launch(copy_row, ctx, row, out.view_mut().tile(5, m["C"], 1, m["1 #{!} 64, H"]))

    Examples:
        >>> R, H = axes(R=4, H=64)
        >>> table = HostTensor.from_numpy(np.arange(256, dtype=np.int32).reshape(4, 64), i32, m["R, H"])
        >>> with Context.acquire() as ctx:
        ...     row = table.to_hbm(ctx.pdma).view().tile(2, m["R"], 1, m["1 # 4, H"])   # row 2 of the table
        >>> row
        HbmTensorView(element=m["1 # 4, H"], window=128, base=HbmTensor[i32, m["1"], m["R, H"]])
    """

    levels = ("chip", "element")

    @user_facing
    def hbm_chip_shuffle(self, dma: DmaContext, pattern, chip_dim: int | None = None) -> HbmTensor:
        """A new HBM tensor whose chip `target` holds this view's chip `pattern[target]` (HBM → HBM DMA on
        `ctx.tdma` or `ctx.pdma`); `chip_dim` (upstream's `CHIP_DIM`, default the pattern's length) must be
        the chip level's size.

            rotated = x.view().hbm_chip_shuffle(ctx.tdma, [1, 2, 3, 0])   # chip 1 → 0, 2 → 1, …
        """
        expect_context(dma, ("tdma", "pdma"), "hbm_chip_shuffle")
        return _shuffled(self, 0, dma, pattern, chip_dim, "hbm_chip_shuffle")


class HbmTensorViewMut(TensorView):
    """A write view of an HBM tensor (`HbmTensor.view_mut()`); as a kernel parameter,
    `HbmTensorViewMut[bf16, Chip, Element]` is an out-parameter the kernel writes in place:

        @device
        def store(ctx: Context, x: HbmTensor[bf16, Chip, m["S"]], out: HbmTensorViewMut[bf16, Chip, m["S"]]):
            x.to_dm(ctx.tdma, Cluster, Slice, m["S"]).view().to_hbm_view(ctx.tdma, out)

    Examples:
        >>> S = axes(S=2048)
        >>> @device
        ... def store(ctx: Context, x: HbmTensor[i32, m["1"], m["S"]], out: HbmTensorViewMut[i32, m["1"], m["S"]]):
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["S / 8 # 256"], m["S % 8"])
        ...     dm.view().to_hbm_view(ctx.tdma, out)                     # writes the caller's tensor in place
        >>> with Context.acquire() as ctx:
        ...     out = HostTensor.zeros(i32, m[S]).to_hbm(ctx.pdma)
        ...     x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[S]).to_hbm(ctx.pdma)
        ...     launch(store, ctx, x, out.view_mut())
        ...     print(out.to_host(ctx.pdma).to_numpy()[:3])
        [0 1 2]
    """

    writable = True
    levels = ("chip", "element")


class _DmLevels(TensorView):
    """What DM views add: tiles of the cluster and slice levels (an HBM tensor has neither)."""

    @user_facing
    def cluster_tile(self, start: int, index: Mapping, length: int, cluster: Mapping | None = None) -> TensorView:
        """`tile` on the cluster level.

        upper = dm.view().cluster_tile(1, m["A / 2 % 2"], 1, m["1 # 2"])   # cluster 1's part
        """
        result = self._tiled(1, start, index, length, cluster, "cluster_tile")
        return recorded(
            "cluster_tile", (self,), result, start=start, index=index, length=length, cluster=result.outer[1]
        )

    @user_facing
    def slice_tile(self, start: int, index: Mapping, length: int, slice: Mapping | None = None) -> TensorView:
        """`tile` on the slice level.

        half = dm.view().slice_tile(0, m["S"], 128, m["S = 128 # 256"])   # slices 0..127
        """
        result = self._tiled(2, start, index, length, slice, "slice_tile")
        return recorded("slice_tile", (self,), result, start=start, index=index, length=length, slice=result.outer[2])


class DmTensorView(_DmLevels):
    """A read view of a DM tensor (`DmTensor.view()`), the input of `ctx.main.begin(...)`.

    Examples:
        >>> A = axes(A=2048)
        >>> @device
        ... def add_one(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
        ...     dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A / 8 # 256"], m["A % 8"])
        ...     out = (
        ...         ctx.main.begin(dm.view())
        ...         .fetch(m["1"], m["A % 8"])
        ...         .collect(m["1"], m["A % 8"])
        ...         .vector_init()
        ...         .vector_intra_slice_tag(TagMode.Zero)
        ...         .vector_fxp(FxpBinaryOp.AddFxp, 1)
        ...         .vector_final()
        ...         .commit_trim(m["A % 8"])
        ...         .commit(m["A % 8"])
        ...     )
        ...     return out.to_hbm(ctx.tdma, m["A"])
        >>> x = HostTensor.from_numpy(np.arange(2048, dtype=np.int32), i32, m[A])
        >>> with Context.acquire() as ctx:
        ...     y = launch(add_one, ctx, x.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> y[:4]
        array([1, 2, 3, 4], dtype=int32)
    """

    levels = ("chip", "cluster", "slice", "element")

    @user_facing
    def to_dm_pcopy(self, sub: ExecutionContext, slice: Mapping, element: Mapping) -> DmTensor:
        """The view's cells as a new DM tensor by ParallelCopy on the sub context (see `DmTensor.to_dm_pcopy`).

        part = dm.view().tile(0, m["B"], 64, m["B = 64 # 128"]).to_dm_pcopy(ctx.sub, m["A"], m["B = 64 # 128"])
        """
        expect_context(sub, ("sub",), "to_dm_pcopy")
        params = (self.outer[0], self.outer[1], slice, element)
        verify_memory.check_sizes_preserved(self.outer[1:], params[1:3], "to_dm_pcopy")
        result = moved(self.read(), DmTensor, params, True, "to_dm_pcopy")
        return recorded("to_dm_pcopy", (self,), result, ctx=sub, slice=slice, element=element)

    @user_facing
    def to_dm_view_pcopy(self, sub: ExecutionContext, destination: TensorView) -> None:
        """Write the view's cells into the live cells of a DM `view_mut()` by ParallelCopy on the sub
        context (chip, cluster and slice sizes kept); a write does not broadcast.

            src.view().to_dm_view_pcopy(ctx.sub, out.view_mut().cluster_tile(1, m["C"], 1, m["1 #{!} 2"]))
        """
        expect_context(sub, ("sub",), "to_dm_view_pcopy")
        _expect_writable(destination, DmTensor, "to_dm_view_pcopy")
        verify_memory.check_sizes_preserved(self.outer[1:], destination.outer[1:], "to_dm_view_pcopy")
        params = (*destination.outer, destination.element)
        destination.write(moved(self.read(), DmTensor, params, False, "to_dm_view_pcopy"), "to_dm_view_pcopy")
        recorded("to_dm_view_pcopy", (self, destination), None, ctx=sub)

    @user_facing
    def dm_chip_shuffle(self, tdma: DmaContext, pattern, chip_dim: int | None = None) -> DmTensor:
        """A new DM tensor whose chip `target` holds this view's chip `pattern[target]` (DM → DM DMA
        across chips); `chip_dim` (upstream's `CHIP_DIM`, default the pattern's length) must be the chip
        level's size.

            shuffled = dm.view().dm_chip_shuffle(ctx.tdma, [1, 2, 3, 0])   # chip 1 → 0, 2 → 1, …
        """
        expect_context(tdma, ("tdma",), "dm_chip_shuffle")
        return _shuffled(self, 0, tdma, pattern, chip_dim, "dm_chip_shuffle")

    @user_facing
    def dm_cluster_shuffle(self, tdma: DmaContext, pattern, cluster_dim: int | None = None) -> DmTensor:
        """A new DM tensor whose cluster `target` holds this view's cluster `pattern[target]`;
        `cluster_dim` (upstream's `CLUSTER_DIM`, default the pattern's length) must be the cluster level's
        size. A pattern shorter than it leaves the clusters it does not name unwritten.

            swapped = dm.view().dm_cluster_shuffle(ctx.tdma, [1, 0])
        """
        expect_context(tdma, ("tdma",), "dm_cluster_shuffle")
        return _shuffled(self, 1, tdma, pattern, cluster_dim, "dm_cluster_shuffle")


class DmTensorViewMut(_DmLevels):
    """A write view of a DM tensor (`DmTensor.view_mut()`), the target of `commit_view` and `to_dm_view`.

    Examples:
        >>> A, I = axes(A=2048, I=2)
        >>> In, Out = HbmTensor[i8, m["1"], m["A"]], HbmTensor[i32, m["1"], m["A"]]
        >>> @device
        ... def add(ctx: Context, a: In, b: In) -> Out:
        ...     a_dm = a.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     b_dm = b.to_dm(ctx.tdma, m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     out = DmTensor.new(i32, m["1"], m["1 # 2"], m["A / 8"], m["A % 8"])
        ...     (
        ...         ctx.main.begin_interleaved(a_dm.view(), b_dm.view(), I)    # I = 0: a, I = 1: b
        ...         .fetch(m["I"], m["A % 8"]).fetch_cast(i32).collect(m["I"], m["A % 8"])
        ...         .vector_init()
        ...         .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])           # a VectorPair: g0 = a, g1 = b
        ...         .vector_clip_zip(ClipBinaryOpI32.AddFxp)                  # one stream again: a + b
        ...         .vector_final()
        ...         .commit_trim(m["A % 8"])
        ...         .commit_view(out.view_mut())                              # into the DmTensorViewMut
        ...     )
        ...     return out.to_hbm(ctx.tdma, m["A"])
        >>> rng = np.random.default_rng(0)
        >>> a, b = HostTensor.rand(i8, m[A], rng), HostTensor.rand(i8, m[A], rng)
        >>> with Context.acquire() as ctx:
        ...     y = launch(add, ctx, a.to_hbm(ctx.pdma), b.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
        >>> bool((y == a.to_numpy().astype(np.int32) + b.to_numpy()).all())
        True
    """

    writable = True
    levels = ("chip", "cluster", "slice", "element")

    @user_facing
    def memset(self, value: Any, sub: ExecutionContext) -> None:
        """Upstream's `DmTensorViewMut::memset`: every live cell of the DM tensor becomes `value` (in the
        tensor's dtype, converted as `HostTensor.from_vec` converts; padding is left as it was). One
        ParallelMemSet on the sub context: the Commit Adapter's Generate Mode writes the constant in
        every slice at once, with no stream behind it.

            dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
            dm.view_mut().memset(bf16.from_f32(1.0), ctx.sub)   # or simply 1.0

        Only a whole tensor is filled (`memset-view`), as upstream. Upstream needs `const { .. }` around
        a computed value and does not fill f4e2m1 yet; any Python value is a constant here, and f4e2m1
        fills like i4.
        """
        expect_context(sub, ("sub",), "memset")
        verify_memory.check_memset_view(self.window, self.element, self.base.params[-1])
        try:
            stored = dtypes.from_user(np.asarray(value), self.dtype)
        except dtypes.DTypeError as error:
            raise VerifyError("memset-value", f"memset: {error}") from None
        count = math.prod(p.size for p in self.base.params)
        self.write(
            DmTensor(self.dtype, self.base.params, active().constant(stored, self.dtype.storage, count)), "memset"
        )
        recorded("memset", (self,), None, ctx=sub, code=dtypes.code_of(stored, self.dtype))
