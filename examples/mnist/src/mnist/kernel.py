"""The MNIST forward pass, `784 → 256 ReLU → 10`, as one `@device` kernel.

Port of upstream `furiosa-opt-examples/src/mnist/mod.rs` (`forward` and its helpers): the same signature,
the same mappings and the same engines, step for step. Each helper names the Rust function it ports.

Layout: the 256 hidden units are the 256 slices of the first cluster (`H`, one per slice; `Cluster = 1 # 2`
leaves the second cluster unused); the 784 input pixels are padded to `X = 800` and the 10 classes to `C = 16`.

* fc1: the image is broadcast by DMA to all 256 slices and loaded into each slice's TRF on the sub context;
  each slice streams its weight row `w1[h, :]` through the Contraction Engine, which folds the 800 products
  in f32 (interleaved lanes) into one value, cast to bf16.
* The bias `b1` (one bf16 per slice after two transposes and an InterTranspose switch) is added in pair mode
  (`begin_interleaved` + `vector_intra_slice_unzip` + `vector_clip_zip`) in f32, then ReLU (clip Max 0),
  and the result is cast to bf16.
* fc2: the 256 hidden values, one per slice, are gathered into every slice's time axis by a Broadcast1
  switch (`slice1 = 256`), transposed to a row and loaded into the TRF; slices `c · 16` hold class `c`'s
  weight row; the same contraction gives one logit per class, the bias is added in pair mode (its layout
  built by another InterTranspose), and the 16 logits go back to HBM.
"""

import numpy as np

from furiosa_opt import *

X, H, C, I, Dummy8, Dummy16 = axes(X=800, H=256, C=16, I=2, Dummy8=8, Dummy16=16)

Chip = m["1"]
Cluster = m["1 # 2"]


def fc1_matmul(
    ctx: Context, input: HbmTensor[bf16, Chip, m["X"]], weight: HbmTensor[bf16, Chip, m["H, X"]]
) -> DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 16"]]:
    """`fc1_matmul`: `w1 · x` in f32, one hidden unit per slice, cast to bf16."""
    input_dm = input.to_dm(ctx.tdma, Cluster, m["H"], m["X"])  # the image, broadcast to every slice
    weight_dm = weight.to_dm(ctx.tdma, Cluster, m["H"], m["X"])
    input_trf = (  # the sub context loads the TRF
        ctx.sub.begin(input_dm.view()).fetch(m["1"], m["X"]).collect(m["X / 16"], m["X % 16"]).to_trf(m["1"], m["X"])
    )
    return (
        ctx.main.begin(weight_dm.view())
        .fetch(m["X / 16"], m["X % 16"])
        .collect(m["X / 16"], m["X % 16"])
        .contract_outer(input_trf, m["X / 32"], m["X % 32"])
        .contract_packet(m["1"])
        .contract_time(m["1"])
        .contract_lane(LaneMode.Interleaved, m["1"], m["1 # 8"])
        .cast(bf16, m["1 # 16"])
        .commit_trim(m["1 # 16"])
        .commit(m["1 # 16"])
    )


def fc1_bias_prepared(
    ctx: Context, bias: HbmTensor[bf16, Chip, m["H"]]
) -> DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 16"]]:
    """`fc1_bias_prepared`: `b1[h]` moved to slice `h`, element 0."""
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
    bias_dm_3 = (
        ctx.main.begin(bias_dm_2.view())
        .fetch(m["H % 8"], m["1 # 8"])
        .switch(SwitchConfig.InterTranspose(slice1=8, slice0=1, time0=1), m["H"], m["Dummy8"])
        .collect(m["Dummy8"], m["1 # 16"])
        .transpose(m["Dummy8 / 4"], m["Dummy8 % 4 # 16"])
        .commit_trim(m["Dummy8 % 4"])
        .commit(m["Dummy8 # 16"])
    )
    return bias_dm_3.reshape(Chip, Cluster, m["H"], m["1 # 16"])


