"""MNIST end to end: upstream `furiosa-opt-examples/tests/mnist_tests.rs` (ten held-out images classified by
`forward` as labelled) plus what upstream leaves to its torch script: the logits bit for bit against the numpy
reference on the CPU backend and on the simulator, the accuracy on the whole held-out set, the fold order and
rounding steps the reference pins, the exported file's layout and its reproduction by the trainer, and the host
program. Under `pytest` these run on the CPU backend (the simulator runs are explicit); under `furiosa-opt test`
the accuracy test and the host program run the binary the wrapper built on the simulator.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import ml_dtypes
import numpy as np
import pytest

from furiosa_opt import Context, HostTensor, bf16, env, launch, m, runtime
from mnist import host, reference
from mnist.__main__ import main
from mnist.kernel import C, H, X, forward

FIRST = 10  # upstream's test reads hw.image_0 … hw.image_9


@contextmanager
def on_backend(name: str):
    """Run the enclosed launches (and the HBM tensors they use) on `name`; yields its launch."""
    saved = os.environ.get("FURIOSA_OPT_BACKEND")
    os.environ["FURIOSA_OPT_BACKEND"] = name
    try:
        yield launch if name == "cpu" else runtime.launch_here
    finally:
        if saved is None:
            del os.environ["FURIOSA_OPT_BACKEND"]
        else:
            os.environ["FURIOSA_OPT_BACKEND"] = saved


def expected_logits(codes: dict[str, np.ndarray], count: int) -> np.ndarray:
    return reference.forward(codes["images"][:count], codes["w1"], codes["b1"], codes["w2"], codes["b2"])


@pytest.fixture(scope="module")
def cpu_first() -> host.Run:
    with on_backend("cpu") as launch_:
        return host.run(count=FIRST, launch_=launch_)


def test_ten_images_equal_the_reference_bit_for_bit_on_the_cpu_backend(codes, cpu_first):
    assert cpu_first.logits.shape == (FIRST, C.size) and cpu_first.logits.dtype == np.uint16
    assert np.array_equal(cpu_first.logits, expected_logits(codes, FIRST))
    assert np.all(cpu_first.logits[:, 10:] == 0)  # padded classes: zero weights and bias give +0.0


def test_ten_images_are_bit_identical_on_the_simulator(codes, cpu_first):
    with on_backend("npu") as launch_:
        npu = host.run(count=FIRST, launch_=launch_)
    assert np.array_equal(npu.logits, cpu_first.logits)
    assert np.array_equal(npu.logits, expected_logits(codes, FIRST))


def test_upstream_mnist_ten_images_classified_as_labelled(codes, cpu_first):
    """mnist_tests.rs: for each of images 0…9 the largest of the first 10 logits is the label."""
    for i in range(FIRST):
        predicted, label = int(cpu_first.predicted[i]), int(codes["labels"][i])
        assert predicted == label, f"image_{i}: expected {label}, got {predicted}"


def test_held_out_accuracy(codes, report):
    """On the backend the run selects: the CPU backend under pytest, the binary `furiosa-opt test` built on the
    simulator under it."""
    result = host.run()
    count = len(codes["labels"])
    assert count == 100 and np.array_equal(result.labels, codes["labels"])
    assert np.array_equal(result.logits, expected_logits(codes, count))
    assert result.accuracy >= 0.90
    correct = int(np.sum(result.predicted == result.labels))
    report(f"held-out accuracy {result.accuracy:.3f} ({correct}/{count}, {env.backend()} backend)")


def test_makespan_of_forward(report):
    """Under `furiosa-opt test` the binary the wrapper built; under pytest one compiled here."""
    from furiosa_opt.compiler.driver import compile_kernel

    edf = runtime.load(forward) if env.backend() == "npu" else runtime.compiled_here(forward)
    cycles = host.makespan(edf)
    assert cycles == compile_kernel(forward).plan.makespan > 0  # the binary reproduces the static schedule
    report(f"forward: {cycles} simulated cycles per image (makespan)")


# ---- the steps the reference pins, on inputs made to expose them ----------------------------------------


def bf16_codes(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


def run_forward(image, w1, b1, w2, b2, name: str = "cpu") -> np.ndarray:
    with on_backend(name) as launch_, Context.acquire() as ctx:
        args = [
            HostTensor.from_numpy(codes.view(ml_dtypes.bfloat16), bf16, mapping).to_hbm(ctx.pdma)
            for codes, mapping in ((image, m["X"]), (w1, m["H, X"]), (b1, m["H"]), (w2, m["C, H"]), (b2, m["C"]))
        ]
        return launch_(forward, ctx, *args).to_host(ctx.pdma).to_numpy().view(np.uint16)


@pytest.fixture(scope="module")
def crafted():
    """Hidden unit 0 sums 2²⁴ + 399 ones − 2²⁴: 0 when folded x = 0, 1, … (each 1 is lost against 2²⁴), 399
    when folded backwards. Unit 1 multiplies a subnormal pixel by 2¹²⁰: 2⁻⁷ if subnormals were kept, 0 as the
    engines flush them. Unit 2 sums to 1 + 2⁻⁸, a bf16 tie that rounds to even (1.0). The rest are random,
    with negative pre-activations for ReLU; w2 reads units 0…2 into every class."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(X.size).astype(np.float32)
    x[0] = x[799] = 2.0**24
    x[1:799] = np.where(np.arange(1, 799) < 400, 1.0, x[1:799])
    x[500] = np.float32(ml_dtypes.bfloat16(2.0**-127))  # subnormal in bf16
    w1 = (rng.standard_normal((H.size, X.size)) * 0.05).astype(np.float32)
    w1[:3] = 0.0
    w1[0, :400], w1[0, 799] = 1.0, -1.0  # 2^24 + 399 ones - 2^24
    w1[1, 500] = 2.0**120
    w1[2, 1], w1[2, 2] = 1.0, 2.0**-8  # x[1] = x[2] = 1
    w1[3:, 0] = w1[3:, 799] = 0.0  # keep the 2^24 pixels out of the random units
    b1 = (rng.standard_normal(H.size) * 0.5).astype(np.float32)
    b1[:3] = 0.0
    w2 = (rng.standard_normal((C.size, H.size)) * 0.1).astype(np.float32)
    w2[:, :3] = 1.0
    b2 = (rng.standard_normal(C.size) * 0.1).astype(np.float32)
    return tuple(bf16_codes(v) for v in (x, w1, b1, w2, b2))


