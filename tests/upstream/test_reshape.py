"""Port of upstream `furiosa-opt-examples/src/reshape.rs` and `tests/reshape_tests.rs`.

A 4-chip kernel transposes an HBM tensor, spreads it over chips, clusters and slices, then relabels the
unchanged DM buffer with new axes (`reshape`, unsafe upstream): every level keeps its size, so the
output's (C, D, E, F, G, H, I) walks the DM buffer in wire order.

Upstream's second kernel lives in its own Rust module (`different_axes`) that redeclares A–F, with E
and F of other sizes. A kernel's `m["…"]` names resolve in this module's globals, so that kernel's axes
carry an `N` prefix here instead.
"""

import numpy as np

from furiosa_opt import *

A, B, C, D, E, F, G, H, I = axes(A=256, B=4096, C=4, D=2, E=16, F=16, G=16, H=2, I=16)


@device(chip=4)
def reshape(
    ctx: Context, hbm_tensor: HbmTensor[i32, m["A / 4 % 4"], m["A / 16, A % 4, B"]]
) -> HbmTensor[i32, m["C"], m["D, E, F, G, H, I"]]:
    hbm_transposed = hbm_tensor.to_hbm(ctx.tdma, m["A % 4, B, A / 16"])
    dm_tensor = hbm_transposed.to_dm(ctx.tdma, m["A / 2 % 2"], m["B % 16, B / 16 % 16"], m["B / 256, A % 2, A / 16"])
    reshaped = dm_tensor.reshape(m["C"], m["D"], m["E, F"], m["G, H, I"])
    return reshaped.to_hbm(ctx.tdma, m["D, E, F, G, H, I"])


NA, NB, NC, ND, NE, NF = axes(NA=256, NB=4096, NC=4, ND=2, NE=256, NF=512)


@device(chip=4)
def reshape_different_num_axes(
    ctx: Context, hbm_tensor: HbmTensor[i32, m["NA / 4 % 4"], m["NA / 16, NA % 4, NB"]]
) -> HbmTensor[i32, m["NC"], m["ND, NE, NF"]]:
    hbm_transposed = hbm_tensor.to_hbm(ctx.tdma, m["NA % 4, NB, NA / 16"])
    dm_tensor = hbm_transposed.to_dm(
        ctx.tdma, m["NA / 2 % 2"], m["NB % 16, NB / 16 % 16"], m["NB / 256, NA % 2, NA / 16"]
    )
    reshaped = dm_tensor.reshape(m["NC"], m["ND"], m["NE"], m["NF"])
    return reshaped.to_hbm(ctx.tdma, m["ND, NE, NF"])


def numbered_input(ctx: Context, a: Axis, b: Axis) -> HbmTensor:
    """Element (a, b) holds 4096a + b, spread over 4 chips by `a / 4 % 4` as both kernels take it."""
    values = np.arange(256 * 4096, dtype=np.int32).reshape(256, 4096)
    host = HostTensor.from_numpy(values, i32, m[a, b])
    return host.to_hbm(ctx.pdma, m["a / 4 % 4"], m["a / 16, a % 4, b"])


def expected_in_wire_order() -> np.ndarray:
    """The input value at each DM buffer position, the buffer walked chip, cluster, slice, element:
    chip a / 4 % 4, cluster a / 2 % 2, slice (b % 16, b / 16 % 16), element (b / 256, a % 2, a / 16)."""
    a4, a2, b1, b16, b256, a1, a16 = np.indices((4, 2, 16, 16, 16, 2, 16))
    a = a16 * 16 + a4 * 4 + a2 * 2 + a1
    b = b256 * 256 + b16 * 16 + b1
    return (a * 4096 + b).astype(np.int32)


def test_reshape():
    with Context.acquire() as ctx:
        output = launch(reshape, ctx, numbered_input(ctx, A, B))
        got = output.to_host(ctx.pdma, m["C, D, E, F, G, H, I"]).to_numpy()
    np.testing.assert_array_equal(got, expected_in_wire_order())


def test_reshape_different_num_axes():
    with Context.acquire() as ctx:
        output = launch(reshape_different_num_axes, ctx, numbered_input(ctx, NA, NB))
        got = output.to_host(ctx.pdma, m["NC, ND, NE, NF"]).to_numpy()
    np.testing.assert_array_equal(got, expected_in_wire_order().reshape(4, 2, 256, 512))
