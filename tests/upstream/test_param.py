"""Port of upstream `param.rs` and `param_tests.rs`: tuple- and struct-typed kernel parameters.

Each kernel moves its input HBM → DM → HBM unchanged, so the data surviving the round trip shows the
tensor inside the tuple or the struct reached the kernel. Upstream's `#[derive(DeviceSend)]` struct is
a `@dataclass` whose fields are tensor types.
"""

from dataclasses import dataclass

import numpy as np

from furiosa_opt import *

A, B = axes(A=4096, B=8)

Chip = m["1"]
Cluster = m["1 # 2"]


@dataclass
class Inputs:
    x: HbmTensor[i8, Chip, m["A, B"]]


@device(chip=1)
def tuple_passthrough(ctx: Context, inputs: tuple[HbmTensor[i8, Chip, m["A, B"]]]) -> HbmTensor[i8, Chip, m["A, B"]]:
    return inputs[0].to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B"]).to_hbm(ctx.tdma, m["A, B"])


@device(chip=1)
def struct_passthrough(ctx: Context, inputs: Inputs) -> HbmTensor[i8, Chip, m["A, B"]]:
    return inputs.x.to_dm(ctx.tdma, Cluster, m["A / 16"], m["A / 8 % 2, A % 8, B"]).to_hbm(ctx.tdma, m["A, B"])


def counting() -> np.ndarray:
    """Upstream's input: position p of `[A, B]` holds `p as i8` (wrapping)."""
    return np.arange(A.size * B.size).astype(np.uint8).view(np.int8).reshape(A.size, B.size)


def test_tuple_param_passes():
    data = counting()
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(data, i8, m["A, B"]).to_hbm(ctx.pdma, Chip, m["A, B"])
        out = launch(tuple_passthrough, ctx, (input,))
        assert np.array_equal(out.to_host(ctx.pdma, m["A, B"]).to_numpy(), data)


def test_struct_param_passes():
    data = counting()
    with Context.acquire() as ctx:
        input = HostTensor.from_numpy(data, i8, m["A, B"]).to_hbm(ctx.pdma, Chip, m["A, B"])
        out = launch(struct_passthrough, ctx, Inputs(x=input))
        assert np.array_equal(out.to_host(ctx.pdma, m["A, B"]).to_numpy(), data)