def test_crafted_inputs_equal_the_reference_on_both_backends(crafted):
    expected = reference.forward(*crafted)
    assert np.array_equal(run_forward(*crafted), expected)
    assert np.array_equal(run_forward(*crafted, name="npu"), expected)
    hidden = reference.widen(reference.hidden(*crafted[:3]))
    assert hidden[0] == 0.0 and hidden[1] == 0.0 and hidden[2] == 1.0
    assert (hidden[3:] == 0).sum() > 50 and (hidden[3:] > 0).sum() > 50  # ReLU both ways


def test_each_pinned_step_is_observable(crafted, monkeypatch):
    """Other choices at each step change the logits, so the bit-for-bit tests pin all of them."""
    x, w1, b1, w2, b2 = crafted
    expected = reference.forward(*crafted)
    backwards = reference.forward(x[::-1], w1[:, ::-1], b1, w2[:, ::-1], b2)  # fold x (and h) from the end
    assert reference.widen(reference.hidden(x[::-1], w1[:, ::-1], b1))[0] == 400.0  # bf16(399)
    assert not np.array_equal(backwards, expected)
    with monkeypatch.context() as patch:  # widen keeping subnormals (ml_dtypes is exact)
        patch.setattr(
            reference, "widen", lambda c: np.asarray(c, np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
        )
        assert not np.array_equal(reference.forward(*crafted), expected)
    with monkeypatch.context() as patch:  # narrow rounding ties up instead of to even
        patch.setattr(
            reference,
            "narrow",
            lambda v: ((np.asarray(v, np.float32).view(np.uint32) + 0x8000) >> 16).astype(np.uint16),
        )
        assert not np.array_equal(reference.forward(*crafted), expected)


def test_narrow_and_widen_against_ml_dtypes():
    """Away from subnormals and NaN the engines' bf16 conversions are IEEE's: ml_dtypes' nearest-even cast and
    its exact widening."""
    rng = np.random.default_rng(3)
    values = (rng.standard_normal(100_000) * 10.0 ** rng.uniform(-30, 30, 100_000)).astype(np.float32)
    ties = (bf16_codes(rng.standard_normal(1000)).astype(np.uint32) << 16 | 0x8000).view(np.float32)
    for v in (values, ties):
        assert np.array_equal(reference.narrow(v), v.astype(ml_dtypes.bfloat16).view(np.uint16))
    codes = bf16_codes(values)
    assert np.array_equal(reference.widen(codes), codes.view(ml_dtypes.bfloat16).astype(np.float32))
    subnormals = np.array([1e-40, -1e-40, 2.0**-130], np.float32)
    assert list(reference.narrow(subnormals)) == [0x0000, 0x8000, 0x0000]
    assert list(reference.narrow(np.array([np.nan, np.inf, 3.4e38], np.float32))) == [0x7FC0, 0x7F80, 0x7F80]


def test_predict_keeps_the_last_maximum_under_total_order():
    """Upstream picks with `max_by(total_cmp)`: the last of equal maxima, and +0.0 above -0.0."""
    logits = bf16_codes([[1, 3, 3, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9], [-0.0, 0.0, -0.0] + [-1.0] * 13])
    assert list(reference.predict(logits)) == [2, 1]


# ---- the exported file, the trainer and the host program --------------------------------------------------


def test_the_file_has_upstreams_names_shapes_and_padding(codes):
    from safetensors import safe_open

    with safe_open(host.WEIGHTS, framework="numpy") as file:
        names = set(file.keys())
        dtypes = {name: file.get_slice(name).get_dtype() for name in names}
        shapes = {name: file.get_slice(name).get_shape() for name in names}
    assert {"hw.fc1.weight", "fc1.bias", "hw.fc2.weight", "hw.fc2.bias"} <= names
    assert shapes["hw.fc1.weight"] == [256, 800] and shapes["fc1.bias"] == [256]
    assert shapes["hw.fc2.weight"] == [16, 256] and shapes["hw.fc2.bias"] == [16]
    assert shapes["hw.image_99"] == [800] and shapes["label_99"] == [1] and "hw.image_100" not in names
    assert {dtypes[n] for n in names if n.startswith("label_")} == {"I32"}
    assert {dtypes[n] for n in names if not n.startswith("label_")} == {"BF16"}
    assert not codes["w1"][:, 784:].any() and not codes["w2"][10:].any() and not codes["b2"][10:].any()
    assert not codes["images"][:, 784:].any() and codes["w1"][:, :784].all()
    assert sorted(set(codes["labels"].tolist())) == list(range(10))


def test_retraining_reproduces_the_checked_in_file(tmp_path):
    pytest.importorskip("sklearn", reason="the train extra: pip install -e 'examples/mnist[train]'")
    from mnist import train

    path, accuracy = train.export(tmp_path / "mnist.safetensors")
    assert path.read_bytes() == host.WEIGHTS.read_bytes()
    assert accuracy >= 0.95


def test_host_program_prints_accuracy_and_agreement(capsys):
    assert main(["--count", "5", "--show", "1"]) == 0
    out = capsys.readouterr().out
    assert "[0] label=" in out and "← pred" in out
    backend = env.backend()
    assert f"5/5 held-out digits correct, accuracy 1.000 ({backend} backend)" in out
    assert "5/5 logit vectors equal the numpy reference bit for bit" in out
    assert ("simulated cycles per image" in out) == (backend == "npu")


def test_host_program_refuses_a_count_past_the_file():
    with pytest.raises(SystemExit):
        main(["--count", "101"])
