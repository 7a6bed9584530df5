"""docs/deploying.md, shown: docs/nginx-usersvc.conf in front of two
serve.py processes on one database, as the document says to run them.

Needs nginx on PATH (skipped, saying so, where it is missing; ``.ci/run``
installs it and sets ``USERSVC_TEST_NGINX_REQUIRED=1``, which makes a missing
nginx a failure); uses PostgreSQL when ``USERSVC_TEST_POSTGRES_URL`` is set,
and a shared SQLite file otherwise (the nginx side is the same).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time

import pytest
from conftest import POSTGRES_URL
from helpers import ROOT, Served, StreamOverHTTP, call, free_port, link_to, seq_of

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if shutil.which("/usr/sbin/nginx") else None)
if NGINX is None:
    if os.environ.get("USERSVC_TEST_NGINX_REQUIRED") == "1":
        raise RuntimeError("the nginx tests are required here, but nginx is not installed")
    pytest.skip("nginx is not installed (apt-get install nginx-light)", allow_module_level=True)


@pytest.fixture
def storage(request, tmp_path):
    if POSTGRES_URL:
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path}/users.db"


@pytest.fixture
def deployment(storage, tmp_path):
    """(nginx address, [backends]) from the documented configuration."""
    backends = [Served("--storage", storage, "--trusted-proxy", "127.0.0.1", cwd=tmp_path)
                for _ in range(2)]
    port = free_port()
    site = (ROOT / "docs" / "nginx-usersvc.conf").read_text()
    site = site.replace("127.0.0.1:8081", f"127.0.0.1:{backends[0].address[1]}")
    site = site.replace("127.0.0.1:8082", f"127.0.0.1:{backends[1].address[1]}")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(
        "daemon off; master_process off; pid nginx.pid; error_log stderr warn;\n"
        "events {}\n"
        f"http {{ access_log off; include {tmp_path}/site.conf; }}\n")
    nginx = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                             stderr=subprocess.PIPE, text=True)
    address = ("127.0.0.1", port)
    for _ in range(100):
        try:
            socket.create_connection(address, timeout=1).close()
            break
        except OSError:
            assert nginx.poll() is None, nginx.stderr.read()
            time.sleep(0.05)
    try:
        yield address, backends
    finally:
        nginx.terminate()
        nginx.wait(timeout=15)
        nginx.stderr.close()
        for backend in backends:
            if backend.process.poll() is None:
                backend.stop()


def test_through_nginx_urls_name_the_proxy_and_both_backends_serve(deployment):
    address, backends = deployment
    host = f"{address[0]}:{address[1]}"
    status, headers, body = call(address, "POST", "/users",
                                 {"name": "Ada", "email": "ada@example.org"})
    assert status == 201
    user = json.loads(body)
    assert headers["Location"] == f"http://{host}/users/{user['id']}"
    for i in range(6):
        call(address, "POST", "/users", {"name": f"U{i}", "email": f"u{i}@example.org"})
    status, headers, _ = call(address, "GET", "/users?limit=2")
    assert link_to(headers) == f"http://{host}/users?after=2&limit=2"
    # What went through nginx is in the one database both backends share.
    assert [call(b.address, "GET", f"/users/{user['id']}")[0] for b in backends] == [200, 200]


def test_a_forwarded_https_scheme_reaches_the_urls(deployment):
    address, _ = deployment
    status, headers, _ = call(address, "POST", "/users",
                              {"name": "Ada", "email": "ada@example.org"},
                              {"X-Forwarded-Proto": "https"})
    # nginx sets the header from its own $scheme (http here): a client cannot.
    assert status == 201 and headers["Location"].startswith("http://")


def test_requests_go_on_when_one_backend_stops(deployment):
    address, backends = deployment
    status, headers, body = call(address, "POST", "/users",
                                 {"name": "Ada", "email": "ada@example.org"})
    path = f"/users/{json.loads(body)['id']}"
    assert backends[0].stop() == 0
    assert [call(address, "GET", path)[0] for _ in range(4)] == [200] * 4
    # A refused connection means nothing was sent: nginx tries the other
    # backend even for a POST.
    statuses = [call(address, "POST", "/users", {"name": "B", "email": f"b{i}@example.org"})[0]
                for i in range(4)]
    assert statuses == [201] * 4


def test_a_stream_of_changes_through_nginx_gets_each_write_as_it_is_made(deployment):
    """nginx buffers a response unless told not to: the stream's
    ``X-Accel-Buffering: no`` tells it, so each event passes as it comes
    (buffered, none would come before the stream's end, minutes later)."""
    address, _ = deployment
    stream = StreamOverHTTP(address, "/users/changes?after=0")
    assert stream.response.status == 200
    first = stream.next()
    assert first["retry"] == "2000" and seq_of(first["id"]) == 0 and "data" not in first
    for name in ("Ada", "Bob", "Cy"):       # through nginx, to either backend
        assert call(address, "POST", "/users",
                    {"name": name, "email": f"{name.lower()}@example.org"})[0] == 201
        [(_, kind, data)] = stream.changes(1)
        assert (kind, data["user"]["name"]) == ("change", name)
    stream.close()


def test_the_backend_believes_forwarded_headers_only_from_its_trusted_proxy(tmp_path):
    trusting = Served("--storage", "memory://", "--trusted-proxy", "127.0.0.1", cwd=tmp_path)
    plain = Served("--storage", "memory://", cwd=tmp_path)
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "api.example.org"}
    try:
        _, headers, _ = call(trusting.address, "POST", "/users",
                             {"name": "A", "email": "a@example.org"}, forwarded)
        assert headers["Location"] == "https://api.example.org/users/1"
        _, headers, _ = call(plain.address, "POST", "/users",
                             {"name": "A", "email": "a@example.org"}, forwarded)
        assert headers["Location"] == f"http://127.0.0.1:{plain.address[1]}/users/1"
    finally:
        assert [trusting.stop(), plain.stop()] == [0, 0]
