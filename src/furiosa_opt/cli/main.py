"""Entry point of the `furiosa-opt` command.

The compiler and the NPU wrapper arrive with later stages; until then the command says so plainly.
"""

import sys

from furiosa_opt import __version__


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-V", "--version"):
        print(f"furiosa-opt {__version__}")
        return 0
    print(
        "furiosa-opt: the compiler and the NPU build are not available yet in this version;\n"
        "run kernels on the CPU backend with plain `python` or `pytest`.",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
