"""Port of upstream `furiosa-opt-examples/src/memset.rs`, its answer tests `tests/memset_tests.rs`, and
`src/negative/memset.rs`.

Each kernel loads an `[A, B]` input into a two-cluster DM tensor (cluster 1 is padding), fills the whole
tensor with `memset` on the sub context, moves it DM → DM into `[A / 2, A % 2, B]` (so the move reads the
fill) and returns it. The input never holds the fill value, so an output of nothing but the fill shows the
fill happened before the move. Upstream writes one kernel per dtype with a macro; here each is spelled out.

`memset_missing_const_bf16` is upstream's refused fixture: Rust refuses `bf16::from_f32(1.0)` without a
`const { .. }` block because the call is not folded at compile time. A Python value is always a constant
when the kernel is traced, so the program is valid here and is checked like the others.
"""

import ml_dtypes
import numpy as np
import pytest
from backends import backend

from furiosa_opt import *
from furiosa_opt.compiler.driver import compile_kernel

A, B = axes(A=256, B=128)  # rows over 2 clusters × 128 slices; the in-slice payload (even: i4 rows are whole bytes)
Chip = m["1"]
Dm = (m["1 # 2"], m["A"], m["B"])  # cluster, slice, element of the filled tensor
Relaid = (m["1 # 2, A / 2"], m["A % 2, B"])  # slice, element after the DM → DM move
OUT = m["A / 2, A % 2, B"]


@device(chip=1)
def memset_i32_zero(ctx: Context, input: HbmTensor[i32, Chip, m["A, B"]]) -> HbmTensor[i32, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(0, ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_i8_neg_one(ctx: Context, input: HbmTensor[i8, Chip, m["A, B"]]) -> HbmTensor[i8, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(-1, ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_i16_300(ctx: Context, input: HbmTensor[i16, Chip, m["A, B"]]) -> HbmTensor[i16, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(300, ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_f32_one_half(ctx: Context, input: HbmTensor[f32, Chip, m["A, B"]]) -> HbmTensor[f32, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(1.5, ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_bf16_one(ctx: Context, input: HbmTensor[bf16, Chip, m["A, B"]]) -> HbmTensor[bf16, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(bf16.from_f32(1.0), ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_f8e4m3_one(ctx: Context, input: HbmTensor[f8e4m3, Chip, m["A, B"]]) -> HbmTensor[f8e4m3, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(f8e4m3.from_f32(1.0), ctx.sub)
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_i4_neg_one(ctx: Context, input: HbmTensor[i4, Chip, m["A, B"]]) -> HbmTensor[i4, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(i4.from_i32(-1), ctx.sub)  # the nibble 0xf in both halves of every byte
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_alias_bf16(ctx: Context, input: HbmTensor[bf16, Chip, m["A, B"]]) -> HbmTensor[bf16, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(bf16.from_f32(3.0), ctx.sub)  # the move after it must read the fill, not the input
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


@device(chip=1)
def memset_missing_const_bf16(ctx: Context, input: HbmTensor[bf16, Chip, m["A, B"]]) -> HbmTensor[bf16, Chip, OUT]:
    dm = input.to_dm(ctx.tdma, *Dm)
    dm.view_mut().memset(bf16.from_f32(1.0), ctx.sub)  # upstream: refused without `const { .. }`
    return dm.to_dm(ctx.tdma, *Relaid).to_hbm(ctx.tdma, OUT)


n = A.size * B.size
index = np.arange(n)
# kernel → (dtype, input values that never equal the fill — upstream's answer-test inputs —, the fill)
CASES = {
    memset_i32_zero: (i32, np.arange(1, n + 1, dtype=np.int32), 0),
    memset_i8_neg_one: (i8, (1 + index % 50).astype(np.int8), -1),
    memset_i16_300: (i16, (index % 200).astype(np.int16), 300),
    memset_f32_one_half: (f32, (2.0 + index).astype(np.float32), 1.5),
    memset_bf16_one: (bf16, bf16.from_f32((2.0 + index).astype(np.float32)), 1.0),
    memset_f8e4m3_one: (f8e4m3, np.full(n, 2.0, dtype=ml_dtypes.float8_e4m3fn), 1.0),
    memset_i4_neg_one: (i4, (index % 7).astype(np.int8), -1),
    memset_alias_bf16: (bf16, np.full(n, 1.0, dtype=ml_dtypes.bfloat16), 3.0),
    memset_missing_const_bf16: (bf16, np.full(n, 2.0, dtype=ml_dtypes.bfloat16), 1.0),
}


@pytest.mark.parametrize("on", ["cpu", "npu"])
@pytest.mark.parametrize("kernel", CASES, ids=lambda k: k.__name__)
def test_whole_region_answer(kernel, on):
    dtype, values, fill = CASES[kernel]
    assert not np.any(values.astype(np.float64) == fill)  # the input cannot pass for the fill
    with backend(on) as launch_, Context.acquire() as ctx:
        input = HostTensor.from_vec(values, dtype, m["A, B"]).to_hbm(ctx.pdma)
        out = launch_(kernel, ctx, input).to_host(ctx.pdma, OUT).into_vec()
    assert out.dtype == dtype.storage
    np.testing.assert_array_equal(out.astype(np.float64), np.full(n, fill, dtype=np.float64))


def test_fill_bytes_in_the_binary():
    """One memset command on the sub context, whose pattern is the fill's little-endian code."""
    expected = {memset_i16_300: [0x2C, 0x01], memset_bf16_one: [0x80, 0x3F], memset_i4_neg_one: [0xFF]}
    for kernel, pattern in expected.items():
        result = compile_kernel(kernel)
        assert result.ok, result.diagnostics
        (command,) = [c for c in result.lir.commands if c.kind == "memset"]
        assert command.context == "sub" and command.fill.pattern == pattern
        element_bytes = B.size * CASES[kernel][0].bits // 8
        walked = command.fill.packet * np.prod([loop.size for loop in command.fill.loops])
        assert walked == A.size * element_bytes  # every live cell: cluster 0's 256 slices, nothing of cluster 1
        syncs = [c for c in result.lir.commands if c.kind == "sync" and command.index in c.waits]
        assert [s.context for s in syncs] == ["tdma"]  # the DM → DM move waits for the fill
