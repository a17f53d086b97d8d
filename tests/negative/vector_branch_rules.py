"""Branched operands refused where they are built (the slot rules of upstream's `Branched`, in
`furiosa-opt-std/src/engine/vector/branch.rs`): a slot after an unconditional `TagGuard.all()` slot could never
fire; a guard that admits no tag (the negation of the all-`Ignore` pattern) could never fire; and a pass has
three immediate registers, so a fourth `.imm` has no slot. One kernel per case, each `Branched` built on its
own marked line; the legal twins are the kernels of `tests/upstream/test_vector_engine_branch.py`."""

from furiosa_opt import *

A = axes(A=512)

Chip = m["1"]
Cluster = m["1 # 2"]

One, Ignore = BitReq.One, BitReq.Ignore
bit0 = TagGuard.matches((One, Ignore, Ignore, Ignore))


def _tagged(ctx: Context, input):
    input_dm = input.to_dm(ctx.tdma, Cluster, m["A / 2"], m["A % 2"])
    return (
        ctx.main.begin(input_dm.view())
        .fetch(m["1"], m["A % 2"])
        .fetch_cast(i32)
        .collect(m["1"], m["A % 2 # 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Comparison((Cmp.Equal(0), Cmp.Less(0), Cmp.Greater(100), Cmp.Equal(7))))
    )


def _finish(ctx: Context, stream):
    result = stream.vector_final().commit_trim(m["A % 2"]).commit(m["A % 2"])
    return result.to_hbm(ctx.tdma, m["A"])


@device(chip=1)
def slot_after_unconditional(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    stream = _tagged(ctx, input)
    operand = Branched.imm(TagGuard.all(), 1).imm(bit0, 2)  # refused[visa]: vector-branch-after-unconditional
    return _finish(ctx, stream.vector_logic(LogicBinaryOpI32.BitOr, operand))


@device(chip=1)
def dead_guard(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    stream = _tagged(ctx, input)
    never = TagGuard.not_matches((BitReq.Ignore,) * 4)
    operand = Branched.imm(never, 1)  # refused[visa]: vector-branch-dead-guard
    return _finish(ctx, stream.vector_logic(LogicBinaryOpI32.BitOr, operand))


@device(chip=1)
def fourth_immediate(ctx: Context, input: HbmTensor[i32, Chip, m["A"]]) -> HbmTensor[i32, Chip, m["A"]]:
    stream = _tagged(ctx, input)
    bit1 = TagGuard.matches((Ignore, One, Ignore, Ignore))
    bit2 = TagGuard.matches((Ignore, Ignore, One, Ignore))
    bit3 = TagGuard.matches((Ignore, Ignore, Ignore, One))
    operand = Branched.imm(bit0, 1).imm(bit1, 2).imm(bit2, 4).imm(bit3, 8)  # refused[visa]: vector-branch-slots
    return _finish(ctx, stream.vector_logic(LogicBinaryOpI32.BitOr, operand))
