"""docs/api.md, "Running", standalone: what only a real server shows. The
app under waitress in this process, and serve.py as a child process."""
from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lint_exchange
from helpers import ADA, ROOT, Served, call, race


def test_head_over_the_wire_has_get_headers_and_no_body(server):
    call(server, "POST", "/users", ADA)
    status, get_headers, get_body = call(server, "GET", "/users/1")
    conn = http.client.HTTPConnection(*server, timeout=30)
    conn.request("HEAD", "/users/1")
    head = conn.getresponse()
    assert head.status == 200
    assert head.read() == b""
    assert head.headers["Content-Length"] == str(len(get_body))
    assert head.headers["ETag"] == get_headers["ETag"]
    # The connection is still in step: a HEAD sent no stray body.
    conn.request("GET", "/users/1")
    assert json.loads(conn.getresponse().read())["id"] == 1
    conn.close()


def test_a_chunked_body_over_the_limit_is_413(server):
    def chunks():
        for _ in range(100):
            yield b"x" * 1024      # 100 KiB, no Content-Length
    conn = http.client.HTTPConnection(*server, timeout=30)
    conn.request("POST", "/users", body=chunks(), encode_chunked=True,
                 headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    response = conn.getresponse()
    assert response.status == 413
    assert response.headers["Content-Type"] == "application/problem+json"
    assert json.loads(response.read())["status"] == 413
    conn.close()
    assert call(server, "GET", "/users")[2] == b"[]"


def test_a_chunked_body_under_the_limit_creates(server):
    body = json.dumps(ADA).encode()
    conn = http.client.HTTPConnection(*server, timeout=30)
    conn.request("POST", "/users", body=iter([body[:10], body[10:]]), encode_chunked=True,
                 headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 201
    conn.close()


def test_several_requests_share_one_keep_alive_connection(server):
    conn = http.client.HTTPConnection(*server, timeout=30)
    statuses, sockets = [], set()
    for i in range(5):
        conn.request("POST", "/users", body=json.dumps({"name": "U", "email": f"u{i}@example.org"}),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
        sockets.add(id(conn.sock))
        conn.request("GET", f"/users/{i + 1}")
        response = conn.getresponse()
        statuses.append(response.status)
        assert json.loads(response.read())["email"] == f"u{i}@example.org"
        sockets.add(id(conn.sock))
    conn.request("GET", "/nowhere")
    response = conn.getresponse()
    response.read()
    assert response.status == 404
    assert statuses == [201, 200] * 5
    assert len(sockets) == 1 and conn.sock is not None
    conn.close()


def test_the_same_email_raced_through_server_threads_is_created_once(server):
    statuses = race(16, lambda i: call(server, "POST", "/users",
                                       {"name": f"U{i}", "email": "same@example.org"})[0])
    assert sorted(statuses) == [201] + [409] * 15
    assert len(json.loads(call(server, "GET", "/users")[2])) == 1


def test_the_same_if_match_raced_through_server_threads_wins_once(server):
    _, headers, _ = call(server, "POST", "/users", ADA)
    tag = headers["ETag"]
    statuses = race(16, lambda i: call(server, "PATCH", "/users/1", {"name": f"N{i}"},
                                       {"If-Match": tag})[0])
    assert sorted(statuses) == [200] + [412] * 15


# -- serve.py --------------------------------------------------------------

def test_serve_py_prints_its_url_and_storage_and_stops_on_sigterm(tmp_path):
    served = Served(cwd=tmp_path)
    assert served.storage == "sqlite:///users.db" and served.prefix == "/"
    assert call(served.address, "POST", "/users", ADA)[0] == 201
    assert served.stop(signal.SIGTERM) == 0
    assert (tmp_path / "users.db").exists()     # the default: users.db here


def test_serve_py_stops_on_sigint(tmp_path):
    served = Served("--storage", "memory://", cwd=tmp_path)
    assert call(served.address, "GET", "/users")[0] == 200
    assert served.stop(signal.SIGINT) == 0


def test_serve_py_options(tmp_path):
    served = Served("--storage", "sqlite:///data.db", "--prefix", "/v1", "--threads", "2",
                    "--max-body-size", "100", "--host", "127.0.0.1", cwd=tmp_path)
    try:
        assert served.prefix == "/v1/" and served.storage == "sqlite:///data.db"
        status, headers, _ = call(served.address, "POST", "/v1/users", ADA)
        assert status == 201
        assert headers["Location"] == f"http://127.0.0.1:{served.address[1]}/v1/users/1"
        assert call(served.address, "GET", "/users/1")[0] == 404
        assert call(served.address, "POST", "/v1/users",
                    {"name": "x" * 200, "email": "a@b"})[0] == 413
    finally:
        assert served.stop() == 0
    assert (tmp_path / "data.db").exists()
    # The access log shows each path as the client sent it, prefix and all
    # (a line is written once its answer is sent, so two threads' may swap).
    logged = [line.split(" usersvc.access: ")[1].split()[:3]
              for line in served.log().splitlines() if "usersvc.access" in line]
    assert sorted(logged) == [["GET", "/users/1", "404"], ["POST", "/v1/users", "201"],
                              ["POST", "/v1/users", "413"]]


def test_serve_py_refuses_a_bad_storage_url(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--storage", "nosuch://"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "cannot open storage nosuch://" in result.stderr


def test_the_usersvc_command_is_the_same_server(tmp_path):
    script = Path(sys.executable).with_name("usersvc")
    if not script.exists():
        pytest.skip("the usersvc console script is not installed in this environment")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "--max-body-size" in result.stdout and "--prefix" in result.stdout


def test_two_server_processes_on_one_file_race_correctly(tmp_path):
    servers = [Served("--storage", "sqlite:///shared.db", cwd=tmp_path) for _ in range(2)]
    try:
        address = [s.address for s in servers]
        statuses = race(16, lambda i: call(address[i % 2], "POST", "/users",
                                           {"name": f"U{i}", "email": "same@example.org"})[0])
        assert sorted(statuses) == [201] + [409] * 15
        user_id = json.loads(call(address[0], "GET", "/users")[2])[0]["id"]
        _, headers, _ = call(address[1], "GET", f"/users/{user_id}")
        statuses = race(16, lambda i: call(address[i % 2], "PUT", f"/users/{user_id}",
                                           {"name": f"N{i}", "email": "same@example.org"},
                                           {"If-Match": headers["ETag"]})[0])
        assert sorted(statuses) == [200] + [412] * 15
        # What one process wrote, the other reads.
        assert call(address[0], "GET", f"/users/{user_id}")[2] == \
            call(address[1], "GET", f"/users/{user_id}")[2]
    finally:
        assert [s.stop() for s in servers] == [0, 0]


def test_responses_on_the_wire_pass_httplint_with_no_exemption(server):
    """What the app leaves to the server (Date, on 304s too) is there."""
    exchanges = [("POST", "/users", ADA, {}), ("GET", "/users/1", None, {}),
                 ("GET", "/users", None, {}), ("HEAD", "/users/1", None, {}),
                 ("GET", "/users/1", None, {"If-None-Match": '"1-1"'}),
                 ("GET", "/users/99", None, {}), ("DELETE", "/users/1", None, {}),
                 ("GET", "/", None, {"Accept": "application/xml"})]
    for method, path, body, headers in exchanges:
        conn = http.client.HTTPConnection(*server, timeout=30)
        sent = dict(headers, **({"Content-Type": "application/json"} if body else {}))
        conn.request(method, path, body=json.dumps(body) if body else None, headers=sent)
        response = conn.getresponse()
        content = response.read()
        conn.close()
        notes = lint_exchange(method, path, list(sent.items()),
                              f"{response.status} {response.reason}", response.getheaders(),
                              content)
        assert notes == [], (method, path, response.status, notes)


def test_the_longest_documented_query_is_answered_and_past_the_cap_is_a_431_problem(server):
    """An ``in`` of 100 e-mail addresses of 254 characters, each with
    characters a URL must escape, is within the documented limits, so the
    server takes its request line (it was waitress's text/plain 431). Past
    the cap (16 KiB more than that query), the server's own 431 is a
    problem document too, in JSON (what was refused holds the Accept)."""
    from urllib.parse import quote

    from usersvc.fields import email
    addresses = [email(f"{i:03d}" + "%&+=#/"[i % 6] * 147 + "@" + "d" * 63 + "." + "e" * 39)
                 for i in range(100)]
    assert {len(a) for a in addresses} == {254}
    query = "email%5Bin%5D=" + ",".join(quote(a, safe="") for a in addresses)
    assert len(query) > 50_000
    status, headers, body = call(server, "GET", f"/users?{query}&q={quote('é' * 100)}")
    assert status == 200 and json.loads(body) == [], body[:200]
    big = {f"X-H{i}": "h" * 100 for i in range(2000)}         # 220 KB
    status, headers, body = call(server, "GET", "/users", headers={"Accept": "application/xml",
                                                                    **big})
    assert status == 431 and headers["Content-Type"] == "application/problem+json", body[:200]
    assert headers["X-Content-Type-Options"] == "nosniff"
    problem = json.loads(body)
    assert problem["status"] == 431 and problem["title"] == "Request Header Fields Too Large"
