"""A tiny HTTP server for the viewers (docs/design.md, "Quality bars").

It serves only the files packaged in `static/` (looked up by exact name, so no path can escape the
folder) and the single file it was given at `/data`. It binds to loopback unless told otherwise,
because a schedule or graph names source files and kernels that should not be shown to the network.

Against a hostile web page and a hostile client:

* a request must name this server: its `Host` (or the authority of an absolute-URI target) must be
  the bound address, the name it was started with, or `localhost` (on a wildcard bind: any IP literal
  or this machine's name) with the bound port. Anything else is 421, so a page on another site whose
  DNS name is rebound to 127.0.0.1 cannot read `/data`;
* a connection has `request_seconds` in all to deliver its request line and headers (every receive
  waits only for what is left, so a trickle does not extend it) and each piece of the answer must be
  taken within `SEND_SECONDS`; one request per connection;
* at most `max_connections` connections are served at once (a thread each); more get 503 at once;
* `/data` is streamed from the file in chunks, never read whole;
* every response, errors included, carries the same security headers.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import mimetypes
import os
import socket
import sys
import threading
import time
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9254
REQUEST_SECONDS = 10.0
SEND_SECONDS = 30.0
MAX_CONNECTIONS = 32
CHUNK = 256 * 1024
SECURITY_HEADERS = (
    ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
)
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".png": "image/png"}


def _assets() -> dict[str, bytes]:
    """Every packaged asset by its URL path, read once: the whitelist of what can be served."""
    static = resources.files("furiosa_opt.viewer") / "static"
    served = {f"/static/{item.name}": item.read_bytes() for item in static.iterdir() if item.is_file()}
    served["/"] = served["/static/index.html"]
    return served


class _Deadline(io.RawIOBase):
    """The connection's incoming bytes until a deadline: each receive waits only for the time left."""

    def __init__(self, connection: socket.socket, seconds: float) -> None:
        self.connection, self.deadline = connection, time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long to arrive")
        self.connection.settimeout(left)
        return self.connection.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    server_version = "furiosa-opt-viewer"
    server: ViewerServer

    def __init__(self, *args, assets: dict[str, bytes], data: Path | None, **kwargs) -> None:
        self.assets, self.data = assets, data
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        super().setup()
        self.rfile = io.BufferedReader(_Deadline(self.connection, self.server.request_seconds))

    def parse_request(self) -> bool:
        """The request line and headers, then: is this request meant for us? (400 or 421 if not)."""
        if not super().parse_request():
            return False
        hosts = self.headers.get_all("Host") or []
        if self.path.startswith("/"):
            if len(hosts) != 1:
                self.send_error(HTTPStatus.BAD_REQUEST, "expected exactly one Host header")
                return False
            authority = hosts[0]
        elif "://" in self.path:  # absolute form: its authority stands for Host (RFC 9112, 3.2.2)
            parts = urlsplit(self.path)
            authority = parts.netloc if parts.scheme.lower() == "http" else ""
            self.path = parts.path or "/"
        else:
            self.send_error(HTTPStatus.BAD_REQUEST, "expected a path or an http:// URL")
            return False
        if not self.server.names_us(authority):
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "this viewer answers only to its own address")
            return False
        return True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/data" and self.data is not None:
            self._send_data()
        elif path in self.assets:
            name = "index.html" if path == "/" else path
            kind = _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
            self._head(kind, len(self.assets[path]))
            self._write(self.assets[path])
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def _send_data(self) -> None:
        """The file in chunks of `CHUNK` bytes: memory does not grow with its size or with the clients."""
        try:
            handle = self.data.open("rb")
        except OSError as error:
            self.send_error(HTTPStatus.NOT_FOUND, f"cannot read {self.data.name}: {error.strerror}")
            return
        with handle:
            left = os.fstat(handle.fileno()).st_size
            self._head("application/json", left)
            while left > 0:
                chunk = handle.read(min(CHUNK, left))
                if not chunk or not self._write(chunk):  # the file shrank, or the client went away
                    break
                left -= len(chunk)

    def _head(self, kind: str, length: int) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", f"{kind}; charset=utf-8" if kind.startswith("text") else kind)
        self.send_header("Content-Length", str(length))
        self.end_headers()

    def end_headers(self) -> None:
        """Every response, errors included, carries the security headers; then the answer may take its time."""
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        super().end_headers()
        self.connection.settimeout(SEND_SECONDS)

    def _write(self, body: bytes) -> bool:
        try:
            self.wfile.write(body)
            return True
        except (BrokenPipeError, ConnectionResetError, TimeoutError):  # the client went away or stopped reading
            self.close_connection = True
            return False

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a viewer in a terminal should not print a line per request."""


class ViewerServer(ThreadingHTTPServer):
    """`ThreadingHTTPServer` with a cap on the connections it serves at once and the names it answers to."""

    daemon_threads = True
    block_on_close = False  # stopping does not wait for idle connections to time out

    def __init__(self, host: str, port: int, handler, request_seconds: float, max_connections: int) -> None:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        self.address_family, *_, address = next((f for f in found if f[0] == socket.AF_INET), found[0])
        self.request_seconds = request_seconds
        self.slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address[:2], handler)
        self.names = {host.lower().rstrip("."), str(self.server_address[0]).lower(), "localhost"}
        bound = ipaddress.ip_address(self.server_address[0])
        self.wildcard = bound.is_unspecified
        if self.wildcard:
            self.names.add(socket.gethostname().lower())

    def names_us(self, authority: str) -> bool:
        """Whether `host[:port]` names this server: one of its names, or (on a wildcard bind) an IP literal."""
        try:
            parts = urlsplit(f"//{authority}")
            host, port = parts.hostname, parts.port
        except ValueError:
            return False
        if not host or "@" in parts.netloc or parts.path or port not in (None, self.server_address[1]):
            return False
        if port is None and self.server_address[1] != 80:
            return False
        host = host.rstrip(".")
        if host in self.names:
            return True
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return False
        return self.wildcard

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            self._busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up or resets is not worth a traceback in the viewer's terminal."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)

    def _busy(self, request: socket.socket) -> None:
        """503 at once, from the accepting thread: a fresh socket takes these few bytes without waiting."""
        body = b"busy: too many connections\n"
        head = ["HTTP/1.0 503 Service Unavailable", "Content-Type: text/plain; charset=utf-8", "Connection: close",
                f"Content-Length: {len(body)}", *(f"{name}: {value}" for name, value in SECURITY_HEADERS)]  # fmt: skip
        with contextlib.suppress(OSError):
            request.settimeout(1)
            request.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + body)


def make_server(
    data: Path | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    request_seconds: float = REQUEST_SECONDS,
    max_connections: int = MAX_CONNECTIONS,
) -> ViewerServer:
    """A bound, not yet running server for `data` (None: the page starts with its drop zone).
    Port 0 picks a free port; `server.server_address` tells which. Raises ValueError for a port
    outside 0-65535 and OSError (socket.gaierror for a host that does not resolve) if it cannot bind."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is not in 0-65535")
    handler = partial(_Handler, assets=_assets(), data=None if data is None else Path(data))
    return ViewerServer(host, port, handler, request_seconds, max_connections)


def is_loopback(server: ViewerServer) -> bool:
    return ipaddress.ip_address(server.server_address[0]).is_loopback


def url_of(server: ThreadingHTTPServer) -> str:
    """The page's address, with IPv6 hosts bracketed."""
    host, port = server.server_address[:2]
    return f"http://{f'[{host}]' if ':' in str(host) else host}:{port}/"
