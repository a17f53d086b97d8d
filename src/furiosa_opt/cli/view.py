"""`furiosa-opt view [FILE]` and the `furiosa-schedule-viewer` script: serve the viewers on loopback."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from furiosa_opt.viewer.server import DEFAULT_HOST, DEFAULT_PORT, make_server, url_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by `furiosa-opt view` and `furiosa-schedule-viewer`."""
    parser.add_argument("file", nargs="?", type=Path, metavar="FILE", help="schedule or LIR graph JSON to open")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")


def run_view(options: argparse.Namespace) -> int:
    """Serve until interrupted; a missing FILE or a busy port is a one-line error, not a traceback."""
    if options.file is not None and not options.file.is_file():
        print(f"error: {options.file}: no such file", file=sys.stderr)
        return 1
    try:
        server = make_server(options.file, options.host, options.port)
    except OSError as error:
        print(f"error: cannot listen on {options.host}:{options.port}: {error.strerror or error}", file=sys.stderr)
        if options.port:
            print("help: another viewer may be running; pick another port with --port", file=sys.stderr)
        return 1
    url = url_of(server)
    print(f"Schedule Viewer at {url} (Ctrl-C to stop)", flush=True)
    if not options.no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `furiosa-schedule-viewer`, named after upstream's viewer binary."""
    parser = argparse.ArgumentParser(prog="furiosa-schedule-viewer", description="Schedule and IR graph viewer.")
    add_arguments(parser)
    return run_view(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
