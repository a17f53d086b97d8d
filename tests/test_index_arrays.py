"""Data moves at the cost of the data: running the example kernels builds no index array longer than the
sum of the sizes of the axes it relates.

Every function that builds one entry per position of a layout — the relayout index map, the view window
index, the contraction plan, and the cell decoder where data moves — is wrapped while each kernel runs on
the CPU backend and from its EDF on the simulator (its compile is not measured). The test records the
length of each array built and the sum of the sizes of the axes of the layouts involved (an instrumented
count, not a clock). Views cost nothing per position, so a kernel that moves its data as views builds
none of these, or only small ones.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from backends import backend, compiled
from harness import KERNELS

from furiosa_opt import Context
from furiosa_opt.mapping.factors import Comp, Factors, SymAtom
from furiosa_opt.tune.trial import random_arguments

BUILDERS = ("relayout_index", "window_index", "contraction_plan", "evaluate")
# Where `evaluate` (the cell decoder) moves data; elsewhere it serves static checks of one slice's mappings
# (sequencer synthesis), whose cost is the mapping's, not the data's.
DATA_MODULES = ("furiosa_opt.backend.cpu", "furiosa_opt.lang.tensors.host", "furiosa_opt.sim.tensor_unit")


def _axes(fs: Factors) -> dict[str, int]:
    found = {}
    for f in fs:
        if isinstance(f.atom, SymAtom):
            found[f.atom.name] = f.atom.n
        elif isinstance(f.atom, Comp):
            found.update(_axes(f.atom.k))
    return found


def _length(name: str, args: tuple, result: object) -> int:
    if name == "evaluate":
        return int(np.asarray(args[1]).size)
    if name == "contraction_plan":
        return len(result.lhs)
    return len(result)


@pytest.fixture
def built(monkeypatch) -> list[tuple[str, int, int]]:
    """(builder, entries, sum of axis sizes) of every per-position array built while the fixture lives."""
    record: list[tuple[str, int, int]] = []
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("furiosa_opt")]:
        for name in BUILDERS:
            if name == "evaluate" and module.__name__ not in DATA_MODULES:
                continue
            original = getattr(module, name, None)
            if callable(original) and getattr(original, "__module__", "").startswith("furiosa_opt"):

                def counted(*args, __name=name, __original=original, **kwargs):
                    result = __original(*args, **kwargs)
                    axes: dict[str, int] = {}
                    for arg in args:
                        if isinstance(arg, tuple) and arg and hasattr(arg[0], "atom"):
                            axes.update(_axes(arg))
                    record.append((__name, _length(__name, args, result), sum(axes.values())))
                    return result

                monkeypatch.setattr(module, name, counted)
    return record


EXAMPLES = sorted(i for i in KERNELS if i.startswith("base_template.") or i.startswith("tests.upstream."))
# Kernels whose layouts hold a composite that no view can express: they move through index maps by design
# (the simulator's and the CPU backend's documented exception), so the bound does not apply.
COMPOSITE = {
    "tests.upstream.test_book_vector_reduce.reduce_slice_time_packet": "Slice, Time and Packet read one padded "
    "composite (`R13 # 32` split across all three), which views cannot express",
}


@pytest.mark.parametrize("name", ["cpu", "npu"])
@pytest.mark.parametrize("identity", EXAMPLES)
def test_example_kernels_build_no_index_array_longer_than_their_axes(identity, name, built):
    kernel, module = KERNELS[identity]
    if identity in COMPOSITE:
        pytest.skip(COMPOSITE[identity])
    try:
        if name == "npu":
            compiled(kernel)  # compiling is not moving data: only the simulator's run is measured
        with backend(name) as run, Context.acquire() as ctx:
            args = random_arguments(kernel, ctx, np.random.default_rng(0), module)
            built.clear()  # inputs are made by the host; the kernel's own moves are measured
            run(kernel, ctx, *args)
    except Exception as error:  # a kernel a backend refuses (pair mode, several chips) moves nothing
        pytest.skip(f"{identity} does not run on the {name} backend: {type(error).__name__}")
    too_long = [(name, n, bound) for name, n, bound in built if n > bound]
    assert not too_long, f"{identity} built per-position index arrays: {too_long[:5]}"


def test_the_instrument_sees_an_index_map():
    """The check can fail: a composite layout still moves through an index map, and is seen."""
    from furiosa_opt.backend import cpu
    from furiosa_opt.mapping import axes, m

    A, B = axes(A=256, B=8)
    monkey = pytest.MonkeyPatch()
    record: list = []
    original = cpu.relayout_index
    monkey.setattr(cpu, "relayout_index", lambda *a: record.append(len(original(*a))) or original(*a))
    try:
        cpu.relayout(cpu.fresh(np.arange(2100)), m["[B, A] # 2100"].factors, m["A, B"].factors, False)
    finally:
        monkey.undo()
    assert record == [2048] and 2048 > 256 + 8
