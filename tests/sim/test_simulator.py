"""The TCP simulator against the CPU backend, bit for bit, and its faults.

Each kernel is compiled in-process to its EDF; the same random HBM arguments go through the CPU
backend (`launch`) and through `sim.run` (only the EDF and the argument bytes). A mutated EDF — one DMA
stride, one address, one sequencer entry, checksum fixed — must change the output or fault.
"""

import hashlib
import json
import subprocess
import sys

import msgpack
import numpy as np
import pytest
from backends import input_seed
from example_kernels import KERNELS

from furiosa_opt import Context, HostTensor, launch
from furiosa_opt.analysis.schedule import parse_schedule
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import FORMAT_VERSION, HEADER, MAGIC, read_edf
from furiosa_opt.sim import SimulatorError, run
from furiosa_opt.sim.timing import compare, simulate, trace_json

SEED = input_seed()


def edf_bytes(kernel) -> bytes:
    return compile_kernel(kernel).edf


def cpu_run(kernel, seed: int) -> tuple[list[bytes], list[bytes]]:
    """(argument bytes, output bytes) of one CPU-backend launch on fresh random inputs."""
    rng = np.random.default_rng(seed)
    with Context.acquire() as ctx:
        args = [
            HostTensor.rand(p.type.dtype, p.type.params[1], rng).to_hbm(ctx.pdma) for p in kernel.parameters if p.type
        ]
        out = launch(kernel, ctx, *args)
    outs = out if isinstance(out, tuple) else (out,)
    return [a.data.values().tobytes() for a in args], [o.data.values().tobytes() for o in outs]


@pytest.mark.parametrize("name", KERNELS)
def test_simulator_matches_the_cpu_backend_bit_for_bit(name):
    print(f"seed {SEED} (set FURIOSA_OPT_TEST_SEED to replay)")
    kernel = KERNELS[name]
    arguments, expected = cpu_run(kernel, SEED)
    got = run(read_edf(edf_bytes(kernel)), arguments)
    assert [len(g) for g in got] == [len(e) for e in expected]
    assert got == expected, f"{name} differs from the CPU backend (seed {SEED})"
    assert any(np.frombuffer(e, dtype=np.uint8).any() for e in expected)  # not a vacuous all-zero match


def _rewrite(data: bytes, edit) -> bytes:
    """The EDF with its body edited and its checksum made valid again."""
    body = msgpack.unpackb(data[HEADER.size :], raw=False)
    edit(body)
    packed = msgpack.packb(body, use_bin_type=True)
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(packed), hashlib.sha256(packed).digest()) + packed


def _commands(body: dict, kind: str) -> list[dict]:
    return [c for stream in body["streams"].values() for c in stream if c["kind"] == kind]


def _main_exec(body: dict) -> dict:
    """The Tensor Unit command that commits to DM (gemm's contraction)."""
    return next(c for c in _commands(body, "exec") if c["commit"] is not None)


