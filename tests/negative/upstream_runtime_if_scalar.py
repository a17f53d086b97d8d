"""Upstream `furiosa-opt-examples/src/negative/runtime_if_scalar.rs`: a vector-engine immediate chosen by a
runtime condition on a device loop's index. An immediate is encoded in the instruction, so it must be a
compile-time constant; upstream refuses it when it does not const-fold. Rust's `if i == 1 { 1 } else { 2 }`
as a value is `select(i == 1, 1, 2)` here (a Python `if` on the index is refused earlier, as a runtime
condition)."""

from furiosa_opt import *

N = Axis("N", 1024)  # upstream re-exports it from `runtime_if_scalar.rs`
Chip = m["1"]


@device(chip=1, pe=4)
def runtime_if_scalar_immediate(ctx: Context, input: HbmTensor[i32, Chip, m["N"]]) -> HbmTensor[i32, Chip, m["N"]]:
    input_dm = input.to_dm(ctx.tdma, m["1"], m["N / 4"], m["N % 4"])
    result = DmTensor.new(i32, Chip, m["1"], m["N / 4"], m["N % 4"])
    for i in device_range(2):
        c = select(i == 1, 1, 2)
        result = (
            ctx.main.begin(input_dm.view())
            .fetch(m["1"], m["N % 4"])
            .fetch_cast(i32)
            .collect(m["1"], m["N % 4 # 8"])
            .vector_init()
            .vector_intra_slice_tag(TagMode.Zero)
            .vector_fxp(FxpBinaryOp.AddFxp, c)  # refused[visa]: runtime-immediate
            .vector_final()
            .commit_trim(m["N % 4"])
            .commit(m["N % 4"])
        )
    return result.to_hbm(ctx.tdma, m["N"])