def fc1_relu(
    ctx: Context,
    input: HbmTensor[bf16, Chip, m["X"]],
    weight: HbmTensor[bf16, Chip, m["H, X"]],
    bias: HbmTensor[bf16, Chip, m["H"]],
) -> DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 4"]]:
    """`fc1_relu`: `relu(bf16(w1 · x) + b1)`, the add and the max in f32, cast to bf16."""
    matmul = fc1_matmul(ctx, input, weight)
    bias_dm_4 = fc1_bias_prepared(ctx, bias)
    return (
        ctx.main.begin_interleaved(matmul.view(), bias_dm_4.view(), I)  # I = 0: matmul, I = 1: bias
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


def fc2_matmul(
    ctx: Context, input: DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 4"]], weight: HbmTensor[bf16, Chip, m["C, H"]]
) -> DmTensor[bf16, Chip, Cluster, m["C, 1 # 16"], m["1 # 16"]]:
    """`fc2_matmul`: `w2 · h` in f32, class `c` on slice `16 c`, cast to bf16."""
    input_dm = fc2_input_prepared(ctx, input)
    weight_dm = weight.to_dm(ctx.tdma, Cluster, m["C, 1 # 16"], m["H"])
    input_trf = (  # the sub context loads the TRF
        ctx.sub.begin(input_dm.view()).fetch(m["1"], m["H"]).collect(m["H / 16"], m["H % 16"]).to_trf(m["1"], m["H"])
    )
    return (
        ctx.main.begin(weight_dm.view())
        .fetch(m["H / 16"], m["H % 16"])
        .collect(m["H / 16"], m["H % 16"])
        .contract_outer(input_trf, m["H / 32"], m["H % 32"])
        .contract_packet(m["1"])
        .contract_time(m["1"])
        .contract_lane(LaneMode.Interleaved, m["1"], m["1 # 8"])
        .cast(bf16, m["1 # 16"])
        .commit_trim(m["1 # 16"])
        .commit(m["1 # 16"])
    )


def fc2_input_prepared(
    ctx: Context, input: DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 4"]]
) -> DmTensor[bf16, Chip, Cluster, m["C, 1 # 16"], m["H"]]:
    """`fc2_input_prepared`: the 256 hidden values, one per slice, gathered as a row into the slices that
    hold a class (Broadcast1 over all 256 slices puts H on the time axis), then transposed to the element."""
    return (
        ctx.main.begin(input.view())
        .fetch(m["1"], m["1 # 4"])
        .switch(SwitchConfig.Broadcast1(slice1=256, slice0=1), m["C, 1 # 16"], m["H"])
        .collect(m["H"], m["1 # 16"])
        .transpose(m["H / 4"], m["H % 4 # 16"])
        .commit_trim(m["H % 4"])
        .commit(m["H"])
    )


def fc2_bias_prepared(
    ctx: Context, bias: HbmTensor[bf16, Chip, m["C"]]
) -> DmTensor[bf16, Chip, Cluster, m["C, 1 # 16"], m["1 # 16"]]:
    """`fc2_bias_prepared`: `b2[c]` moved to slice `16 c`, element 0."""
    bias_dm_0 = bias.to_dm(ctx.tdma, Cluster, m["1 # 16, 1 # 16"], m["C"])
    bias_dm_1 = bias_dm_0.reshape(Chip, Cluster, m["Dummy16, 1 # 16"], m["C"])
    bias_dm_2 = (
        ctx.main.begin(bias_dm_1.view())
        .fetch(m["C"], m["1 # 4"])
        .switch(SwitchConfig.InterTranspose(slice1=16, slice0=16, time0=1), m["C, 1 # 16"], m["Dummy16"])
        .collect(m["Dummy16"], m["1 # 16"])
        .transpose(m["Dummy16 / 4"], m["Dummy16 % 4 # 16"])
        .commit_trim(m["Dummy16 % 4"])
        .commit(m["Dummy16"])
    )
    return bias_dm_2.reshape(Chip, Cluster, m["C, 1 # 16"], m["1 # 16"])


def fc2(
    ctx: Context,
    input: DmTensor[bf16, Chip, Cluster, m["H"], m["1 # 4"]],
    weight: HbmTensor[bf16, Chip, m["C, H"]],
    bias: HbmTensor[bf16, Chip, m["C"]],
) -> HbmTensor[bf16, Chip, m["C"]]:
    """`fc2`: `bf16(w2 · h) + b2` in f32, cast to bf16, to HBM."""
    matmul = fc2_matmul(ctx, input, weight)
    bias_dm = fc2_bias_prepared(ctx, bias)
    logits = (
        ctx.main.begin_interleaved(matmul.view(), bias_dm.view(), I)
        .fetch(m["I"], m["1 # 4"])
        .fetch_cast(f32)
        .collect(m["I"], m["1 # 8"])
        .vector_init()
        .vector_intra_slice_unzip(I, m["1 # 2"], m["1"])
        .vector_clip_zip(ClipBinaryOpF32.Add)
        .vector_final()
        .cast(bf16, m["1 # 16"])
        .commit_trim(m["1 # 16"])
        .commit(m["1 # 16"])
    )
    return logits.to_hbm(ctx.tdma, m["C"])


@device(chip=1)
def forward(
    ctx: Context,
    input: HbmTensor[bf16, Chip, m["X"]],
    fc1_weight: HbmTensor[bf16, Chip, m["H, X"]],
    fc1_bias: HbmTensor[bf16, Chip, m["H"]],
    fc2_weight: HbmTensor[bf16, Chip, m["C, H"]],
    fc2_bias: HbmTensor[bf16, Chip, m["C"]],
) -> HbmTensor[bf16, Chip, m["C"]]:
    """logits[c] = bf16(bf16(w2 · h)[c] + b2[c]) with h = bf16(relu(bf16(w1 · x) + b1)) (sums in f32)."""
    hidden = fc1_relu(ctx, input, fc1_weight, fc1_bias)
    return fc2(ctx, hidden, fc2_weight, fc2_bias)


def differential_inputs(kernel, ctx: Context, rng):
    """For tests/test_differential.py: weights and an image at a trained model's scale, signed (so that
    ReLU zeroes about half the hidden units), instead of the harness's default non-negative values."""

    def tensor(shape: tuple[int, ...], scale: float, mapping):
        values = (rng.standard_normal(shape) * scale).astype(np.float32)
        return HostTensor.from_numpy(values, bf16, mapping).to_hbm(ctx.pdma)

    return (
        tensor((X.size,), 1.0, m["X"]),
        tensor((H.size, X.size), X.size**-0.5, m["H, X"]),
        tensor((H.size,), 0.1, m["H"]),
        tensor((C.size, H.size), H.size**-0.5, m["C, H"]),
        tensor((C.size,), 0.1, m["C"]),
    )
