"""`@device`, `launch`, contexts and host tensors: identities, argument checks, numpy round trips."""

import numpy as np
import pytest

from furiosa_opt import *

A, B = axes(A=256, B=8)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A"]


@device
def copy_kernel(ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]]) -> HbmTensor[i32, Chip, m["A, B"]]:
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    return dm.to_hbm(ctx.tdma, m["A, B"])


@device(chip=1, pe=8)
def pair_kernel(
    ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]]
) -> tuple[HbmTensor[i32, Chip, m["A, B"]], HbmTensor[i32, Chip, m["B, A"]]]:
    dm = x.to_dm(ctx.tdma, Cluster, Slice, m["B"])
    return dm.to_hbm(ctx.tdma, m["A, B"]), dm.to_hbm(ctx.tdma, m["B, A"])


@device
def wrong_result_kernel(ctx: Context, x: HbmTensor[i32, Chip, m["A, B"]]) -> HbmTensor[i32, Chip, m["B, A"]]:
    return x


def host(values=None) -> HostTensor:
    values = np.arange(A.size * B.size, dtype=np.int32).reshape(A.size, B.size) if values is None else values
    return HostTensor.from_numpy(values, i32, m["A, B"])


def test_identity_and_device():
    assert copy_kernel.identity == f"{__name__}.copy_kernel"
    assert (copy_kernel.device.chip, copy_kernel.device.pe) == (1, 8)
    assert [p.name for p in copy_kernel.parameters] == ["ctx", "x"]


def test_launch_returns_one_tensor_or_a_tuple():
    with Context.acquire() as ctx:
        x = host()
        out = launch(copy_kernel, ctx, x.to_hbm(ctx.pdma))
        assert isinstance(out, HbmTensor)
        assert np.array_equal(out.to_host(ctx.pdma).to_numpy(), x.to_numpy())
        same, transposed = launch(pair_kernel, ctx, x.to_hbm(ctx.pdma))
        assert np.array_equal(transposed.to_host(ctx.pdma).to_numpy(), x.to_numpy().T)
        assert np.array_equal(transposed.to_host(ctx.pdma, m["A, B"]).to_numpy(), x.to_numpy())


def test_nested_device_functions_are_refused():
    with pytest.raises(VerifyError) as info:

        @device
        def inner(ctx: Context) -> None:
            pass

    assert info.value.rule == "device-nested" and "<locals>" in info.value.message


def plain(ctx: Context) -> None:
    pass


def test_bad_device_shape_is_refused():
    with pytest.raises(VerifyError, match="pe one of"):
        device(pe=3)(plain)


def test_launch_checks_arguments_and_results():
    with Context.acquire() as ctx:
        x = host().to_hbm(ctx.pdma)
        with pytest.raises(VerifyError) as info:
            launch(copy_kernel, ctx)
        assert info.value.rule == "launch-arity"
        other = HostTensor.from_numpy(np.zeros((8, 256), np.int32), i32, m["B, A"]).to_hbm(ctx.pdma)
        with pytest.raises(VerifyError) as info:
            launch(copy_kernel, ctx, other)
        assert (
            info.value.rule == "launch-argument"
            and "element mapping: expected `A, B`, got `B, A`" in info.value.message
        )
        with pytest.raises(VerifyError) as info:
            launch(wrong_result_kernel, ctx, x)
        assert info.value.rule == "launch-result"
        with pytest.raises(VerifyError) as info:
            copy_kernel(ctx, x)
        assert info.value.rule == "device-call"


def test_an_argument_whose_axis_differs_in_size_shows_both_sizes():
    """`A, B` against `A, B`: the host built its tensor with an `A` of another size."""
    A = axes(A=128)  # the host's own A
    with Context.acquire() as ctx:
        x = HostTensor.from_numpy(np.zeros((A.size, B.size), np.int32), i32, m["A, B"]).to_hbm(ctx.pdma)
        with pytest.raises(VerifyError) as info:
            launch(copy_kernel, ctx, x)
    assert info.value.rule == "launch-argument"
    assert info.value.message == (
        f"`{__name__}.copy_kernel`: argument `x`: element mapping: expected `A, B` (A=256), got `A, B` (A=128)"
    )
    assert info.value.location.file == __file__ and "launch(copy_kernel, ctx, x)" in info.value.location.source


