import numpy as np

from base_template.constant_add import run
from base_template.kernel.constant_add_kernel import A, constant_add_kernel
from furiosa_opt import Context, HostTensor, i32, launch, m


def test_adds_one(rng):
    x, out = run(rng)
    assert out.dtype == np.int32 and out.shape == (2048,)
    expected = ((x.astype(np.int64) + 1 + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert np.array_equal(out, expected)


def test_wraps_at_the_top_of_i32():
    x = np.arange(2048, dtype=np.int64) - 1024
    x[:3] = [2**31 - 1, -(2**31), -1]
    with Context.acquire() as ctx:
        host = HostTensor.from_numpy(x.astype(np.int32), i32, m[A])
        out = launch(constant_add_kernel, ctx, host.to_hbm(ctx.pdma)).to_host(ctx.pdma).to_numpy()
    assert out[:3].tolist() == [-(2**31), -(2**31) + 1, 0]
    assert out[3:].tolist() == (x[3:] + 1).tolist()
