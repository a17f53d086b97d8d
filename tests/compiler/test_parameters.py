"""View, tuple and dataclass parameters through every compiler stage: the vISA names each leaf's path and
kind, the text parses back to itself, compiling the parsed text gives the same EDF bytes, and the EDF's
argument table describes each leaf."""

import pytest
from backends import compiled
from parameter_kernels import run_transfer, store_through_view, swap_pair

from furiosa_opt.compiler import visa
from furiosa_opt.compiler.driver import compile_kernel, compile_visa
from furiosa_opt.compiler.edf import read_edf

LEAVES = {
    swap_pair: [("pair.0", "hbm"), ("pair.1", "hbm")],
    run_transfer: [("transfer.source", "hbm"), ("transfer.target", "hbm")],
    store_through_view: [("x", "hbm"), ("out", "view_mut")],
}


@pytest.mark.parametrize("kernel", LEAVES, ids=lambda k: k.__name__)
def test_leaves_survive_the_visa_text_and_reach_the_edf(kernel, tmp_path):
    result = compile_kernel(kernel)
    assert result.ok, result.diagnostics
    text = result.visa_text
    arg_lines = [line for line in text.splitlines() if line.startswith("arg ")]
    assert [(line.split()[1], line.split(": ")[1].split("<")[0]) for line in arg_lines] == LEAVES[kernel]
    assert visa.print_kernel(visa.parse_kernel(text)) == text
    path = tmp_path / "k.visa"
    path.write_text(text)
    assert compile_visa(path).edf == result.edf
    table = read_edf(result.edf).arguments
    assert [(t.path, t.kind) for t in table] == LEAVES[kernel]
    assert read_edf(result.edf) == compiled(kernel)


def test_a_view_argument_spans_its_live_cells():
    (x, out) = read_edf(compile_kernel(store_through_view).edf).arguments
    assert (x.bytes, out.bytes) == (256, 256)  # 128 bf16 each; the whole view is live


def test_hand_written_visa_without_paths_still_parses():
    text = compile_kernel(swap_pair).visa_text.replace("arg pair.0 %0", "arg %0").replace("arg pair.1 %1", "arg %1")
    parsed = visa.parse_kernel(text)
    assert parsed.paths == ("%0", "%1")
