"""The EDF fuzzer with the simulator, run as its own process under an address-space limit.

    python tests/hostile/fuzz_simulator.py EXAMPLES LIMIT_BYTES BUDGET_BYTES

The limit is set (`resource.setrlimit(RLIMIT_AS)`) before anything else is imported. Each example is a
valid EDF of a seed kernel, damaged (`mutations.damaged`) and packed with a good checksum; it is written to
a file and given to the simulator command's own code path (`sim.__main__.simulate_files`, with the
budget) with inputs of the sizes its table declares. Each must end in an `EdfError`, a `SimulatorError`
(both `FuriosaOptError`s) or a run; any other exception — a `MemoryError` under the limit above all — fails
the example, and hypothesis prints the smallest EDF body that does it. The EDFs it found failing run first,
as explicit examples. The hypothesis profile is the parent's (tests/hypothesis_profiles.py: the same
examples every run under `make test`, fresh ones under `make fuzz`). The last line of output is a JSON
tally: examples run (the pinned finds among them), EDFs refused by the reader, runs refused by the
simulator, runs completed.
"""

import resource
import sys

if __name__ == "__main__":
    LIMIT = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

import contextlib
import copy
import io
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings

from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import EdfError, read_edf
from furiosa_opt.configs.layouts import box_size
from furiosa_opt.diagnostics import FuriosaOptError
from furiosa_opt.sim.__main__ import SimulatorFailure, simulate_files

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import hypothesis_profiles  # noqa: E402
import seed_kernels  # noqa: E402
from example_kernels import KERNELS  # noqa: E402
from mutations import damaged, edf_body, edf_bytes  # noqa: E402

SEEDS = [seed_kernels.memset_zero, seed_kernels.gather_rows, seed_kernels.pcopy_relayout, seed_kernels.kept_loop,
         *KERNELS.values()]  # fmt: skip


def seeds() -> list[dict]:
    bodies = []
    for kernel in SEEDS:
        result = compile_kernel(kernel)
        assert result.ok, result.diagnostics
        bodies.append(edf_body(result.edf))
    return bodies


def _exec(body: dict) -> dict:
    return next(command for command in body["streams"]["main"] if command["kind"] == "exec")


def _edited(body: dict, edit) -> dict:
    body = copy.deepcopy(body)
    edit(body)
    return body


def finds(bodies: list[dict]) -> list[dict]:
    """The EDFs this fuzzer found making the simulator raise before the reader checked them (e1d64a1, which
    kept no inputs: each is rebuilt here and raises the same on that build): a fetch stride of 2⁶³ (an
    OverflowError), a pipeline without its fetch (an AttributeError in sim/tensor_unit.py), an engine op
    of the wrong type (then the integer 7 where text was read: a TypeError in parse_op; now that the op is
    a code, the text "7"), a VRF buffer with three levels (a TypeError in
    mapping/algebra.py), and since the format's version 7: a walk of an odd number of values (a ValueError
    in sim/walk.py), a pipeline ending in `commit` without a commit sequencer (an AttributeError in
    compiler/lir.py) and a fold whose terms per output do not divide its terms (a ValueError in
    sim/tensor_unit.py)."""
    add, mul, gemm = (bodies[SEEDS.index(KERNELS[name])] for name in ("constant_add", "elementwise_mul", "gemm"))
    return [
        _edited(add, lambda b: _exec(b)["fetch"]["packet"][0].update(stride=1 << 63)),
        _edited(add, lambda b: _exec(b)["engines"].pop(0)),
        _edited(add, lambda b: _exec(b)["engines"][4].update(op="7")),
        _edited(mul, lambda b: b["buffers"][4]["levels"].pop()),
        _edited(add, lambda b: _exec(b)["engines"][1]["walk"].pop()),
        _edited(add, lambda b: _exec(b).update(commit=None)),
        _edited(gemm, lambda b: _lane(b).update(reduced=box_size(_lane(b)["terms"]) + 1)),
    ]


def _lane(body: dict) -> dict:
    """The contraction's `contract_lane` config."""
    configs = (c for stream in body["streams"].values() for command in stream for c in command["engines"])
    return next(c for c in configs if c["stage"] == "contract_lane")


def main(examples: int, budget: int) -> dict[str, int]:
    bodies = seeds()
    pinned = finds(bodies)
    tally = {"examples": 0, "pinned": len(pinned), "refused_by_reader": 0, "refused_by_simulator": 0, "ran": 0,
             "failures": {}}  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="fuzz-sim-"))

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(damaged(bodies))
    def one(body: dict) -> None:
        tally["examples"] += 1
        data = edf_bytes(body)
        try:
            edf = read_edf(data)
        except EdfError:
            tally["refused_by_reader"] += 1
            return
        (folder / "k.edf").write_bytes(data)
        inputs = []
        for i, tensor in enumerate(edf.arguments):
            inputs.append(folder / f"in{i}.bin")
            inputs[-1].write_bytes(bytes(min(tensor.bytes, 1 << 20)))
        outputs = [folder / f"out{i}.bin" for i in range(len(edf.outputs))]
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                simulate_files(folder / "k.edf", inputs, outputs, None, budget, [])
        except SimulatorFailure as failure:  # one line for the user; counted here as the simulator's own bug
            cause = failure.__cause__
            where = cause.__traceback__
            while where.tb_next is not None:
                where = where.tb_next
            key = f"{type(cause).__name__} at {Path(where.tb_frame.f_code.co_filename).name}:{where.tb_lineno}"
            tally["failures"][key] = tally["failures"].get(key, 0) + 1
            return
        except FuriosaOptError:
            tally["refused_by_simulator"] += 1
            return
        tally["ran"] += 1

    for find in pinned:
        one = example(find)(one)
    try:
        one()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return tally


if __name__ == "__main__":
    hypothesis_profiles.load()
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[3]))))