def test_wrong_context_is_refused():
    with Context.acquire() as ctx:
        with pytest.raises(VerifyError) as info:
            host().to_hbm(ctx.tdma)
        assert info.value.rule == "wrong-context" and "`ctx.pdma`" in info.value.message


def test_context_is_one_per_process():
    with Context.acquire() as first:
        pass
    with Context.acquire() as second:
        assert first is second
    assert {first.main.name, first.sub.name, first.tdma.name, first.pdma.name} == {"main", "sub", "tdma", "pdma"}


def test_a_nested_acquire_is_refused_and_held_reuses_the_context():
    """A second `acquire` on the thread that holds the context would wait for itself: it is refused in one
    line, and the context stays usable; `held` hands out the context this thread holds, or acquires it."""
    with Context.acquire() as outer:
        with pytest.raises(VerifyError) as info, Context.acquire():
            pass
        assert info.value.rule == "context-acquire" and "same thread" in info.value.message
        with Context.held() as inner:
            assert inner is outer
    with Context.held() as alone, pytest.raises(VerifyError), Context.acquire():  # held acquired it: refused
        pass
    with Context.acquire() as again:  # released after each block, even the refused one
        assert again is alone


def test_host_tensor_numpy_round_trips_and_padding():
    C = axes(C=5)
    values = np.arange(A.size * C.size, dtype=np.float32).reshape(A.size, C.size) / 7
    with pytest.raises(VerifyError) as info:  # axes come in order of first appearance: C, A
        HostTensor.from_numpy(values, f32, m["C # 8, A"])
    assert info.value.rule == "host-shape"
    t = HostTensor.from_numpy(values.T, f32, m["C # 8, A"])
    assert np.array_equal(t.to_numpy(), values.T)
    buffer = t.values()
    assert buffer.shape == (8 * A.size,)
    assert (buffer.reshape(8, A.size)[5:] == 0).all()  # padding rows are zero
    assert buffer.reshape(8, A.size)[2, 3] == values[3, 2]


def test_host_tensors_never_share_the_callers_array():
    """from_numpy copies once (also when the layout is the array's own), and to_numpy hands out a copy."""
    for mapping, shape in ((m["A, B"], (A.size, B.size)), (m["B, A"], (B.size, A.size))):
        values = np.arange(A.size * B.size, dtype=np.int32).reshape(shape)
        tensor = HostTensor.from_numpy(values, i32, mapping)
        expected = tensor.to_numpy().copy()
        assert np.array_equal(expected, values)
        values[:] = -1
        out = tensor.to_numpy()
        out[:] = -2
        assert np.array_equal(tensor.to_numpy(), expected)


def test_host_tensor_refuses_out_of_range_integers():
    with pytest.raises(VerifyError) as info:
        HostTensor.from_numpy(np.full((A.size, B.size), 300), i8, m["A, B"])
    assert info.value.rule == "host-values" and "300" in info.value.message


def test_rand_is_deterministic_and_zeros_padding():
    first = HostTensor.rand(bf16, m["A # 300"], np.random.default_rng(7)).values()
    second = HostTensor.rand(bf16, m["A # 300"], np.random.default_rng(7)).values()
    assert np.array_equal(first.view(np.uint16), second.view(np.uint16))
    assert (first[256:].view(np.uint16) == 0).all()
    values = first[:256].astype(np.float32)
    assert (values >= -1).all() and (values <= 1).all() and len(np.unique(values)) > 100  # bf16 may round to 1


def test_errors_show_user_frames_only():
    import traceback

    with Context.acquire() as ctx:
        try:
            host().to_hbm(ctx.tdma)
        except VerifyError as error:
            frames = traceback.extract_tb(error.__traceback__)
    internal = [f for f in frames if "/furiosa_opt/" in f.filename and not f.filename.endswith("diagnostics.py")]
    assert internal == []
    assert frames[0].filename == __file__
