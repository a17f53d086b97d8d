"""`@device` kernels and `launch`.

A kernel is a module-level function whose parameters carry their tensor types as annotations, so the
compiler can trace it from its signature alone. Its identity is `module.qualname` of the definition.
"""

from __future__ import annotations

import inspect
import linecache
import threading
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from furiosa_opt import env
from furiosa_opt.arch import RNGD
from furiosa_opt.backend import device as registered_device
from furiosa_opt.diagnostics import Location, VerifyError, user_facing
from furiosa_opt.lang import params, plan
from furiosa_opt.lang.context import RUNNING, DmaContext
from furiosa_opt.lang.params import ParamType
from furiosa_opt.lang.stream import TuContext
from furiosa_opt.lang.tensors import TensorType


def definition(fn: Callable) -> Location:
    """The `def` line of a function (its code object starts at the first decorator)."""
    code = fn.__code__
    line = code.co_firstlineno
    while line < code.co_firstlineno + 20:
        text = linecache.getline(code.co_filename, line).lstrip()
        if text.startswith(("def ", "async def ")) or not text:
            break
        line += 1
    column = len(linecache.getline(code.co_filename, line)) - len(linecache.getline(code.co_filename, line).lstrip())
    return Location(code.co_filename, line, fn.__name__, column + 1)


class Context:
    """The device's execution contexts: `main` and `sub` start Tensor Unit pipelines, `tdma` and `pdma`
    move tensors. `Context.acquire()` hands out the process-wide one:

        with Context.acquire() as ctx:
            out = launch(kernel, ctx, x.to_hbm(ctx.pdma))

    Examples:
        >>> A = axes(A=64)
        >>> with Context.acquire() as ctx:                       # one holder at a time
        ...     hbm = HostTensor.from_numpy(np.arange(64, dtype=np.int32), i32, m[A]).to_hbm(ctx.pdma)
        ...     back = hbm.to_host(ctx.pdma).to_numpy()
        >>> ctx, bool((back == np.arange(64)).all())
        (Context(main, sub, tdma, pdma), True)
    """

    _lock = threading.Lock()
    _holder: int | None = None  # the thread holding the context (`acquire`)

    def __init__(self):
        self.main, self.sub = TuContext("main"), TuContext("sub")
        self.tdma, self.pdma = DmaContext("tdma"), DmaContext("pdma")
        self.bound: Device | None = None

    def bind(self, device: Device) -> Context:
        """Upstream's `Acquired::bind(kernel.device())`: fix the device the NPU backend runs on before
        any launch. The first bind holds for the process; binding another device is refused, and so is
        launching a kernel compiled for another device on the NPU backend. The CPU backend ignores it.

            with Context.acquire() as ctx:
                ctx.bind(forward.device)
        """
        if not isinstance(device, Device):
            raise VerifyError("context-bind", f"bind takes a kernel's `device` (a Device), got {device!r}")
        if self.bound is not None and self.bound != device:
            raise VerifyError(
                "context-bind", f"the context is bound to {self.bound}; it cannot be bound to {device} as well"
            )
        self.bound = device
        return self

    def __repr__(self) -> str:
        return "Context(main, sub, tdma, pdma)"

    @classmethod
    @contextmanager
    def acquire(cls) -> Iterator[Context]:
        """`with Context.acquire() as ctx:` — one holder at a time, like upstream's singleton. A thread
        that holds it already is refused (it would wait for itself forever): pass on the `ctx` it has.
        """
        if cls._holder == threading.get_ident():
            raise VerifyError(
                "context-acquire",
                "Context.acquire() inside a `with Context.acquire()` of the same thread would wait for itself; "
                "use the context that block gave",
            )
        with cls._lock:
            cls._holder = threading.get_ident()
            try:
                yield PROCESS_CONTEXT
            finally:
                cls._holder = None

    @classmethod
    @contextmanager
    def held(cls) -> Iterator[Context]:
        """The context, acquired for the block unless this thread holds it already: for library code that
        launches on behalf of a caller who may be inside `with Context.acquire()` (a torch operator).

            with Context.held() as ctx:
                out = launch(kernel, ctx, x)
        """
        if cls._holder == threading.get_ident():
            yield PROCESS_CONTEXT
            return
        with cls.acquire() as ctx:
            yield ctx


# The process-wide Context that `Context.acquire()` hands out. The tracer binds a kernel's Context parameter to
# it, and the vISA reader names its contexts by it, so a traced or replayed kernel sees the contexts a launch does.
PROCESS_CONTEXT = Context()


