"""One trial, in its own fresh worker process: compile the kernel with one assignment into the trial's own
output directory and measure it.

The worker writes the assignment to `<trial>/choices.json` and points the kernel module's space at it
(`choices.assign`) before importing the module, so the compiler's cache records the file as data of the
kernel: the artifact in `<trial>/kernel/` carries the choices in its key, and no two trials share one.
A compile that breaks a rule is `refused` with the rule's code; with the simulated objective the EDF also
runs on the simulator on random inputs and must give the CPU backend's bytes, else the trial is `wrong`.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from furiosa_opt import Context, HbmTensor, HostTensor, launch, runtime
from furiosa_opt.compiler import cache
from furiosa_opt.compiler.diagnostics import Diagnostic
from furiosa_opt.compiler.driver import Compiled, compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.compiler.workspace import Package, import_module
from furiosa_opt.files import printable, write_atomic
from furiosa_opt.lang import params
from furiosa_opt.lang.tensors import TensorView
from furiosa_opt.sim.timing import simulate
from furiosa_opt.tune.choices import Space, Value, assign, choices_json

assert runtime.launch_here  # the NPU backend registers itself on import: the simulated objective launches on it
NOT_RULES = ("python-error", "error", "syntax-error", "no-kernel")  # diagnostics that are faults, not refusals


@dataclass(frozen=True)
class Request:
    """What a worker needs for one trial (a few hundred bytes when pickled: Ray ships it as it is)."""

    package: Package
    kernel: cache.KernelSource
    choices: dict[str, Value]
    folder: Path  # the trial's own output directory
    objective: str = "static"
    seed: int = 0  # of the random inputs of the simulated objective


def describe(package: Package, kernel: cache.KernelSource) -> dict[str, list[Value]]:
    """The choices the kernel's module declares (name → values, the default first), read by importing the
    module in a worker (the tuner's own process never imports a kernel). A module without a space, or
    one that does not import, is a ValueError with the reason."""
    module, problem = import_module(package, kernel.module, kernel.file)
    if problem is not None:
        raise ValueError(_one_line(problem))
    declared = [v for v in vars(module).values() if isinstance(v, Space)]
    if len(declared) != 1:
        found = "no" if not declared else f"{len(declared)}"
        raise ValueError(f"{kernel.file} declares {found} search space (`choices = space(name=[...])`): one is needed")
    return {name: list(values) for name, values in declared[0].options.items()}


def run(request: Request) -> dict:
    """The trial's outcome: `state` (ok, refused, wrong or error), the static `makespan`, `lower_bound`,
    `ratio`, the `simulated` makespan when asked, the `rule` of a refusal, a `message`, and `seconds`."""
    start = time.perf_counter()
    try:
        outcome = _measured(request)
    except Exception as error:  # a fault in the kernel's Python or in ours: the trial's error, not the study's
        last = traceback.extract_tb(error.__traceback__)[-1:]
        where = f" ({Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        first = (str(error).splitlines() or [""])[0]
        outcome = {"state": "error", "message": printable(f"{type(error).__name__}: {first}{where}")[:500]}
    return {**outcome, "seconds": round(time.perf_counter() - start, 4)}


def _measured(request: Request) -> dict:
    folder = Path(request.folder)
    out = folder / "kernel"
    os.environ["FURIOSA_OPT_OUT_DIR"] = str(out)  # this process is the trial's alone: `launch` loads from here
    choices_file = folder / "choices.json"
    write_atomic(choices_file, choices_json(request.choices))
    assign(request.kernel.module, choices_file)
    compiled = _compile(request, out)
    if isinstance(compiled, Diagnostic):
        return _refusal(compiled)
    kernel, result = compiled
    plan = result.plan
    outcome = {"state": "ok", "makespan": plan.makespan, "lower_bound": plan.lower_bound,
               "ratio": round(plan.makespan / max(plan.lower_bound, 1), 4)}  # fmt: skip
    if request.objective == "simulated":
        outcome.update(_simulated(kernel, result, request.seed))
    return outcome


def _compile(request: Request, out: Path) -> tuple[object, Compiled] | Diagnostic:
    """Import the kernel's module with the trial's assignment, compile it and store its artifact and record
    in `out` as `furiosa-opt compile` would; the first diagnostic when it is refused. A warning refuses the
    trial too: the only warnings are hazards the hardware would not survive (`compiler.hazards`), and a
    tuned choice must not be one of them."""
    package, source = request.package, request.kernel
    with cache.recording(package.source):
        module, problem = import_module(package, source.module, source.file)
        if problem is not None:
            return problem
        kernel = getattr(module, source.identity.rsplit(".", 1)[1])
        result = compile_kernel(kernel, package.root)
    if not result.ok or result.diagnostics:
        return (result.errors or result.diagnostics)[0]
    data = cache.reads_of(source, package.root, package.source)
    key = cache.fast_key(source, package.root, package.source, data)
    artifact = cache.artifact_key(result.visa_text, key.device)
    edf_path, record_path = cache.paths(out, source.identity)
    write_atomic(edf_path, result.edf)
    write_atomic(record_path, cache.record_for(key, artifact, result.edf, result.visa_text, source.identity))
    return kernel, result


def _refusal(diagnostic: Diagnostic) -> dict:
    if diagnostic.code in NOT_RULES:
        return {"state": "error", "message": _one_line(diagnostic)}
    return {"state": "refused", "rule": diagnostic.code, "message": _one_line(diagnostic)}


def _one_line(diagnostic: Diagnostic) -> str:
    where = f" ({Path(diagnostic.spans[0].file).name}:{diagnostic.spans[0].line})" if diagnostic.spans else ""
    return printable(f"{diagnostic.stage}:{diagnostic.code}: {diagnostic.message}{where}")[:500]


def _simulated(kernel, result: Compiled, seed: int) -> dict:
    """The simulator's makespan of the EDF, and whether it computes the CPU backend's bytes on random
    inputs (the same seed on both): a faster candidate that computes something else is `wrong`."""
    timing = simulate(read_edf(result.edf))
    expected, got = _outputs(kernel, "cpu", seed), _outputs(kernel, "npu", seed)
    facts = {"simulated": timing.makespan}
    differing = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
    if len(expected) != len(got) or differing:
        index = differing[0] if differing else len(got)
        return {**facts, "state": "wrong", "message": f"output {index} differs between the simulator and the CPU "
                f"backend on random inputs (seed {seed})"}  # fmt: skip
    return facts


def _outputs(kernel, backend: str, seed: int) -> list[bytes]:
    """The bytes of the kernel's results and of its arguments after a launch on `backend` (`cpu`, or `npu`:
    the trial's EDF on the simulator), on random inputs from `seed`."""
    os.environ["FURIOSA_OPT_BACKEND"] = backend  # HBM tensors made from here on live on that backend (`runtime`)
    with Context.acquire() as ctx:
        args = random_arguments(kernel, ctx, np.random.default_rng(seed))
        out = launch(kernel, ctx, *args)
        outputs = out if isinstance(out, tuple) else () if out is None else (out,)
        leaves = [value for _, _, value in kernel.bind(args)]
        values = [v.base if isinstance(v, TensorView) else v for v in (*outputs, *leaves)]
        return [v.values().tobytes() for v in values]


def random_arguments(kernel, ctx, rng: np.random.Generator, module: object = None) -> tuple:
    """Random arguments for every tensor parameter, or what the `differential_inputs(kernel, ctx, rng)`
    hook of the kernel's module (or of `module`) makes, for kernels whose inputs must be constrained, such
    as indices. The differential harness makes its inputs with this too."""
    module = module if module is not None else sys.modules.get(kernel.fn.__module__)
    hook = getattr(module, "differential_inputs", None)
    given = hook(kernel, ctx, rng) if hook else None
    if given is not None:
        return tuple(given)

    def leaf(t):
        tensor = HostTensor.rand(t.dtype, t.params[-1], rng).to_hbm(ctx.pdma, t.params[0], t.params[-1])
        if t.cls is HbmTensor:
            return tensor
        return tensor.view_mut() if t.cls.writable else tensor.view()

    return tuple(params.build(p.type, leaf) for p in kernel.parameters if p.type is not None)
