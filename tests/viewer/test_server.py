"""The viewer server serves its packaged assets and the one given file, nothing else, on loopback, and
holds against a hostile web page (DNS rebinding) and hostile clients (idle, slow, too many, not HTTP)."""

import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from furiosa_opt.cli.main import main as cli
from furiosa_opt.cli.view import main as viewer_script
from furiosa_opt.viewer.server import DEFAULT_HOST, DEFAULT_PORT, SECURITY_HEADERS, make_server, url_of


@pytest.fixture
def server(tmp_path):
    data = tmp_path / "s.json"
    data.write_text('{"instructions": [], "tensors": []}')
    server = make_server(data, port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def get(server, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    connection.request("GET", path)  # sent verbatim: no client-side normalisation of `..`
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


def test_serves_the_page_its_assets_and_the_given_file(server):
    assert get(server, "/")[0] == 200
    assert b"/static/app.js" in get(server, "/static/index.html")[1]
    assert get(server, "/static/model.js")[0] == 200
    assert get(server, "/data") == (200, b'{"instructions": [], "tensors": []}')


@pytest.mark.parametrize(
    "path",
    ["/../../etc/passwd", "/static/../server.py", "/static/../../cli/view.py", "/static/%2e%2e/server.py",
     "/etc/passwd", "/server.py", "/static/", "/static/nothing.js", "//etc/passwd", "/data/../static/app.js"],
)  # fmt: skip
def test_anything_else_is_404(server, path):
    status, body = get(server, path)
    assert status == 404
    assert b"root:" not in body and b"import" not in body


def test_without_a_file_data_is_404():
    server = make_server(None, port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        assert get(server, "/data")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_default_address_is_loopback_9254():
    assert (DEFAULT_HOST, DEFAULT_PORT) == ("127.0.0.1", 9254)
    server = make_server(None, port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_missing_file_and_busy_port_are_clear_errors(tmp_path, capsys):
    assert cli(["view", str(tmp_path / "absent.json"), "--no-browser"]) == 1
    assert "absent.json: no such file" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert viewer_script(["--port", str(port), "--no-browser"]) == 1
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err and "Traceback" not in err


# ---- against a hostile web page and hostile clients ------------------------------------------------


def start(data=None, **options):
    server = make_server(data, port=0, **options)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def raw(server, request: bytes, timeout: float = 5) -> bytes:
    """Send bytes as they are (no client-side Host or normalisation) and read until the server closes."""
    with socket.create_connection(server.server_address[:2], timeout=timeout) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def status_and_headers(answer: bytes) -> tuple[int, dict[str, str]]:
    head = answer.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), headers


@pytest.mark.parametrize(
    ("target", "host", "status"),
    [("/data", "evil.example", 421), ("/data", "evil.example:{port}", 421), ("/data", "127.0.0.1.evil.example", 421),
     ("/data", "127.0.0.1:1", 421), ("/data", "127.0.0.1", 421), ("/data", "user@127.0.0.1:{port}", 421),
     ("http://evil/data", "127.0.0.1:{port}", 421), ("http://evil.example:{port}/data", None, 421),
     ("https://127.0.0.1:{port}/data", "127.0.0.1:{port}", 421), ("/data", None, 400),
     ("data", "127.0.0.1:{port}", 400),
     ("/data", "127.0.0.1:{port}", 200), ("/data", "localhost:{port}", 200), ("/data", "LOCALHOST.:{port}", 200),
     ("http://127.0.0.1:{port}/data", None, 200), ("http://localhost:{port}/data?x=1", "evil.example", 200)],
)  # fmt: skip
def test_a_request_must_name_this_server(server, target, host, status):
    """A page on evil.example rebound to 127.0.0.1 sends `Host: evil.example`: it reads nothing."""
    port = server.server_address[1]
    header = "" if host is None else f"Host: {host.format(port=port)}\r\n"
    answer = raw(server, f"GET {target.format(port=port)} HTTP/1.1\r\n{header}\r\n".encode())
    assert status_and_headers(answer)[0] == status, answer[:200]
    assert (b'"instructions"' in answer) == (status == 200)


def test_two_host_headers_are_refused(server):
    port = server.server_address[1]
    answer = raw(server, f"GET /data HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil\r\n\r\n".encode())
    assert status_and_headers(answer)[0] == 400 and b"instructions" not in answer


@pytest.mark.parametrize(("request_line", "status"), [
    ("GET /nothing HTTP/1.1", 404), ("POST /data HTTP/1.1", 501), ("GET /data HTTP/1.1", 200),
    ("GET / HTTP/1.1", 200), ("GET /static/app.js HTTP/1.1", 200),
])  # fmt: skip
def test_every_response_carries_the_same_security_headers(server, request_line, status):
    port = server.server_address[1]
    code, headers = status_and_headers(raw(server, f"{request_line}\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()))
    assert code == status
    for name, value in SECURITY_HEADERS:
        assert headers.get(name) == value, (name, headers)
    assert "nosniff" in headers["X-Content-Type-Options"] and "default-src 'self'" in headers["Content-Security-Policy"]


def test_the_refusals_carry_them_too(server):
    for request in (b"GET /data HTTP/1.1\r\nHost: evil\r\n\r\n", b"GET /data HTTP/1.1\r\n\r\n"):
        _, headers = status_and_headers(raw(server, request))
        assert all(headers.get(name) == value for name, value in SECURITY_HEADERS), headers


def closed_after(server, send: list[bytes], pause: float) -> float:
    """Seconds until the server closes a connection that sends `send` one piece every `pause` seconds."""
    with socket.create_connection(server.server_address[:2], timeout=10) as connection:
        opened = time.monotonic()
        for piece in send:
            try:
                connection.sendall(piece)
            except OSError:  # closed while we were still sending
                return time.monotonic() - opened
            time.sleep(pause)
        while connection.recv(65536):  # whatever it answers (nothing, for a timeout), then the close
            pass
        return time.monotonic() - opened


@pytest.mark.parametrize(
    ("send", "pause"),
    [
        ([], 0),
        ([b"GET /data HTTP/1.1\r\nHo"], 0),  # idle, and a request that stops half-way
        ([b"G", b"E", b"T", b" ", b"/", b"d", b"a", b"t", b"a", b" ", b"H", b"T"], 0.1),  # a trickle: each byte in time
        ([bytes.fromhex("16030100a5010000a10303") + bytes(160)], 0),
    ],  # a TLS ClientHello: no line ever ends
    ids=["idle", "half a request", "slow trickle", "tls hello"],
)
def test_idle_and_slow_connections_are_closed_after_the_timeout(tmp_path, send, pause):
    data = tmp_path / "s.json"
    data.write_text("{}")
    server = start(data, request_seconds=0.5)
    try:
        assert 0.4 < closed_after(server, send, pause) < 2.0
        assert get(server, "/data")[0] == 200  # and the server still serves
    finally:
        server.shutdown()
        server.server_close()


def test_connections_beyond_the_cap_get_503_and_no_thread(tmp_path):
    data = tmp_path / "s.json"
    data.write_text("{}")
    server = start(data, request_seconds=1.5, max_connections=4)
    idle = []
    try:
        before = threading.active_count()
        idle = [socket.create_connection(server.server_address[:2]) for _ in range(4)]
        time.sleep(0.2)
        assert threading.active_count() == before + 4
        for _ in range(20):  # 20 more idle sockets: each is told at once, none holds a thread
            code, headers = status_and_headers(raw(server, b""))
            assert code == 503 and headers["X-Content-Type-Options"] == "nosniff"
        assert threading.active_count() == before + 4
        time.sleep(1.6)  # the four idle ones time out and free their places
        assert get(server, "/data")[0] == 200
    finally:
        for connection in idle:
            connection.close()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("port", ["80000", "-1", "65536"])
def test_a_port_out_of_range_is_a_one_line_usage_error(capsys, port):
    assert cli(["view", "--port", port, "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: --port {port}: a port is 0 to 65535 (0 picks a free one)"]


def test_a_bind_error_says_what_it_was(capsys):
    assert viewer_script(["--host", "192.0.2.1", "--port", "0", "--no-browser"]) == 1  # TEST-NET-1: not ours
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: cannot listen on 192.0.2.1:0: 192.0.2.1 is not an address of this machine; see --host"
    ]


def test_a_bind_to_every_interface_warns_and_still_checks_host(tmp_path):
    data = tmp_path / "s.json"
    data.write_text('{"instructions": [], "tensors": []}')
    command = [
        sys.executable,
        "-m",
        "furiosa_opt.cli.view",
        str(data),
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--no-browser",
    ]
    viewer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+)/", viewer.stdout.readline())[1])
        warning = viewer.stderr.readline()
        assert warning.startswith("warning: listening on 0.0.0.0, every network interface: anyone who can reach")
        assert "s.json" in warning and "--host 127.0.0.1" in warning
        server = type("Bound", (), {"server_address": ("127.0.0.1", port)})
        assert (
            status_and_headers(raw(server, f"GET /data HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()))[0] == 200
        )
        assert status_and_headers(raw(server, f"GET /data HTTP/1.1\r\nHost: evil:{port}\r\n\r\n".encode()))[0] == 421
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)


def test_the_loopback_default_does_not_warn(tmp_path, capsys):
    server = make_server(None, port=0)
    try:
        assert url_of(server).startswith("http://127.0.0.1:")
    finally:
        server.server_close()


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status)[1]) / 1024


def test_concurrent_downloads_of_a_large_schedule_stay_small(tmp_path):
    """Six clients fetch a 128 MB schedule at once from a viewer in its own process; its peak resident
    memory (VmHWM, measured here) stays under 200 MB: /data is streamed, not read whole per request."""
    big = tmp_path / "big.schedule.json"
    padding = "x" * 900
    with big.open("w") as out:
        out.write('{"format": "furiosa-opt-schedule", "tensors": [], "instructions": [')
        for start in range(0, 140_000, 10_000):
            out.write(",".join(
                f'{{"index": {i}, "tpe": "Main", "contexts": ["MainContext"], "lifetime": {{"begin": {i}, '
                f'"end": {i + 1}}}, "description": "{padding} --> k.py:{i}"}}' for i in range(start, start + 10_000)
            ) + ("," if start + 10_000 < 140_000 else ""))  # fmt: skip
        out.write("]}")
    size = big.stat().st_size
    assert size > 128_000_000
    with big.open() as handle:  # a real schedule, not just bytes
        assert json.load(handle)["instructions"][-1]["index"] == 139_999
    viewer = subprocess.Popen([sys.executable, "-m", "furiosa_opt.cli.view", str(big), "--port", "0", "--no-browser"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        port = int(re.search(r":(\d+)/", viewer.stdout.readline())[1])
        before = peak_rss_mb(viewer.pid)
        received, ready = [], threading.Barrier(6)

        def download() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            ready.wait()
            connection.request("GET", "/data")
            response, total = connection.getresponse(), 0
            while chunk := response.read(1 << 20):
                total += len(chunk)
            received.append((response.status, total))
            connection.close()

        clients = [threading.Thread(target=download) for _ in range(6)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=120)
        peak = peak_rss_mb(viewer.pid)
        print(f"\nviewer peak RSS {peak:.1f} MB ({before:.1f} MB before) for 6 x {size / 1e6:.0f} MB downloads")
        assert received == [(200, size)] * 6
        assert peak < 200, f"the viewer's peak resident memory was {peak:.0f} MB"
    finally:
        viewer.terminate()
        viewer.wait(timeout=10)
