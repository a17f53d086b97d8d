"""The stage table and its driver: each stage is a named function from one IR to the next.

Stage 1 ("visa") traces a `@device` function (or replays hand-written vISA) into vISA; stage 2 ("lir")
places buffers and lowers every op into per-context commands; stage 3 ("edf") costs and schedules the
commands (ResourceLir) and writes the EDF.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from furiosa_opt import __version__, env
from furiosa_opt.backend.trace import Tracer, trace
from furiosa_opt.compiler import visa
from furiosa_opt.compiler.cache import artifact_key
from furiosa_opt.compiler.diagnostics import Diagnostic, Span, from_error
from furiosa_opt.compiler.edf import write_edf
from furiosa_opt.compiler.hazards import bank_starvation
from furiosa_opt.compiler.lir import Lir
from furiosa_opt.compiler.lower import lower
from furiosa_opt.compiler.replay import replay
from furiosa_opt.compiler.schedule import Schedule, schedule
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.files import expression_problem, has_control, identity_problem, printable
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.mapping import MappingError


@dataclass
class Compiled:
    identity: str
    visa: visa.Kernel | None = None
    lir: Lir | None = None
    plan: Schedule | None = None
    edf: bytes | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics that refuse the kernel (warnings do not, unless `--deny warnings` made them errors)."""
        return [d for d in self.diagnostics if d.level == "error"]

    @property
    def ok(self) -> bool:
        return self.edf is not None and not self.errors

    @property
    def visa_text(self) -> str:
        return visa.print_kernel(self.visa)


def _lir(result: Compiled, ir: visa.Kernel, root: Path | None) -> None:
    """vISA → LIR; a placement or sequencing refusal is a stage-2 diagnostic at the user's line."""
    result.lir = lower(ir, root)


def _edf(result: Compiled, ir: visa.Kernel, root: Path | None) -> None:
    """LIR → ResourceLir → schedule (and the hazards it shows, as warnings) → EDF. The EDF's key is the
    vISA it was compiled from, so compiling a dumped vISA gives the same bytes as compiling the Python."""
    result.plan = schedule(result.lir, env.scheduler())
    result.diagnostics += bank_starvation(result.plan, ir.ops)
    device = f"chip={result.lir.chip},pe={result.lir.pe}"
    timings = [(s.costed.command.index, s.start, s.end) for s in result.plan.slots]
    result.edf = write_edf(
        result.lir, compiler_version=__version__, cache_key=artifact_key(result.visa_text, device), schedule=timings
    )


# The compiler's passes after stage 1 ("visa", which `compile_kernel` traces and `compile_visa` replays), in
# order, each named by the stage its diagnostics report: each fills the next field of `Compiled` from the
# vISA; a refusal stops the walk as its diagnostic. (`furiosa_opt.stages.STAGES` is the Tensor Unit's.)
PASSES: tuple[tuple[str, Callable[[Compiled, visa.Kernel, Path | None], None]], ...] = (("lir", _lir), ("edf", _edf))


def _walk(result: Compiled, ir: visa.Kernel, root: Path | None) -> None:
    for name, run in PASSES:
        start = time.perf_counter()
        try:
            run(result, ir, root)
        except FuriosaOptError as error:
            result.diagnostics.append(from_error(error, name, result.identity))
        result.seconds[name] = time.perf_counter() - start
        if result.errors:
            return


def relocate(kernel: visa.Kernel, root: Path) -> visa.Kernel:
    """Locations relative to `root`, so that artifacts do not depend on where the package lives."""

    def moved(loc: visa.Loc | None) -> visa.Loc | None:
        if loc is None:
            return None
        path = Path(loc.file)
        if path.is_absolute() and path.resolve().is_relative_to(root.resolve()):
            return visa.Loc(path.resolve().relative_to(root.resolve()).as_posix(), loc.line, loc.column)
        return loc

    return replace(kernel, ops=tuple(replace(op, loc=moved(op.loc)) for op in kernel.ops))