MUTATIONS = {
    "a DMA stride": lambda body: _commands(body, "dma")[0]["dma"]["loops"][0].update(src=2048),
    "a DMA address": lambda body: _commands(body, "dma")[0]["dma"].update(
        src_base=_commands(body, "dma")[0]["dma"]["src_base"] + 64
    ),
    "a fetch address": lambda body: _main_exec(body)["fetch"].update(base=_main_exec(body)["fetch"]["base"] + 32),
    "a sequencer entry": lambda body: _main_exec(body)["fetch"]["time"][0].update(stride=0),
    "a commit entry": lambda body: _main_exec(body)["commit"]["packet"][0].update(
        stride=_main_exec(body)["commit"]["packet"][0]["stride"] * 2
    ),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_mutated_edf_changes_the_output_or_faults(mutation):
    kernel = KERNELS["gemm"]
    arguments, expected = cpu_run(kernel, SEED)
    mutated = read_edf(_rewrite(edf_bytes(kernel), MUTATIONS[mutation]))
    try:
        got = run(mutated, arguments)
    except SimulatorError as error:
        assert "gemm_kernel" in str(error) and "command" in str(error)
    else:
        assert got != expected


def test_an_address_outside_the_kernel_is_a_fault_naming_the_command():
    data = _rewrite(edf_bytes(KERNELS["gemm"]), lambda b: _commands(b, "dma")[-1]["dma"].update(dst_base=1 << 38))
    arguments, _ = cpu_run(KERNELS["gemm"], SEED)
    with pytest.raises(
        SimulatorError, match=r"gemm_kernel: command \d+ \(to_hbm on tdma, .*gemm_kernel.py:\d+\): DRAM"
    ):
        run(read_edf(data), arguments)


def test_an_engine_chain_out_of_order_is_a_fault():
    def drop_outer(body):
        engines = _main_exec(body)["engines"]
        engines[:] = [e for e in engines if e["stage"] != "contract_outer"]

    arguments, _ = cpu_run(KERNELS["gemm"], SEED)
    with pytest.raises(SimulatorError, match="`contract_packet` comes before any `contract_outer`"):
        run(read_edf(_rewrite(edf_bytes(KERNELS["gemm"]), drop_outer)), arguments)


def test_wrong_argument_bytes_are_refused():
    edf = read_edf(edf_bytes(KERNELS["gemm"]))
    with pytest.raises(SimulatorError, match="takes 2 arguments, got 1"):
        run(edf, [b""])
    with pytest.raises(SimulatorError, match=r"argument a is 65536 bytes, got 3"):
        run(edf, [b"abc", b"abc"])


def test_the_simulator_runs_alone_in_a_subprocess(tmp_path):
    """Given only the EDF and argument files, without the kernel language or the CPU backend loaded."""
    kernel = KERNELS["gemm"]
    arguments, expected = cpu_run(kernel, SEED)
    (tmp_path / "gemm.edf").write_bytes(edf_bytes(kernel))
    inputs = []
    for i, data in enumerate(arguments):
        inputs.append(tmp_path / f"in{i}.bin")
        inputs[-1].write_bytes(data)
    code = (
        "import json, sys\n"
        "from furiosa_opt.sim.__main__ import main\n"
        "status = main(sys.argv[1:])\n"
        "print(json.dumps([status, sorted(m for m in sys.modules if m.startswith('furiosa_opt'))]))\n"
    )
    args = [str(tmp_path / "gemm.edf"), *map(str, inputs), "--out", str(tmp_path / "out.bin")]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path)
    status, modules = json.loads(done.stdout)
    assert status == 0, done.stderr
    assert (tmp_path / "out.bin").read_bytes() == expected[0]
    assert "furiosa_opt.sim.machine" in modules
    # the binary's numbers alone: no language, backend or rule, no mapping algebra (layouts arrive as boxes
    # and walks), no stage 2 and no vISA text reader, no scalar parser (runtime values arrive as programs)
    forbidden = ("lang", "backend", "verify", "mapping", "compiler.lower", "compiler.replay", "compiler.literals")
    loaded = [
        m for m in modules if any(m == f"furiosa_opt.{p}" or m.startswith(f"furiosa_opt.{p}.") for p in forbidden)
    ]
    assert loaded == [] and "furiosa_opt.scalar" not in modules, loaded


def test_the_simulator_command_reports_bad_files(tmp_path):
    (tmp_path / "broken.edf").write_bytes(edf_bytes(KERNELS["gemm"])[:100])
    done = subprocess.run(
        [sys.executable, "-m", "furiosa_opt.sim", str(tmp_path / "broken.edf")], capture_output=True, text=True
    )
    assert done.returncode == 1 and "truncated EDF" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "gemm.edf").write_bytes(edf_bytes(KERNELS["gemm"]))
    done = subprocess.run(
        [sys.executable, "-m", "furiosa_opt.sim", str(tmp_path / "gemm.edf"), "--out", "x"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "takes 2 input file(s) and writes 1 output file(s); got 0 and 1" in done.stderr


@pytest.mark.parametrize("name", KERNELS)
def test_simulated_time_equals_the_static_makespan(name):
    """The binary's issue order and syncs alone reproduce the compiler's schedule."""
    result = compile_kernel(KERNELS[name])
    edf = read_edf(result.edf)
    timing = simulate(edf)
    assert timing.makespan == result.plan.makespan
    assert compare(edf, timing).startswith("equal")
    trace = trace_json(timing)
    assert trace["simulated"] is True and trace["makespan"] == timing.makespan
    parsed = parse_schedule(trace, f"{name} simulated")
    assert parsed.makespan == timing.makespan
    assert len(parsed.instructions) == sum(len(s) for s in edf.streams.values())


def test_program_order_on_the_dma_context_costs_gemm_its_overlap():
    """Issued in program order (A before B), the TRF load of B can no longer hide behind A's load."""

    def program_order(body):
        body["streams"]["tdma"].sort(key=lambda c: c["index"])

    edf = read_edf(_rewrite(edf_bytes(KERNELS["gemm"]), program_order))
    timing = simulate(edf)
    assert timing.makespan == 72359 + 544  # the 544-cycle TRF load now runs after both DMA loads
    assert compare(edf, timing).startswith("command 1 (to_dm on tdma) starts at cycle 0 in the simulation and 1524")


def test_the_simulator_command_writes_a_trace(tmp_path):
    kernel = KERNELS["dot_product"]
    arguments, expected = cpu_run(kernel, SEED)
    (tmp_path / "k.edf").write_bytes(edf_bytes(kernel))
    for i, data in enumerate(arguments):
        (tmp_path / f"in{i}.bin").write_bytes(data)
    args = ["k.edf", "in0.bin", "in1.bin", "--out", "out.bin", "--trace", "trace.json"]
    done = subprocess.run(
        [sys.executable, "-m", "furiosa_opt.sim", *args], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "dot_product_kernel: 2003 simulated cycles (equal" in done.stderr
    assert (tmp_path / "out.bin").read_bytes() == expected[0]
    assert json.loads((tmp_path / "trace.json").read_text())["simulated"] is True
