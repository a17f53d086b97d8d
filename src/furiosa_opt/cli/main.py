"""Entry point of the `furiosa-opt` command (docs/design.md, "The furiosa-opt command").

`compile`, `cache`, `schedule`, `tune`, `view`, `new`, `doctor` and `lsp` are subcommands; `run`, `test`, `bench`,
`build`, `check`, `doc` and literal `python …` / `pytest …` lines go to the wrapper (`wrapper.py`), split
by hand before argparse sees them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from furiosa_opt import __version__
from furiosa_opt.cli.cache import run_cache
from furiosa_opt.cli.compile import run_compile
from furiosa_opt.cli.doctor import run_doctor
from furiosa_opt.cli.new import run_new
from furiosa_opt.cli.schedule import add_schedule_parser, run_schedule
from furiosa_opt.cli.tune import add_tune_parser, run_tune
from furiosa_opt.cli.view import add_arguments as add_view_arguments
from furiosa_opt.cli.view import run_view
from furiosa_opt.cli.wrapper import SUMMARIES, WRAPPER_HELP, run_wrapper, split
from furiosa_opt.env import EnvError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="furiosa-opt",
        description="Compile, run and inspect RNGD kernels.",
        epilog=WRAPPER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"furiosa-opt {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    compile_ = commands.add_parser("compile", help="compile kernels (Python → vISA → LIR → EDF)")
    compile_.add_argument(
        "filters", nargs="*", metavar="FILTER", help="a kernel's name, else a substring of its identity (`::` ok)"
    )
    compile_.add_argument("-p", "--package", action="append", default=[], metavar="PKG")
    compile_.add_argument("--message-format", choices=("human", "json"), default="human")
    compile_.add_argument("--deny", choices=("warnings",), help="`--deny warnings`: a warning fails its kernel")
    compile_.add_argument("--visa", type=Path, metavar="FILE", help="compile hand-written vISA instead")
    compile_.add_argument("--dump-visa", type=Path, metavar="FILE", help="write the kernel's vISA text")
    compile_.add_argument("--dump-dfg", type=Path, metavar="FILE", help="write the vISA data-flow graph (msgpack)")
    compile_.add_argument("--dump-ir", type=Path, metavar="FILE", help="write the LIR (msgpack, docs/lir.md)")
    compile_.add_argument("--dump-graph", type=Path, metavar="FILE", help="write the LIR graph (JSON)")
    compile_.add_argument("--dump-schedule", type=Path, metavar="FILE", help="write the schedule (JSON)")
    compile_.add_argument("--dump-summary", type=Path, metavar="DIR", help="write summary.json and summary.md")
    cache_ = commands.add_parser("cache", help="inspect the per-kernel artifact cache")
    cache_.add_argument("action", choices=("ls", "explain", "verify", "clean"))
    cache_.add_argument("filters", nargs="*", metavar="FILTER")
    cache_.add_argument("-p", "--package", action="append", default=[], metavar="PKG")
    cache_.add_argument(
        "--orphans", action="store_true", help="with clean: remove only the artifacts of kernels that no longer exist"
    )
    add_schedule_parser(commands)
    add_tune_parser(commands)
    add_view_arguments(commands.add_parser("view", help="open the Schedule / IR graph viewer in a browser"))
    new = commands.add_parser("new", help="create a kernel package from the base template")
    new.add_argument("name", metavar="NAME", help="directory and package name (`my-kernels` imports as my_kernels)")
    commands.add_parser("lsp", help="serve the kernel language to an editor (Language Server Protocol, stdio)")
    doctor = commands.add_parser("doctor", help="report Python, dependencies, device, output directory and cache")
    doctor.add_argument("-p", "--package", action="append", default=[], metavar="PKG")
    for name, summary in SUMMARIES.items():  # listed for help and error messages; `split` routes them first
        commands.add_parser(name, help=summary, add_help=False)
    return parser


def run_lsp(options: argparse.Namespace) -> int:
    """`furiosa-opt lsp`: the language server on stdio, if the `lsp` extra is installed."""
    try:
        from furiosa_opt.lsp.server import main as serve
    except ImportError as error:
        missing = (error.name or "a package").split(".")[0]
        print(f"error: `furiosa-opt lsp` needs the lsp extra ({missing} is missing): "
              "pip install 'furiosa-opt[lsp]'", file=sys.stderr)  # fmt: skip
        return 2
    serve()
    return 0


RUNNERS = {"compile": run_compile, "cache": run_cache, "schedule": run_schedule, "view": run_view,
           "new": run_new, "doctor": run_doctor, "tune": run_tune, "lsp": run_lsp}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    wrapped = split(args)
    options = _parser().parse_args(args) if wrapped is None else None
    if options is not None and options.command not in RUNNERS:
        _parser().print_help(sys.stderr)
        return 2
    try:
        return run_wrapper(*wrapped) if wrapped is not None else RUNNERS[options.command](options)
    except EnvError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