def compile_kernel(kernel: DeviceFunction, root: Path | None = None, tracer: Tracer | None = None) -> Compiled:
    """Stage 1 of one kernel: trace it (with `tracer` when given, see `trace`); every independent refusal
    becomes a diagnostic."""
    result = Compiled(kernel.identity)
    start = time.perf_counter()
    try:
        ir, errors = trace(kernel, tracer=tracer)
    except Exception as error:  # a Python error inside the kernel body: report it at the user's line
        ir, errors = None, [error]
    result.seconds["visa"] = time.perf_counter() - start
    result.diagnostics = [from_error(e, "visa", kernel.identity) for e in errors]
    if ir is not None:
        result.visa = relocate(ir, root) if root else ir
        _walk(result, ir, root)
    return result


class VisaFileError(FuriosaOptError):
    """A vISA file that cannot be compiled before parsing starts, or whose text does not parse."""

    def __init__(self, path: Path, line: int, code: str, message: str, show_line: bool = True):
        self.path, self.line, self.code, self.show_line = Path(path), line, code, show_line
        super().__init__(message)

    def diagnostic(self) -> Diagnostic:
        if not self.show_line:  # the line itself is not fit for a terminal: the message names it
            return Diagnostic(self.code, f"{self.path}: {self}", "visa", None, [])
        return Diagnostic(self.code, str(self), "visa", None, [Span(str(self.path), max(1, self.line), 1)])


def load_visa(path: Path) -> visa.Kernel:
    """The parsed vISA file, or a VisaFileError saying what is wrong (one line, at the file): a file that
    cannot be read (missing, a directory, unreadable), that is not UTF-8 text, a line holding what no
    printed vISA holds (a `{…}` Python escape in a mapping, a special name, a string: the parsers would
    evaluate them, `files.expression_problem`), text that does not parse, or a kernel identity that could
    not name an artifact (`files.identity_problem`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise VisaFileError(path, 1, "visa-file", f"cannot read {path}: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise VisaFileError(
            path, line, "visa-file", f"{path} is not vISA text (not UTF-8 at byte {error.start})"
        ) from None
    for number, line in enumerate(text.split("\n"), 1):
        if has_control(line.replace("\t", " ").removesuffix("\r")):
            problem = f"vISA line {number} holds a control character: {printable(line)[:60]}"
            raise VisaFileError(path, number, "visa-syntax", problem, show_line=False)
        body = line.partition("  // ")[0]  # the op without its source location
        problem = None if line.startswith("kernel ") else expression_problem(body)
        if problem is not None:
            raise VisaFileError(path, number, "visa-syntax", f"vISA line {number}: the line {problem}")
    try:
        parsed = visa.parse_kernel(text)
    except visa.VisaSyntaxError as error:
        raise VisaFileError(path, error.line, "visa-syntax", printable(str(error))) from None
    except (MappingError, RecursionError) as error:  # what the mapping parser refuses inside a type
        detail = (str(error).splitlines() or [""])[0]
        raise VisaFileError(path, 1, "visa-syntax", printable(f"vISA: {detail}")) from None
    problem = identity_problem(parsed.identity)
    if problem is not None:
        raise VisaFileError(path, 1, "visa-identity", f"vISA line 1: the kernel's name: {problem}")
    return parsed


def compile_visa(path: Path) -> Compiled:
    """Stage 1 of hand-written vISA: parse it, then replay it through every check."""
    start = time.perf_counter()
    try:
        parsed = load_visa(path)
    except VisaFileError as error:
        return Compiled(Path(path).name, diagnostics=[error.diagnostic()])
    result = Compiled(parsed.identity)
    try:
        result.visa = replay(parsed)
    except FuriosaOptError as error:
        result.diagnostics = [from_error(error, "visa", parsed.identity)]
    except Exception as error:  # an op the text applies to a value that has no such op, an unknown name …
        detail = printable((str(error).splitlines() or [""])[0])
        message = f"the vISA cannot be replayed: {type(error).__name__}: {detail}"
        result.diagnostics = [Diagnostic("visa-replay", message, "visa", parsed.identity, [Span(str(path), 1, 1)])]
    result.seconds["visa"] = time.perf_counter() - start
    if result.visa is not None:
        _walk(result, result.visa, None)
    return result
