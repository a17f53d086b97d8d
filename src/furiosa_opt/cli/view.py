"""`furiosa-opt view [FILE]` and the `furiosa-schedule-viewer` script: serve the viewers on loopback."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
import webbrowser
from pathlib import Path

from furiosa_opt.viewer.server import DEFAULT_HOST, DEFAULT_PORT, is_loopback, make_server, url_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options shared by `furiosa-opt view` and `furiosa-schedule-viewer`."""
    parser.add_argument("file", nargs="?", type=Path, metavar="FILE", help="schedule or LIR graph JSON to open")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port, 0: any free one (default {DEFAULT_PORT})"
    )
    parser.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")


def run_view(options: argparse.Namespace) -> int:
    """Serve until interrupted; a bad port, a missing FILE or a failed bind is a one-line error, not a traceback."""
    if not 0 <= options.port <= 65535:
        print(f"error: --port {options.port}: a port is 0 to 65535 (0 picks a free one)", file=sys.stderr)
        return 2
    if options.file is not None and not options.file.is_file():
        print(f"error: {options.file}: no such file", file=sys.stderr)
        return 1
    try:
        server = make_server(options.file, options.host, options.port)
    except OSError as error:
        print(f"error: cannot listen on {options.host}:{options.port}: {_bind_error(error, options)}", file=sys.stderr)
        return 1
    url = url_of(server)
    print(f"Schedule Viewer at {url} (Ctrl-C to stop)", flush=True)
    if not is_loopback(server):
        where = "every network interface" if server.wildcard else "a network interface"
        shown = options.file.name if options.file is not None else "the file you open"
        print(f"warning: listening on {server.server_address[0]}, {where}: anyone who can reach this machine can "
              f"read {shown}; use --host 127.0.0.1 to keep it local", file=sys.stderr, flush=True)  # fmt: skip
    if not options.no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _bind_error(error: OSError, options: argparse.Namespace) -> str:
    """What the bind error was, said plainly, with what to do about it."""
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name {options.host!r}"
    if error.errno == errno.EADDRINUSE:
        return f"port {options.port} is in use (another viewer may be running); pick another with --port"
    if error.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges); pick another with --port"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{options.host} is not an address of this machine; see --host"
    return error.strerror or str(error)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `furiosa-schedule-viewer`, named after upstream's viewer binary."""
    parser = argparse.ArgumentParser(prog="furiosa-schedule-viewer", description="Schedule and IR graph viewer.")
    add_arguments(parser)
    return run_view(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
