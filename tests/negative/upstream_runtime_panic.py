"""Upstream `furiosa-opt-examples/src/negative/runtime_panic.rs`: an `assert!` on a device loop's index. The
loop is kept on the device, so its index is known only at run time and an assertion on it has nothing to
test while tracing (upstream refuses the runtime panic the same way). Upstream's `for b in 0..B` is a device
loop; here that is `device_range`."""

from furiosa_opt import *

A, B = axes(A=512, B=32)


@device(chip=1)
def runtime_panic(ctx: Context, input: HbmTensorView[i8, m["1"], m["A, B"]]) -> HbmTensor[i8, m["1"], m["B, A"]]:
    output = HbmTensor.new(i8, m["1"], m["B, A"])
    for b in device_range(B.size):
        assert b < 1000, "runtime guard that must be rejected"  # refused[visa]: runtime-scalar
        input_slice = input.tile(b, m["B"], 1, m["A, 1 # 32"])
        output_slice = output.view_mut().tile(b, m["B"], 1, m["1 #{!} 32, A"])
        input_slice.to_hbm_view(ctx.tdma, output_slice)
    return output
