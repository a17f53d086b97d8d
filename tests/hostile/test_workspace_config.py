"""pyproject.toml files furiosa-opt reads, written wrong: each is one line at the file (and the key's line),
exit 1, never a traceback; the same checks in-process give a `WorkspaceError` (a `FuriosaOptError`)."""

import shutil

import pytest
from hostile.support import TOOL, run, scaffold, shared_folder

from furiosa_opt.compiler.workspace import WorkspaceError, locate
from furiosa_opt.diagnostics import FuriosaOptError


@pytest.fixture(scope="module")
def folder():
    path = shared_folder()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def after(header: bytes, text: bytes):
    return lambda old: old.replace(header, header + text, 1)


def replace_all(text: bytes):
    return lambda old: text


# case → (how the scaffold's pyproject.toml is changed, the complaint, the start of the line it is on (None: no
# line is shown: it holds a control character))
CASES = {
    "not UTF-8": (replace_all(b'[project]\nname = "caf\xe9"\n'), "it is not UTF-8 text (byte 21)", "name = "),
    "bins foo = 5": (after(b"[tool.furiosa-opt.bins]\n", b"foo = 5\n"),
                     "`[tool.furiosa-opt.bins] foo` must name a module (`package.module`), not 5", "foo = 5"),
    "bins a string": (replace_all(b'[tool.furiosa-opt]\nkernel-package = true\nbins = "x"\n'),
                      "`[tool.furiosa-opt] bins` must be a table", "bins = "),
    "members a string": (replace_all(b'[tool.furiosa-opt-workspace]\nmembers = "examples/*"\n'),
                         "`[tool.furiosa-opt-workspace] members` must be a list of glob patterns, not 'examples/*'",
                         "members = "),
    "members outside": (replace_all(b'[tool.furiosa-opt-workspace]\nmembers = ["../*"]\n'),
                        "'../*' is not a relative glob pattern", "members = "),
    "members absolute": (replace_all(b'[tool.furiosa-opt-workspace]\nmembers = ["/etc/*"]\n'),
                         "'/etc/*' is not a relative glob pattern", "members = "),
    "members the root": (replace_all(b'[tool.furiosa-opt-workspace]\nmembers = ["."]\n'),  # found by the fuzzer
                         "'.' is not a relative glob pattern", "members = "),
    "kernel-package a string": (replace_all(b'[tool.furiosa-opt]\nkernel-package = "yes"\n'),
                                "kernel-package` must be true or false, not 'yes'", "kernel-package = "),
    "tool a string": (replace_all(b"tool = 3\n"), "`tool` must be a table, not an integer", "tool = "),
    "not TOML": (replace_all(b"[project\n"), "cannot read pyproject.toml: Expected ']'", "[project"),
    "a control character": (replace_all(b'[project]\nname = "\x1b[31m"\n'), "line 2 holds a control character",
                            None),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_bad_pyproject_is_one_line(folder, case):
    edit, complaint, line = CASES[case]
    root, _ = scaffold(folder / case.replace(" ", "-"))
    pyproject = root / "pyproject.toml"
    pyproject.write_bytes(edit(pyproject.read_bytes()))
    done = run([TOOL, "compile"], root, FURIOSA_OPT_OUT_DIR=str(folder / "out"))
    assert done.code == 1, done.text
    first = done.stderr.splitlines()[0]
    assert first.startswith("error[pyproject]: ") and complaint in first, done.stderr
    assert "\x1b" not in done.stderr and " --> " not in first
    if line is not None:
        lines = pyproject.read_bytes().split(b"\n")
        number = next(n for n, text in enumerate(lines, 1) if text.startswith(line.encode()))
        assert f"pyproject.toml:{number}:" in done.stderr, done.stderr
    else:
        assert "-->" not in done.stderr  # the line is not echoed
    with pytest.raises(WorkspaceError) as caught:
        locate(root)
    assert isinstance(caught.value, FuriosaOptError) and complaint in caught.value.diagnostic.message


def test_a_string_of_members_is_not_read_character_by_character(folder, monkeypatch):
    """Before: `members = "examples/*"` globbed `e`, `x`, … ; now it is refused where it is written."""
    workspace = folder / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text('[tool.furiosa-opt-workspace]\nmembers = "examples/*"\n')
    with pytest.raises(WorkspaceError, match="must be a list of glob patterns"):
        locate(workspace)
