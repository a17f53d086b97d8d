"""The viewer server serves its packaged assets and the one given file, nothing else, on loopback."""

import http.client
import socket
import threading

import pytest

from furiosa_opt.cli.main import main as cli
from furiosa_opt.cli.view import main as viewer_script
from furiosa_opt.viewer.server import DEFAULT_HOST, DEFAULT_PORT, make_server


@pytest.fixture
def server(tmp_path):
    data = tmp_path / "s.json"
    data.write_text('{"instructions": [], "tensors": []}')
    server = make_server(data, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
