"""Upstream `furiosa-opt-examples/src/mnist/mod.rs` with one mapping changed: `fc1_bias_prepared`'s
InterTranspose switch names its output Slice as if the slices did not move (`H / 8, Dummy8`, the input's),
where the switch puts unit `h` of the bias on slice `h` (`H`). The Switch Engine's rule refuses it; the
valid kernel is `forward` in `examples/mnist/src/mnist/kernel.py`, whose other helpers this one reuses."""

from furiosa_opt import *
from mnist.kernel import C, Chip, Cluster, Dummy8, H, I, X, fc1_matmul, fc2  # noqa: F401  (axes named in m[...])


def fc1_bias_prepared(ctx: Context, bias: HbmTensor[bf16, Chip, m["H"]]):
    bias_dm_0 = bias.to_dm(ctx.tdma, Cluster, m["H / 8, 1 # 8"], m["H % 8"])
    bias_dm_1 = (
        ctx.main.begin(bias_dm_0.view())
        .fetch(m["1"], m["H % 8"])
        .collect(m["1"], m["H % 8 # 16"])
        .transpose(m["H % 8"], m["1 # 16"])
        .commit_trim(m["1 # 8"])
        .commit(m["H % 8, 1 # 8"])
    )
    bias_dm_2 = bias_dm_1.reshape(Chip, Cluster, m["H / 8, Dummy8"], m["H % 8, 1 # 8"])
    inter_transpose = SwitchConfig.InterTranspose(slice1=8, slice0=1, time0=1)
    bias_dm_3 = (
        ctx.main.begin(bias_dm_2.view())
        .fetch(m["H % 8"], m["1 # 8"])
        .switch(inter_transpose, m["H / 8, Dummy8"], m["Dummy8"])  # refused[visa]: switch-output-mismatch
        .collect(m["Dummy8"], m["1 # 16"])
        .transpose(m["Dummy8 / 4"], m["Dummy8 % 4 # 16"])
        .commit_trim(m["Dummy8 % 4"])
        .commit(m["Dummy8 # 16"])
    )
    return bias_dm_3.reshape(Chip, Cluster, m["H"], m["1 # 16"])


def fc1_relu(ctx: Context, input, weight, bias):
    matmul = fc1_matmul(ctx, input, weight)
    bias_dm_4 = fc1_bias_prepared(ctx, bias)
    return (
        ctx.main.begin_interleaved(matmul.view(), bias_dm_4.view(), I)
        .fetch(m["I"], m["1 # 4"])
        .fetch_cast(f32)
        .collect(m["I"], m["1 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_clip_zip(ClipBinaryOpF32.Add)
        .vector_clip(ClipBinaryOpF32.Max, 0.0)
        .vector_final()
        .cast(bf16, m["1 # 16"])
        .commit_trim(m["1 # 4"])
        .commit(m["1 # 4"])
    )


@device(chip=1)
def forward(
    ctx: Context,
    input: HbmTensor[bf16, Chip, m["X"]],
    fc1_weight: HbmTensor[bf16, Chip, m["H, X"]],
    fc1_bias: HbmTensor[bf16, Chip, m["H"]],
    fc2_weight: HbmTensor[bf16, Chip, m["C, H"]],
    fc2_bias: HbmTensor[bf16, Chip, m["C"]],
) -> HbmTensor[bf16, Chip, m["C"]]:
    hidden = fc1_relu(ctx, input, fc1_weight, fc1_bias)
    return fc2(ctx, hidden, fc2_weight, fc2_bias)
