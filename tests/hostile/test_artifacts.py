"""Where `furiosa-opt compile` writes, and what it says when it cannot: artifact paths come from a checked
identity and stay inside the output directory; an unwritable or misnamed output directory, a dump into a
read-only directory and a `--visa` file that is missing, a directory or random bytes are one-line errors.
A read-only directory is one without write permission, or, when we are root (whom permissions do not
stop), `/sys`, where not even root may create a file."""

import os
import shutil
from pathlib import Path

import pytest
from hostile.support import TOOL, run, scaffold, shared_folder

from furiosa_opt.compiler import cache


@pytest.fixture(scope="module")
def workspace():
    """A scaffolded package and the vISA of its constant_add kernel, in a folder `nobody` can read."""
    folder = shared_folder()
    root, name = scaffold(folder)
    out = folder / "out"
    done = run([TOOL, "compile", "constant_add", "--dump-visa", folder / "k.visa"], root, FURIOSA_OPT_OUT_DIR=out)
    assert done.code == 0, done.text
    yield root, name, folder
    shutil.rmtree(folder, ignore_errors=True)


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error")]


def test_a_visa_identity_cannot_write_outside_the_output_directory(workspace, tmp_path):
    """The issue's reproduction: `kernel /../../../../tmp/x` in a dumped vISA."""
    root, name, folder = workspace
    target = Path("/tmp") / f"x{os.getpid()}"
    text = (folder / "k.visa").read_text().splitlines()
    for identity in (f"/../../../..{target}", f"{name}/../../../..{target}", "..", f"{name}..x"):
        (tmp_path / "evil.visa").write_text("\n".join([f"kernel {identity} chip=1 pe=8", *text[1:]]) + "\n")
        out = tmp_path / "out"
        done = run([TOOL, "compile", "--visa", tmp_path / "evil.visa"], root, FURIOSA_OPT_OUT_DIR=out)
        assert done.code == 1, done.text
        expected = f"error[visa-identity]: vISA line 1: the kernel's name: `{identity}` is not a kernel identity"
        assert error_lines(done.stderr) == [expected + " (dotted names: `package.module.function`)"]
        assert not list(target.parent.glob(f"{target.name}*")) and not out.exists()


def test_artifact_paths_are_checked_inside_the_output_directory(tmp_path):
    edf, record = cache.paths(tmp_path, "pkg.mod.kernel")
    assert (edf, record) == (tmp_path / "pkg" / "pkg.mod.kernel.edf", tmp_path / "pkg" / "pkg.mod.kernel.json")
    for identity in ("/etc/x", "../x", "a/b.c", "a..b", "", "x" * 300, "a.\x1b[2J"):
        with pytest.raises(cache.ArtifactError, match="cannot place the artifact"):
            cache.paths(tmp_path, identity)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "pkg").symlink_to(outside)  # a planted link out of the output directory
    with pytest.raises(cache.ArtifactError, match="is outside the output directory"):
        cache.paths(tmp_path / "out", "pkg.mod.kernel")


@pytest.mark.parametrize("case", ["missing", "directory", "random bytes", "control characters"])
def test_a_bad_visa_file_is_one_line(workspace, tmp_path, case):
    root, _, _ = workspace
    path = {"missing": tmp_path / "nope.visa", "directory": tmp_path}.get(case, tmp_path / "bad.visa")
    if case == "random bytes":
        path.write_bytes(bytes(range(256)) * 4)
    if case == "control characters":
        path.write_text("kernel a.b chip=1 pe=8\naxes A=8\n\x1b]0;owned\x07\nreturn\n")
    done = run([TOOL, "compile", "--visa", path], root, FURIOSA_OPT_OUT_DIR=tmp_path / "out")
    expected = {
        "missing": "No such file or directory",
        "directory": "Is a directory",
        "random bytes": "is not vISA text (not UTF-8 at byte 128)",
        "control characters": "vISA line 3 holds a control character: \\x1b]0;owned\\x07",
    }[case]
    assert done.code == 1 and len(error_lines(done.stderr)) == 1 and expected in done.stderr, done.text
    assert "\x1b" not in done.stderr


def read_only(folder: Path) -> Path:
    """A directory this process cannot write in (checked by trying)."""
    if os.geteuid() == 0:
        folder = Path("/sys")
    else:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
    try:
        (folder / "probe").write_text("")
    except OSError:
        return folder
    pytest.skip(f"{folder} is writable here")


def test_a_read_only_output_directory_is_one_line(workspace):
    root, name, folder = workspace
    out = read_only(folder / "read-only-out")
    done = run([TOOL, "compile", "constant_add"], root, FURIOSA_OPT_OUT_DIR=out)
    assert done.code == 1, done.text
    [line] = error_lines(done.stderr)
    assert line.startswith(f"error[output]: cannot write {out / name}: ") and line.endswith(("denied", "permitted"))
    assert not (out / name).exists()


def test_a_read_only_file_system_is_one_line(workspace):
    root, _, _ = workspace
    done = run([TOOL, "compile", "constant_add"], root, FURIOSA_OPT_OUT_DIR="/sys")
    assert done.code == 1 and len(error_lines(done.stderr)) == 1 and "cannot write /sys/" in done.stderr, done.text


def test_an_output_directory_that_is_a_file_is_a_usage_error(workspace, tmp_path):
    root, _, _ = workspace
    (tmp_path / "a-file").write_text("not a directory")
    done = run([TOOL, "compile", "constant_add"], root, FURIOSA_OPT_OUT_DIR=tmp_path / "a-file")
    assert done.code == 2 and done.stderr == f"error: FURIOSA_OPT_OUT_DIR='{tmp_path / 'a-file'}' is not a directory\n"
    done = run([TOOL, "compile", "constant_add"], root, FURIOSA_OPT_OUT_DIR=tmp_path / "a-file" / "below")
    assert done.code == 1 and "Not a directory" in done.stderr and len(error_lines(done.stderr)) == 1, done.text


def test_a_dump_into_a_read_only_directory_is_one_line(workspace):
    root, _, folder = workspace
    dumps = read_only(folder / "read-only-dumps")
    args = [TOOL, "compile", "constant_add", "--dump-schedule", dumps / "s.json"]
    done = run(args, root, FURIOSA_OPT_OUT_DIR=folder / "out")
    assert done.code == 1, done.text
    [line] = error_lines(done.stderr)
    assert line.startswith(f"error[output]: cannot write {dumps / 's.json'}: ") and "tmp" not in line
    assert not (dumps / "s.json").exists()


def test_a_catalogue_into_a_read_only_place_is_one_line(workspace):
    root, _, folder = workspace
    out = read_only(folder / "read-only-doc") / "x" / "kernel"  # the catalogue goes to <out>/../doc
    done = run([TOOL, "doc"], root, FURIOSA_OPT_OUT_DIR=out)
    assert done.code == 1, done.text
    assert done.stderr.splitlines()[-1].strip().startswith(f"Error cannot write {out.parent}"), done.stderr
