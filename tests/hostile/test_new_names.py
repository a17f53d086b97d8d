"""`furiosa-opt new NAME` refuses names that would shadow the standard library or a module furiosa-opt needs
(its dependencies, extras and what they need in turn), as a usage error; it warns about other installed
modules and creates the package."""

import importlib.util

import pytest
from hostile.support import TOOL, run

from furiosa_opt.cli.new import NewError, dependencies, names


@pytest.mark.parametrize("name", ["numpy", "ml-dtypes", "ml_dtypes", "msgpack", "rich", "pygments", "hypothesis"])
def test_dependency_names_are_refused(name):
    with pytest.raises(NewError, match="which furiosa-opt needs"):
        names(name)


def test_the_dependencies_are_the_installed_ones():
    found = dependencies()
    assert {"numpy", "ml_dtypes", "msgpack", "rich", "pytest", "hypothesis"} <= found
    assert "markdown_it" in found  # rich needs markdown-it-py, whose module is markdown_it
    assert "pip" not in found and "furiosa_opt" not in found  # pip is in every venv, needed by nothing


def test_new_numpy_is_a_usage_error_and_creates_nothing(tmp_path):
    done = run([TOOL, "new", "numpy"], tmp_path)
    assert done.code == 2 and not (tmp_path / "numpy").exists()
    assert done.stderr == (
        "error: furiosa-opt new: `numpy` would shadow `numpy`, which furiosa-opt needs; choose another name\n"
    )
    done = run([TOOL, "new", "json"], tmp_path)
    assert done.code == 2 and "standard library" in done.stderr and not (tmp_path / "json").exists()
    done = run([TOOL, "new", "\x1b[2Jx"], tmp_path)
    assert done.code == 2 and "\x1b" not in done.stderr and "\\x1b[2Jx" in done.stderr


def test_another_installed_module_is_a_warning(tmp_path):
    # pip: installed in every venv and required by nothing here (setuptools is in the dev extra now)
    assert importlib.util.find_spec("pip") is not None
    done = run([TOOL, "new", "pip"], tmp_path)
    assert done.code == 0 and (tmp_path / "pip" / "src" / "pip" / "__init__.py").is_file()
    warning = done.stderr.splitlines()[0]
    assert warning.startswith("warning: furiosa-opt new: an installed module is also called `pip` (")
