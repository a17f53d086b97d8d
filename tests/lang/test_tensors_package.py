"""The late names of `furiosa_opt.lang.tensors.memory` (see the package docstring): bound, whichever module of
the package is imported first, to what their modules define, and `bind` takes all of them or none."""

import subprocess
import sys

import pytest

from furiosa_opt.lang.tensors import host, indirect, memory, views, window

HOMES = {
    "HostTensor": host,
    "TensorView": window,
    "HbmTensorView": views,
    "HbmTensorViewMut": views,
    "DmTensorView": views,
    "DmTensorViewMut": views,
    "_gathered": indirect,
    "_scattered": indirect,
}


def test_every_late_name_is_bound_to_its_definition():
    assert set(HOMES) == memory._LATE
    for name, module in HOMES.items():
        assert getattr(memory, name) is getattr(module, name), name


@pytest.mark.parametrize("first", ["base", "memory", "registers", "views"])
def test_late_names_are_bound_whichever_module_is_imported_first(first):
    program = (
        f"import furiosa_opt.lang.tensors.{first}\n"
        "from furiosa_opt.lang.tensors import memory\n"
        "print(sorted(name for name in memory._LATE if getattr(memory, name) is None))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_bind_refuses_a_partial_set():
    with pytest.raises(NameError, match="HbmTensorView"):
        memory.bind(HostTensor=memory.HostTensor)