@dataclass(frozen=True, slots=True)
class Device:
    """The NPU a kernel is compiled for: `chip` chips of `pe` processing elements each.

    Examples:
        >>> @device(chip=1, pe=8)
        ... def noop(ctx: Context):
        ...     pass
        >>> noop.device
        Device(chip=1, pe=8)
    """

    chip: int = 1
    pe: int = 8


@dataclass(frozen=True)
class Parameter:
    name: str
    type: ParamType | None  # None: the Context


class DeviceFunction:
    """A `@device` kernel: call it through `launch(kernel, ctx, *tensors)`.

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
        >>> copy.device
        Device(chip=1, pe=8)
        >>> [p.name for p in copy.parameters]
        ['ctx', 'x']
    """

    def __init__(self, fn: Callable, device: Device):
        self.fn, self.device = fn, device
        self.identity = f"{fn.__module__}.{fn.__qualname__}"
        self.location = definition(fn)
        self.__doc__, self.__name__, self.__qualname__ = fn.__doc__, fn.__name__, fn.__qualname__
        self.__module__ = fn.__module__
        self._signature: tuple[list[Parameter], tuple[TensorType, ...] | None] | None = None

    def __repr__(self) -> str:
        return f"<device function {self.identity} (chip={self.device.chip}, pe={self.device.pe})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise VerifyError(
            "device-call",
            f"`{self.identity}` is a device function: run it with `launch({self.__name__}, ctx, ...)`",
        )

    @property
    def parameters(self) -> list[Parameter]:
        return self.signature[0]

    @property
    def returns(self) -> tuple[TensorType, ...] | None:
        return self.signature[1]

    @property
    def leaf_types(self) -> list[tuple[str, TensorType]]:
        """(path, type) of every tensor or view the kernel takes, flattened in declaration order."""
        return [leaf for p in self.parameters if p.type is not None for leaf in params.leaf_types(p.type, p.name)]

    def bind(self, args: tuple) -> list[tuple[str, TensorType, object]]:
        """(path, type, value) of every leaf of `launch`'s arguments, checked against the annotations."""
        declared = [p for p in self.parameters if p.type is not None]
        if len(args) != len(declared):
            raise VerifyError(
                "launch-arity", f"`{self.identity}` takes {len(declared)} argument(s) after ctx, got {len(args)}"
            )
        try:
            return [leaf for p, a in zip(declared, args, strict=True) for leaf in params.leaves(p.type, a, p.name)]
        except params.ParamError as error:
            raise VerifyError("launch-argument", f"`{self.identity}`: argument {error}") from None

    @property
    def signature(self) -> tuple[list[Parameter], tuple[TensorType, ...] | None]:
        """Parameter and return types, read from the annotations (evaluated in the kernel's module)."""
        if self._signature is None:
            self._signature = _read_signature(self.fn, self.location)
        return self._signature


def _read_signature(fn: Callable, where: Location) -> tuple[list[Parameter], tuple[TensorType, ...] | None]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception as error:
        raise VerifyError(
            "device-annotation",
            f"cannot evaluate the annotations of `{fn.__qualname__}`: {error}",
            location=where,
        ) from None
    found = []
    for name in inspect.signature(fn).parameters:
        hint = hints.get(name)
        if hint is Context:
            found.append(Parameter(name, None))
            continue
        try:
            found.append(Parameter(name, params.param_type(hint)))
        except params.ParamError as error:
            raise VerifyError(
                "device-annotation", f"parameter `{name}` of `{fn.__qualname__}`: {error}", location=where
            ) from None
    returned = hints.get("return")
    if returned is None or returned is type(None):
        return found, None
    if isinstance(returned, TensorType):
        return found, (returned,)
    if typing.get_origin(returned) is tuple and all(isinstance(a, TensorType) for a in typing.get_args(returned)):
        return found, typing.get_args(returned)
    raise VerifyError(
        "device-annotation",
        f"the return annotation of `{fn.__qualname__}` must be a tensor type or a tuple of them, got {returned!r}",
        location=where,
    )


