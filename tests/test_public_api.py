"""The public names of shared/DESIGN.md §2.2 are a contract: pin them."""

import subprocess
import sys

import pytest

import furiosa_opt

CONTRACT = {
    "axes",
    "m",
    "device",
    "launch",
    "Context",
    "HostTensor",
    "HbmTensor",
    "DmTensor",
    "TrfTensor",
    "VrfTensor",
    "i4",
    "i8",
    "i16",
    "i32",
    "u8",
    "f32",
    "bf16",
    "f8e4m3",
    "f8e5m2",
    "f4e2m1",
    "LaneMode",
    "TagMode",
    "FxpBinaryOp",
    "FpBinaryOp",
}


def test_contract_names_are_exported():
    missing = CONTRACT - set(furiosa_opt.__all__)
    assert not missing
    for name in furiosa_opt.__all__:
        assert hasattr(furiosa_opt, name), name


def test_star_import_gives_exactly_all():
    scope: dict = {}
    exec("from furiosa_opt import *", scope)
    assert set(scope) - {"__builtins__"} == set(furiosa_opt.__all__)


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'Tensr'"):
        _ = furiosa_opt.Tensr


def test_reading_artifacts_does_not_load_the_language():
    """The kernel language is imported on first use, so artifact readers stay light."""
    code = "import sys, furiosa_opt.compiler.edf; print(sorted(m for m in sys.modules if m.startswith('furiosa_opt')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "furiosa_opt.compiler.edf" in loaded
    assert "furiosa_opt.lang" not in loaded and "furiosa_opt.backend" not in loaded
    assert "'furiosa_opt.scalar'" not in loaded  # the reader checks runtime programs without parsing text


def test_tensor_methods_of_the_contract():
    for cls, methods in [
        (furiosa_opt.HostTensor, ["from_numpy", "rand", "zeros", "to_numpy", "to_hbm"]),
        (furiosa_opt.HbmTensor, ["to_host", "to_dm", "view", "view_mut", "new"]),
    ]:
        for method in methods:
            assert callable(getattr(cls, method)), f"{cls.__name__}.{method}"


def test_all_is_the_language_and_its_vocabulary():
    """`__all__` holds every op enum and value type of vector/ops/ a kernel names, every scalar type,
    SwitchConfig, and the names a kernel calls; every stage of the table is a method those names reach."""
    from furiosa_opt.dtypes import ALL_DTYPES
    from furiosa_opt.lang.contraction import Contraction
    from furiosa_opt.lang.stream import Stream
    from furiosa_opt.lang.vector import VectorStream
    from furiosa_opt.stages import STAGES
    from furiosa_opt.vector import ops

    # the checkers' tables and the printed VRF marker, not kernel names
    helpers = {"Alu", "RF", "all_ops", "alu_of", "reduce_identity", "scalar_dtype"}
    assert set(ops.__all__) - helpers <= set(furiosa_opt.__all__)
    assert {d.name for d in ALL_DTYPES} <= set(furiosa_opt.__all__)
    assert {"SwitchConfig", "Stash", "TernaryArgMode", "FpDivBinaryOp"} <= set(furiosa_opt.__all__)
    assert not helpers & set(furiosa_opt.__all__)
    classes = (furiosa_opt.TuContext, Stream, VectorStream, furiosa_opt.VectorPair, Contraction)
    reachable = {n for cls in classes for n in dir(cls)}
    assert set(STAGES) <= reachable
