"""A tiny HTTP server for the viewers (docs/design.md, "Quality bars").

It serves only the files packaged in `static/` (looked up by exact name, so no path can escape the
folder) and the single file it was given at `/data`. It binds to loopback unless told otherwise,
because a schedule or graph names source files and kernels that should not be shown to the network.
"""

from __future__ import annotations

import contextlib
import mimetypes
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9254
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png"}


def _assets() -> dict[str, bytes]:
    """Every packaged asset by its URL path, read once: the whitelist of what can be served."""
    static = resources.files("furiosa_opt.viewer") / "static"
    served = {f"/static/{item.name}": item.read_bytes() for item in static.iterdir() if item.is_file()}
    served["/"] = served["/static/index.html"]
    return served


class _Handler(BaseHTTPRequestHandler):
    server_version = "furiosa-opt-viewer"

    def __init__(self, *args, assets: dict[str, bytes], data: Path | None, **kwargs) -> None:
        self.assets, self.data = assets, data
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/data" and self.data is not None:
            try:
                body = self.data.read_bytes()
            except OSError as error:
                self.send_error(HTTPStatus.NOT_FOUND, f"cannot read {self.data.name}: {error.strerror}")
                return
            self._send(body, "application/json")
        elif path in self.assets:
            name = "index.html" if path == "/" else path
            kind = _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
            self._send(self.assets[path], kind)
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", f"{kind}; charset=utf-8" if kind.startswith("text") else kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the browser went away: nothing to say
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a viewer in a terminal should not print a line per request."""


def make_server(data: Path | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """A bound, not yet running server for `data` (None: the page starts with its drop zone).
    Port 0 picks a free port; `server.server_address` tells which. Raises OSError if it cannot bind."""
    handler = partial(_Handler, assets=_assets(), data=None if data is None else Path(data))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    """The page's address, with IPv6 hosts bracketed."""
    host, port = server.server_address[:2]
    return f"http://{f'[{host}]' if ':' in str(host) else host}:{port}/"
