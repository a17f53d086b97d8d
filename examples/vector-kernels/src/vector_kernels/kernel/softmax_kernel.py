"""Row-wise softmax of an f32 [N, D] tensor: one row per slice, three Vector Engine passes."""

from furiosa_opt import *
from vector_kernels.inputs import logits

N, D = axes(N=256, D=256)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["N"]  # one row per slice
Row = m["1 # 8"]  # a per-row statistic: lane 0 of one 8-lane flit


def _row_stream(ctx: Context, x_dm):
    """The row as 8-lane f32 flits, entering the Vector Engine and narrowed to its 4-lane float half."""
    return (
        ctx.main.begin(x_dm.view())
        .fetch(m["D / 8"], m["D % 8"])
        .collect(m["D / 8"], m["D % 8"])
        .vector_init()
        .vector_intra_slice_tag(TagMode.Zero)
        .vector_narrow_split(m["D / 4"], m["D % 4"])
    )


def _to_vrf(ctx: Context, statistic):
    """A committed per-row statistic into the register file, to serve as an operand broadcast over D."""
    return ctx.sub.begin(statistic.view()).fetch(m["1"], Row).collect(m["1"], Row).to_vrf(Row)


@device(chip=1)
def softmax_kernel(ctx: Context, x: HbmTensor[f32, Chip, m["N, D"]]) -> HbmTensor[f32, Chip, m["N, D"]]:
    """y[n, d] = exp(x[n, d] - max_d x[n]) / Σ_d exp(x[n, d] - max_d x[n]), everything in f32.

    1. Row max: the intra-slice reducer folds D with Max into lane 0 (`[1 # 4]`), committed as an
       8-lane row statistic.
    2. Row sum: with the max in the register file, `x - max` (SubF), `exp` (the Exp unit), then the
       reducer folds D with Add. The max must exist before this pass starts, hence a pass of its own.
    3. Normalise: `x - max` and `exp` again, then the divider after the reducer divides by the row sum
       (also from the register file).

    Why this order: one pass runs the chain tag → … → fp → intra-slice reduce → fp_div → widen once,
    and a reduce replaces the stream by its result, so a statistic and the elementwise values it feeds
    cannot come out of the same pass. Pass 3 recomputes the exponentials instead of reading them back:
    keeping them would need pass 2 split in two (an exp pass writing DM, a sum pass reading it), four
    passes instead of three, while recomputing reads the same x with the same ops and yields the same
    bits. Each pass uses an ALU at most once: SubF on FpFma, Exp on FpExp, the fold on ReduceAccTree,
    DivF on ReduceFpDiv. The folds run in the wire order of D (`D / 4` steps outer, `D % 4` lanes
    inner), i.e. d = 0, 1, …, D - 1 one element at a time, starting from -inf (Max) and +0.0 (Add).
    """
    x_dm = x.to_dm(ctx.tdma, Cluster, Slice, m["D"])
    row_max = (
        _row_stream(ctx, x_dm)
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Max, D, m["1"], m["1 # 4"])
        .vector_widen_pad(Row)
        .vector_final()
        .commit_trim(Row)
        .commit(Row)
    )
    max_vrf = _to_vrf(ctx, row_max)
    row_sum = (
        _row_stream(ctx, x_dm)
        .vector_fp_binary(FpBinaryOp.SubF, max_vrf)
        .vector_fp_unary(FpUnaryOp.Exp)
        .vector_intra_slice_reduce(IntraSliceReduceOpF32.Add, D, m["1"], m["1 # 4"])
        .vector_widen_pad(Row)
        .vector_final()
        .commit_trim(Row)
        .commit(Row)
    )
    sum_vrf = _to_vrf(ctx, row_sum)
    out = (
        _row_stream(ctx, x_dm)
        .vector_fp_binary(FpBinaryOp.SubF, max_vrf)
        .vector_fp_unary(FpUnaryOp.Exp)
        .vector_fp_div(sum_vrf)
        .vector_widen_concat(m["D / 8"], m["D % 8"])
        .vector_final()
        .commit_trim(m["D % 8"])
        .commit(m["D"])
    )
    return out.to_hbm(ctx.tdma, m["N, D"])


def differential_inputs(kernel, ctx: Context, rng):
    """For tests/test_differential.py: logits whose wide rows reach subnormal and zero exponentials."""
    return (HostTensor.from_numpy(logits(rng, N.size, D.size), f32, m["N, D"]).to_hbm(ctx.pdma),)