def device(fn: Callable | None = None, *, chip: int = 1, pe: int = 8) -> Any:
    """Mark a module-level function as a kernel: `@device` or `@device(chip=1, pe=8)`.

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

    def wrap(function: Callable) -> DeviceFunction:
        where = definition(function)
        if "<locals>" in function.__qualname__:
            raise VerifyError(
                "device-nested",
                f"`@device` needs a module-level function; `{function.__qualname__}` "
                "is nested, so it has no stable identity",
                location=where,
            )
        if chip < 1 or pe not in RNGD.pe_counts:
            raise VerifyError(
                "device-shape",
                f"@device(chip={chip}, pe={pe}): chip must be ≥ 1 and pe one of {list(RNGD.pe_counts)}",
                location=where,
            )
        return DeviceFunction(function, Device(chip, pe))

    return wrap(fn) if fn is not None else wrap


@user_facing
def launch(kernel: DeviceFunction, ctx: Context, *args: object) -> Any:
    """Run a kernel: checks the arguments against its annotations and returns its output tensor(s).

    Arguments are HBM tensors, HBM views (`t.view()`, `t.view_mut().tile(...)`), tuples and dataclasses of
    them, as annotated. A kernel writes an out-parameter in place, on either backend:

        out = HostTensor.zeros(bf16, m["S"]).to_hbm(ctx.pdma)
        launch(store, ctx, x, out.view_mut())
        out.to_host(ctx.pdma).to_numpy()   # what the kernel wrote

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
    if not isinstance(kernel, DeviceFunction):
        raise VerifyError("launch-kernel", f"launch needs a @device function, got {kernel!r}")
    backend = _check_backend(kernel)
    if not isinstance(ctx, Context):
        raise VerifyError("launch-context", f"launch({kernel.__name__}, ctx, ...) needs the Context first, got {ctx!r}")
    if backend == "cpu":
        return plan.launch(kernel, ctx, args, run_on_cpu)
    leaves = kernel.bind(args)
    if ctx.bound is not None and ctx.bound != kernel.device:
        raise VerifyError(
            "launch-device",
            f"`{kernel.identity}` is compiled for {kernel.device}, the context is bound to {ctx.bound}",
        )
    return returned(kernel, runtime_for(backend).run(kernel, [value for _, _, value in leaves]))


def run_on_cpu(kernel: DeviceFunction, ctx: Context, args: tuple) -> Any:
    """The kernel's body on the CPU backend, its arguments checked against its annotations."""
    kernel.bind(args)
    values = iter(args)
    bound = [ctx if p.type is None else next(values) for p in kernel.parameters]
    token = RUNNING.set(kernel.identity)  # run-time faults (a gather's bad index) name the kernel
    try:
        result = kernel.fn(*bound)
    finally:
        RUNNING.reset(token)
    return check_result(kernel, result)


def runtime_for(backend: str) -> Any:
    """The runtime registered for a device backend (`furiosa_opt.runtime` for `npu`, loaded by
    `import furiosa_opt.runtime`, by `from furiosa_opt import …` under that backend, and by the wrapper)."""
    runtime = registered_device(backend)
    if runtime is None:
        raise VerifyError(
            "launch-backend",
            f"FURIOSA_OPT_BACKEND={backend} needs its runtime, which is not loaded: `import furiosa_opt.runtime` "
            "before launching (the furiosa-opt wrapper and `from furiosa_opt import …` do it for you)",
        )
    return runtime


def _check_backend(kernel: DeviceFunction) -> str:
    """The backend to run on (`cpu` or `npu`); RNGD hardware is refused, this build cannot drive it."""
    try:
        backend, device = env.backend(), env.device()
    except env.EnvError as error:
        raise VerifyError("launch-environment", str(error)) from None
    if device == "rngd":
        raise VerifyError(
            "launch-device",
            f"cannot run `{kernel.identity}` on RNGD hardware: it needs FuriosaAI's SDK and binary format, "
            "which this build does not have (FURIOSA_OPT_DEVICE=sim is the supported device)",
        )
    return backend


def returned(kernel: DeviceFunction, results: list) -> Any:
    """What `launch` hands back for a backend's list of result tensors: None, one tensor, or a tuple."""
    return check_result(kernel, tuple(results) if len(results) != 1 else results[0]) if results else None


def check_result(kernel: DeviceFunction, result: Any) -> Any:
    """`result` itself, once it matches the kernel's return annotation (`launch-result` otherwise): checked
    by every backend, and by the tracer on the symbolic result."""
    expected = kernel.returns
    if expected is None:
        return result
    got = result if isinstance(result, tuple) else (result,)
    if len(got) != len(expected):
        raise VerifyError(
            "launch-result",
            f"`{kernel.identity}` returned {len(got)} value(s), its annotation promises {len(expected)}",
            location=kernel.location,
        )
    for i, (want, value) in enumerate(zip(expected, got, strict=True)):
        reason = want.mismatch(value)
        if reason:
            raise VerifyError("launch-result", f"result {i} of `{kernel.identity}`: {reason}", location=kernel.location)
    return result
