"""What a kernel writes into its arguments, on both backends: out-parameters, views, tuples and dataclasses,
and device memory that persists from one launch to the next.

Each scenario runs once on the CPU backend and once on the NPU backend (the EDF on the simulator, HBM
tensors in the simulated device's memory); the host reads every result back with `to_host`, and the two
runs must agree bit for bit and with a numpy oracle.
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend
from parameter_kernels import (  # noqa: F401 (named inside m["..."] strings)
    A,
    B,
    Chip,
    S,
    Transfer,
    copy_and_transpose,
    copy_into,
    increment,
    run_transfer,
    store_through_view,
    swap_pair,
    two_vrf_chain,
)

from furiosa_opt import *
from furiosa_opt.runtime import DEVICE, DeviceBuf


def ramp(shape, dtype=np.int32, start=0) -> np.ndarray:
    return (start + np.arange(np.prod(shape))).reshape(shape).astype(dtype)


def on_both(scenario):
    """The scenario's arrays on each backend; they must agree bit for bit (padding bytes included)."""
    results = {}
    for name in ("cpu", "npu"):
        with backend(name) as run, Context.acquire() as ctx:
            results[name] = scenario(run, ctx)
    for cpu, npu in zip(results["cpu"], results["npu"], strict=True):
        assert cpu.dtype == npu.dtype and np.array_equal(cpu.view(np.uint8), npu.view(np.uint8))
    return results["npu"]


def rows(ctx, values: np.ndarray) -> HbmTensor:
    return HostTensor.from_numpy(values, i32, m["A, B"]).to_hbm(ctx.pdma)


def test_an_in_place_copy_lands_in_the_argument():
    x = ramp((256, 8), start=1)

    def scenario(run, ctx):
        source, out = rows(ctx, x), rows(ctx, np.full((256, 8), -7, np.int32))
        assert run(copy_into, ctx, source, out) is None
        return out.to_host(ctx.pdma).to_numpy(), source.to_host(ctx.pdma).to_numpy()

    out, source = on_both(scenario)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(source, x)  # the source is read, not changed


def test_an_in_place_and_a_returned_output():
    x = ramp((256, 8), start=5)

    def scenario(run, ctx):
        out = rows(ctx, np.zeros((256, 8), np.int32))
        transposed = run(copy_and_transpose, ctx, rows(ctx, x), out)
        assert transposed.params == (Chip, m["B, A"])
        return out.to_host(ctx.pdma).to_numpy(), transposed.to_host(ctx.pdma).to_numpy()

    out, transposed = on_both(scenario)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(transposed, x.T)


def test_a_kernel_writes_through_a_view_mut_parameter():
    x = ramp(128, np.float32).astype(ml_dtypes.bfloat16)

    def scenario(run, ctx):
        out = HostTensor.from_numpy(np.full(128, -1, ml_dtypes.bfloat16), bf16, m["S"]).to_hbm(ctx.pdma)
        run(store_through_view, ctx, HostTensor.from_numpy(x, bf16, m["S"]).to_hbm(ctx.pdma), out.view_mut())
        return (out.to_host(ctx.pdma).to_numpy(),)

    (out,) = on_both(scenario)
    np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16))


def test_tuple_and_dataclass_parameters():
    a, b = ramp((256, 8)), ramp((256, 8), start=10_000)

    def scenario(run, ctx):
        first, second = run(swap_pair, ctx, (rows(ctx, a), rows(ctx, b)))
        target = rows(ctx, np.zeros((256, 8), np.int32))
        run(run_transfer, ctx, Transfer(source=rows(ctx, a), target=target))
        return (
            first.to_host(ctx.pdma).to_numpy(),
            second.to_host(ctx.pdma).to_numpy(),
            target.to_host(ctx.pdma).to_numpy(),
        )

    first, second, target = on_both(scenario)
    np.testing.assert_array_equal(first, b)
    np.testing.assert_array_equal(second, a)
    np.testing.assert_array_equal(target, a)


def test_the_second_launch_reads_what_the_first_wrote():
    x = ramp((256, 8), start=-1000)

    def scenario(run, ctx):
        tensor = rows(ctx, x)
        before = tensor.to_host(ctx.pdma)  # read before the launches: a copy, never changed by them
        run(increment, ctx, tensor)
        once = tensor.to_host(ctx.pdma).to_numpy()
        run(increment, ctx, tensor)
        return before.to_numpy(), once, tensor.to_host(ctx.pdma).to_numpy()

    before, once, twice = on_both(scenario)
    np.testing.assert_array_equal(before, x)
    np.testing.assert_array_equal(once, x + 1)
    np.testing.assert_array_equal(twice, x + 2)


def test_npu_tensors_live_in_device_memory_until_dropped():
    free = DEVICE.free_bytes
    with backend("npu"), Context.acquire() as ctx:
        tensor = rows(ctx, ramp((256, 8)))
        assert isinstance(tensor.data, DeviceBuf) and DEVICE.free_bytes == free - 256 * 8 * 4
        view = tensor.view()
        del tensor
        assert DEVICE.free_bytes < free  # the view keeps its base's memory
        del view
    assert DEVICE.free_bytes == free


def test_a_wrong_structure_is_refused_naming_the_leaf():
    with Context.acquire() as ctx:
        x = rows(ctx, ramp((256, 8)))
        with pytest.raises(VerifyError, match=r"argument `pair.1`: expected HbmTensor\[i32"):
            launch(swap_pair, ctx, (x, x.view()))
        with pytest.raises(VerifyError, match=r"argument `pair`: expected a tuple of 2, got a tuple of 1"):
            launch(swap_pair, ctx, (x,))
        with pytest.raises(VerifyError, match=r"argument `transfer`: expected a Transfer, got a tuple of 2"):
            launch(run_transfer, ctx, (x, x))


def test_a_chain_with_two_vrf_operands_reads_each_one():
    rng = np.random.default_rng(11)
    x = rng.integers(-1000, 1000, (256, 8), dtype=np.int32)
    p, q = rng.integers(-50, 50, 8, dtype=np.int32), rng.integers(2, 9, 8, dtype=np.int32)

    def scenario(run, ctx):
        vector = [HostTensor.from_numpy(v, i32, m["B"]).to_hbm(ctx.pdma) for v in (p, q)]
        return (run(two_vrf_chain, ctx, rows(ctx, x), *vector).to_host(ctx.pdma).to_numpy(),)

    (out,) = on_both(scenario)
    np.testing.assert_array_equal(out, (x + p) * q + p)
    assert not np.array_equal(out, (x + p) * p + p)  # what reading the first operand twice would give
