"""Ship the base template inside the wheel, so `furiosa-opt new` works from an installed package.

The template's one source is `examples/base-template`; this copies it into the built package as
`furiosa_opt/templates/base-template` (a checkout reads the example directly).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TEMPLATE = Path(__file__).parent / "examples" / "base-template"
SKIP = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache", "target")


class BuildWithTemplate(build_py):
    def run(self) -> None:
        super().run()
        if TEMPLATE.is_dir():  # absent when building from an sdist that already holds the copy
            target = Path(self.build_lib) / "furiosa_opt" / "templates" / "base-template"
            shutil.copytree(TEMPLATE, target, dirs_exist_ok=True, ignore=SKIP)


setup(cmdclass={"build_py": BuildWithTemplate})
