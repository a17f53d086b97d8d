"""Live progress of a build of several kernels: on a terminal, a rich bar that names the kernel in flight
and counts the kernels done, with the status lines above it; elsewhere, the plain lines alone."""

import re

import pytest

from furiosa_opt.cli.compile import NO_DUMPS, Reporter, build_all, selection, targets
from furiosa_opt.cli.new import create

WANTED = ("constant_add_kernel", "elementwise_mul_kernel")


@pytest.fixture
def two_kernels(tmp_path, monkeypatch):
    root = create("progresspkg", tmp_path)
    monkeypatch.chdir(root)
    out, packages = selection([], Reporter(json_format=False, live=False))
    found, _ = targets(packages)
    return [t for t in found if t.source.identity.rsplit(".", 1)[1] in WANTED], tmp_path / "out"


def test_a_terminal_sees_a_bar_naming_the_kernel_in_flight(two_kernels, capsys):
    selected, out = two_kernels
    assert build_all(selected, out, NO_DUMPS, Reporter(json_format=False, live=True)) == 0
    err = capsys.readouterr().err
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err).replace("\r", "\n")  # one line per redraw
    for target in selected:
        name = target.source.identity.rsplit(".", 1)[1]
        assert re.search(rf"^\S Compiling {name} [━╸╺]+ [01]/2 ", plain, re.MULTILINE), plain
        assert re.search(rf"^\s*Compiled {re.escape(target.source.identity)}\s+\(", plain, re.MULTILINE), plain
    assert "\x1b[" in err and "2 compiled, 0 up to date, 0 failed" in plain


def test_elsewhere_only_the_plain_lines(two_kernels, capsys):
    selected, out = two_kernels
    assert build_all(selected, out, NO_DUMPS, Reporter(json_format=False, live=False)) == 0
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[0] for line in lines] == ["Compiled", "Compiled", "Finished"]
    assert all("\x1b" not in line and "/2" not in line for line in lines)
