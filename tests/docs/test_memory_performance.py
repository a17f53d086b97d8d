"""docs/guide/memory-performance.md as written: its python blocks are one module, every figure in its table is
what the compiler's schedule and the simulator's timing of the compiled binary give (and within 5% of the
book's where it has one), every kernel of the page is in the table or warned as the page shows."""

import importlib.util
import re
from pathlib import Path

import pytest

from furiosa_opt.compiler.driver import compile_kernel
from furiosa_opt.compiler.edf import read_edf
from furiosa_opt.lang.device import DeviceFunction
from furiosa_opt.sim.timing import simulate

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "memory-performance.md"
BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```$", re.S | re.M)
ROW = re.compile(  # | `kernel` | DMA or fetch | book | estimate | simulated |
    r"^\| `(?P<kernel>\w+)` \| (?P<command>DMA|fetch) \| (?P<book>[\d—]+) "
    r"\| (?P<estimate>\d+) \| (?P<simulated>\d+) \|$",
    re.M,
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The page's text and its python blocks imported as one module."""
    text = PAGE.read_text()
    path = tmp_path_factory.mktemp("page") / "memory_examples.py"
    path.write_text("\n\n".join(m["body"] for m in BLOCK.finditer(text) if m["lang"] == "python"))
    spec = importlib.util.spec_from_file_location("memory_examples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return text, module


def measured(kernel: DeviceFunction, command: str) -> tuple[int, int]:
    """(estimate, simulated) cycles of the kernel's last DMA, or of its fetch pipeline past the fill."""
    result = compile_kernel(kernel)
    assert result.ok, [d.rendered() for d in result.diagnostics]
    timing = simulate(read_edf(result.edf))
    kind = "dma" if command == "DMA" else "exec"
    slot = [s for s in result.plan.slots if s.costed.command.kind == kind][-1]
    index, fill = slot.costed.command.index, 0 if command == "DMA" else slot.costed.latency
    return slot.end - slot.start - fill, timing.end[index] - timing.start[index] - fill


def test_every_figure_of_the_table(page):
    text, module = page
    rows = list(ROW.finditer(text))
    assert len(rows) == 10
    for row in rows:
        estimate, simulated = measured(getattr(module, row["kernel"]), row["command"])
        assert (estimate, simulated) == (int(row["estimate"]), int(row["simulated"])), row["kernel"]
        if row["book"] != "—":
            assert estimate == pytest.approx(int(row["book"]), rel=0.05), row["kernel"]


def test_every_kernel_is_in_the_table_or_warned_as_shown(page):
    text, module = page
    kernels = {name for name, value in vars(module).items() if isinstance(value, DeviceFunction)}
    assert kernels - {row["kernel"] for row in ROW.finditer(text)} == {"starving"}
    [warning] = compile_kernel(module.starving).diagnostics
    shown = next(m["body"] for m in BLOCK.finditer(text) if m["lang"] == "text")
    assert " ".join(shown.split()) == f"{warning.level}[{warning.code}]: {warning.message}"
