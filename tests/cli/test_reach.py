"""Reachability by name (`cli/reach.py`) on a synthetic kernel package, read from source: each case is a
test file, and the answer is the set of kernel identities it can name, written out by hand."""

from pathlib import Path

import pytest

from furiosa_opt.cli import reach
from furiosa_opt.cli.compile import targets
from furiosa_opt.compiler.workspace import locate

KERNEL = "\n\n@device\ndef {0}(ctx):\n    pass\n"
PACKAGE = {
    "__init__.py": "",
    "kernel/__init__.py": "from .alpha import *\nfrom .beta import beta\n",
    "kernel/alpha.py": "from furiosa_opt import *\n" + KERNEL.format("alpha") + KERNEL.format("alpha_bis"),
    "kernel/beta.py": "from furiosa_opt import device\n" + KERNEL.format("beta"),
    "kernel/gamma.py": "from furiosa_opt import device\n" + KERNEL.format("gamma"),
    "helper.py": "from furiosa_opt import launch\n\nfrom pkg.kernel import beta\n\n\ndef run(ctx):\n"
    "    return launch(beta, ctx)\n",
    "registry.py": "from .kernel.alpha import alpha, alpha_bis\n\nKERNELS = {'a': alpha}\n",
    "apps/__init__.py": "",
    "apps/tool.py": "from .. import kernel\nfrom ..kernel import gamma as g\n\nkernel.beta, g.gamma\n",
    "broken.py": "def (:\n",
}
ALPHA, ALPHA_BIS = "pkg.kernel.alpha.alpha", "pkg.kernel.alpha.alpha_bis"
BETA, GAMMA = "pkg.kernel.beta.beta", "pkg.kernel.gamma.gamma"


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.furiosa-opt]\nkernel-package = true\n")
    for path, text in PACKAGE.items():
        (tmp_path / "src" / "pkg" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / "pkg" / path).write_text(text)
    (tmp_path / "tests").mkdir()
    return tmp_path


def reached(project: Path, test: str) -> list[str]:
    """The kernels a test file with this source reaches."""
    file = project / "tests" / "test_case.py"
    file.write_text(test)
    packages = locate(project).default
    found, problems = targets(packages)
    assert len(found) == 4 and len(problems) == 1  # pkg.broken does not parse
    kept, _ = reach.needed(found, problems, reach.tested_files([str(file)], project), packages)
    return [t.source.identity for t in kept]


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("from pkg.kernel.alpha import alpha\n\nalpha\n", [ALPHA]),  # by name: not its neighbour alpha_bis
        ("from pkg.kernel.alpha import alpha_bis as a\n\ndef test():\n    a\n", [ALPHA_BIS]),  # an alias
        ("from pkg.kernel import alpha, beta\n\nalpha, beta\n", [ALPHA, BETA]),  # through `*` and a name
        ("from pkg.kernel import *\n\nalpha_bis\n", [ALPHA_BIS]),  # a star into the test, then a star again
        ("import pkg.kernel.gamma\n\npkg.kernel.gamma.gamma\n", [GAMMA]),  # a module, then an attribute
        ("import pkg.kernel.alpha as m\n\nm.alpha_bis.identity\n", [ALPHA_BIS]),
        ("from pkg.kernel import gamma\n\ngamma.gamma\n", [GAMMA]),  # `from` a package: its submodule
        ("import pkg\n\npkg.kernel.beta\n", [BETA]),  # a submodule the package __init__ never names
        ("from pkg.kernel import alpha\n", []),  # imported, never read: it cannot be launched
        ("from pkg.helper import run\n\nrun()\n", [BETA]),  # a helper module names its kernels
        ("import pkg.registry\n\npkg.registry.KERNELS\n", [ALPHA]),  # the registry's code reads alpha only
    ],
)
def test_a_test_reaches_the_kernels_it_names(project, test, expected):
    assert reached(project, test) == expected


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("import pkg.kernel.alpha as m\n\ndir(m)\n", [ALPHA, ALPHA_BIS]),  # the module object is used
        ("from pkg.kernel import alpha as a\n\nglobals()['a']\n", [ALPHA]),  # its own namespace by string
        ("import pkg.kernel.beta as b\n\nb.__dict__\n", [BETA]),
        ("from importlib import import_module\n\nimport_module('pkg.kernel.gamma')\n", [GAMMA]),
        ("import importlib\n\nimportlib.import_module(name)\n", [ALPHA, ALPHA_BIS, BETA, GAMMA]),  # unknowable
        ("import sys\n\nsys.modules['pkg.kernel.gamma']\n", [ALPHA, ALPHA_BIS, BETA, GAMMA]),
    ],
)
def test_names_read_by_string_reach_everything_they_could_be(project, test, expected):
    assert reached(project, test) == expected


def test_a_module_that_does_not_parse_stops_only_the_files_that_import_it(project):
    packages = locate(project).default
    found, problems = targets(packages)
    for test, expected in [("import pkg.helper\n", []), ("from pkg import broken\n", problems)]:
        file = project / "tests" / "test_parse.py"
        file.write_text(test)
        assert reach.needed(found, problems, [file], packages)[1] == expected


def test_host_programs_and_conftest_are_targets_too(project):
    packages = locate(project).default
    found, _ = targets(packages)
    (project / "src" / "pkg" / "program.py").write_text("import pkg.apps.tool as t\n\nt.kernel.alpha\n")
    (project / "tests" / "conftest.py").write_text("from pkg.kernel import alpha_bis\n\nalpha_bis\n")
    (project / "tests" / "test_plain.py").write_text("")

    def kernels(files: list[Path]) -> list[str]:
        return [t.source.identity for t in reach.needed(found, [], files, packages)[0]]

    assert kernels(reach.tested_files(["tests/test_plain.py::test_x"], project)) == [ALPHA_BIS]
    (project / "tests" / "test_beta.py").write_text("from pkg.kernel.beta import beta\n\nbeta\n")
    assert kernels(reach.tested_files(["tests"], project)) == [ALPHA_BIS, BETA]
    assert kernels(reach.python_files(["-m", "pkg.program"], packages, project)) == [ALPHA, BETA, GAMMA]
    assert kernels(reach.run_files("pkg.helper", packages, project)) == [BETA]
    assert kernels(reach.run_files("src/pkg/registry.py", packages, project)) == [ALPHA]
