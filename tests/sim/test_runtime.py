"""The NPU backend of `launch`, end to end in subprocesses on a scaffolded copy of the base template:
it runs compiled kernels on the simulator, and refuses missing and stale binaries without compiling."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from furiosa_opt import Context, HbmTensor, HostTensor, VerifyError, bf16, m, runtime
from furiosa_opt.cli.new import create
from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf

TOOL = Path(sys.executable).with_name("furiosa-opt")


@pytest.fixture
def package(tmp_path):
    name = f"rt_{uuid.uuid4().hex[:8]}"
    return create(name, tmp_path), name


def run(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "FURIOSA_OPT_OUT_DIR": str(root.parent / "out"),
        "PYTHONPATH": str(root / "src"),
        **env,
    }
    return subprocess.run(list(args), cwd=root, env=environment, capture_output=True, text=True)


def test_npu_tests_pass_after_compiling_and_the_simulator_says_so_once(package):
    root, name = package
    assert run(root, str(TOOL), "compile").returncode == 0
    done = run(root, sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", FURIOSA_OPT_BACKEND="npu")
    assert done.returncode == 0 and "7 passed" in done.stdout, done.stdout + done.stderr
    assert (done.stdout + done.stderr).count("on the TCP simulator") == 1
    program = run(root, sys.executable, "-m", f"{name}.gemm", FURIOSA_OPT_BACKEND="npu")
    assert program.returncode == 0 and "262144/262144 equal the sequential-f32 oracle bit for bit" in program.stdout


def test_the_runtime_never_compiles(package):
    root, name = package
    done = run(root, sys.executable, "-m", "pytest", "-q", "tests/test_gemm.py", FURIOSA_OPT_BACKEND="npu")
    assert done.returncode != 0
    assert f"error[npu-not-compiled]: `{name}.kernel.gemm_kernel.gemm_kernel` has no up-to-date EDF" in done.stdout
    assert f"compile it with `furiosa-opt compile {name}.kernel.gemm_kernel.gemm_kernel`" in done.stdout
    assert not (root.parent / "out").exists()


def test_an_edited_kernel_is_stale_until_recompiled(package):
    root, name = package
    assert run(root, str(TOOL), "compile", "gemm").returncode == 0
    kernel_file = root / "src" / name / "kernel" / "gemm_kernel.py"
    kernel_file.write_text(kernel_file.read_text() + "\n# edited after compiling\n")
    done = run(root, sys.executable, "-m", f"{name}.gemm", FURIOSA_OPT_BACKEND="npu")
    assert done.returncode != 0
    assert "has no up-to-date EDF (source changed: src/" in done.stderr and "gemm_kernel.py" in done.stderr
    assert run(root, str(TOOL), "compile", "gemm").returncode == 0
    assert run(root, sys.executable, "-m", f"{name}.gemm", FURIOSA_OPT_BACKEND="npu").returncode == 0


def test_arguments_are_checked_against_the_edf():
    from base_template.kernel.gemm_kernel import I, K, gemm_kernel

    edf = read_edf(compile_kernel(gemm_kernel).edf)
    rng = np.random.default_rng(0)
    with Context.acquire() as ctx:
        right = HostTensor.rand(bf16, m[I, K], rng).to_hbm(ctx.pdma)
        wrong = HostTensor.rand(bf16, m[K, I], rng).to_hbm(ctx.pdma)
    returns = gemm_kernel.returns
    with pytest.raises(VerifyError, match="takes 2 tensors, got 1"):
        runtime.execute(gemm_kernel.identity, edf, [right], returns)
    with pytest.raises(
        VerifyError, match=r"argument `b` is a HbmTensor\[bf16, 1, K, I\], its EDF expects HbmTensor\[bf16, 1, J, K\]"
    ):
        runtime.execute(gemm_kernel.identity, edf, [right, wrong], returns)
    assert isinstance(right, HbmTensor)


INPLACE_KERNEL = """
from furiosa_opt import *

A, B = axes(A=256, B=8)


@device
def increment(ctx: Context, x: HbmTensor[i32, m["1"], m["A, B"]], out: HbmTensor[i32, m["1"], m["A, B"]]) -> None:
    dm = x.to_dm(ctx.tdma, m["1 # 2"], m["A"], m["B"])
    result = (
        ctx.main.begin(dm.view()).fetch(m["1"], m["B"]).collect(m["1"], m["B"])
        .vector_init().vector_intra_slice_tag(TagMode.Zero).vector_fxp(FxpBinaryOp.AddFxp, 1).vector_final()
        .commit_trim(m["B"]).commit(m["B"])
    )
    result.view().to_hbm_view(ctx.tdma, out.view_mut())
"""

INPLACE_HOST = """
import hashlib
import numpy as np
from furiosa_opt import *
from {name}.kernel.inplace_kernel import A, B, increment

with Context.acquire() as ctx:
    x = np.arange(2048, dtype=np.int32).reshape(256, 8)
    a = HostTensor.from_numpy(x, i32, m["A, B"]).to_hbm(ctx.pdma)
    b = HostTensor.zeros(i32, m["A, B"]).to_hbm(ctx.pdma)
    launch(increment, ctx, a, b)  # b = a + 1
    launch(increment, ctx, b, a)  # a = b + 1: reads what the first launch wrote
    got = a.to_host(ctx.pdma).to_numpy(), b.to_host(ctx.pdma).to_numpy()
    assert np.array_equal(got[0], x + 2) and np.array_equal(got[1], x + 1), got
    print("in place", hashlib.sha256(b"".join(g.tobytes() for g in got)).hexdigest())
"""


def test_out_parameters_survive_the_npu_backend_under_the_wrapper(package):
    root, name = package
    (root / "src" / name / "kernel" / "inplace_kernel.py").write_text(INPLACE_KERNEL)
    (root / "src" / name / "inplace.py").write_text(INPLACE_HOST.format(name=name))
    cpu = run(root, sys.executable, "-m", f"{name}.inplace")
    npu = run(root, str(TOOL), "python", "-m", f"{name}.inplace")
    assert cpu.returncode == 0 and npu.returncode == 0, cpu.stderr + npu.stdout + npu.stderr
    assert "on the TCP simulator" in npu.stderr and "on the TCP simulator" not in cpu.stderr
    assert cpu.stdout.splitlines()[-1] == npu.stdout.splitlines()[-1]
    assert (root.parent / "out" / name / f"{name}.kernel.inplace_kernel.increment.edf").is_file()
