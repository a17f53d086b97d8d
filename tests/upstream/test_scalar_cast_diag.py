"""Port of upstream `furiosa-opt-examples/src/negative/scalar_cast_diag.rs` as a VALID kernel.

Upstream keeps `scalar_cast_missing_const` as a refused fixture for one reason only: the divisor is written
`<m![A]>::SIZE as f32`, and while `<m![A]>::SIZE` const-folds, the `as f32` cast around it reaches the MIR →
vISA translation as a runtime cast expression, which upstream rejects ("vISA scalar operand must be a
compile-time constant"; the fix upstream is a `const { .. }` block). The kernel itself breaks no hardware
rule. In Python the divisor `float(A.size)` is evaluated while the kernel is traced, so the Vector Engine
receives the plain constant 512.0: there is nothing to refuse, and the kernel is ported here as a valid
kernel whose values are checked (`input / 512`), not as a fixture under `tests/negative/`.
"""

import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

Chip = m["1"]
Cluster = m["1 # 2"]
A = axes(A=512)


@device(chip=1)
def scalar_cast_missing_const(ctx: Context, input: HbmTensor[f32, Chip, m["A"]]) -> HbmTensor[f32, Chip, m["A"]]:
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])

    result = (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(f32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_trim(m["A % 2 # 4"])
        .vector_fp_div(float(A.size))  # upstream: `<m![A]>::SIZE as f32`; a constant here
        .vector_widen_pad(m["A % 2 # 8"])
        .vector_final()
        .commit_trim(m["A % 2"])
        .commit(m["A % 2"])
    )

    return result.to_hbm(ctx.tdma, m["A"])


def test_the_divisor_is_a_constant_of_the_traced_kernel():
    traced = compile_kernel(scalar_cast_missing_const)
    assert traced.ok, traced.diagnostics
    (line,) = [text for text in traced.visa_text.splitlines() if "vector_fp_div" in text]
    assert "operand=512.0" in line and "mode=BinaryArgMode.Mode01" in line  # x / 512, not 512 / x


def inputs() -> np.ndarray:
    """Random normal values and the special cases of an IEEE division by 2^9: exact scalings, results
    that become subnormal (and must round to nearest even there), subnormal inputs, underflow to zero,
    signed zeros, infinities and a quiet NaN."""
    f32 = np.float32
    tiny = np.finfo(f32).tiny  # 2^-126, the smallest normal
    special = np.array(
        [
            0.0, -0.0, 1.0, -1.0, 512.0, 3.0, np.finfo(f32).max, -np.finfo(f32).max,
            tiny, -tiny, tiny * f32(1.5), tiny * f32(1.75), tiny * f32(1.0009765625),  # normal → subnormal
            np.nextafter(tiny, f32(0)), f32(2.0**-149), f32(-(2.0**-149)), f32(2.0**-140),  # subnormal inputs
            f32(2.0**-141) * f32(3), f32(2.0**-141) * f32(5),  # exact ties in the subnormal range
            np.inf, -np.inf, np.nan,
        ],
        dtype=f32,
    )  # fmt: skip
    rng = np.random.default_rng(512)
    rest = rng.standard_normal(A.size - special.size) * rng.choice([1e-38, 1e-3, 1.0, 1e30], A.size - special.size)
    return np.concatenate([special, rest.astype(f32)])


@pytest.mark.parametrize("where", ["cpu", "npu"])
def test_scalar_cast_missing_const_divides_by_the_axis_size(where):
    x = inputs()
    with backend(where) as launch_, Context.acquire() as ctx:
        out = launch_(scalar_cast_missing_const, ctx, HostTensor.from_numpy(x, f32, m["A"]).to_hbm(ctx.pdma))
        got = out.to_host(ctx.pdma).to_numpy()
    assert got.dtype == np.float32
    # The FpDiv stage's semantics are upstream's CPU backend's (`semantics.rs`: `DivF => |a, b| a / b` on
    # f32), i.e. IEEE-754 division rounded to nearest even with subnormals kept (no flush to zero); both our
    # backends follow them, so the result equals numpy's f32 division bit for bit, NaN included. (Whether the
    # silicon's divider flushes subnormals is not something this repository can observe.)
    with np.errstate(all="ignore"):
        expected = x / np.float32(512)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
    # the oracle itself: dividing by 2^9 is exact unless the result is subnormal
    normal = np.abs(expected) >= np.finfo(np.float32).tiny
    assert np.array_equal(expected[normal] * np.float32(512), x[normal])
    assert np.count_nonzero((expected != 0) & ~normal) >= 8  # several results are subnormal
    assert expected.view(np.uint32)[1] == 0x8000_0000  # -0.0 / 512 = -0.0
