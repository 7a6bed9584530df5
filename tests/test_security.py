"""Bearer tokens (RFC 6750), the access log, request ids, /healthz and the
standalone server's safe defaults: docs/security.md's claims, each tested."""
from __future__ import annotations

import contextlib
import hmac
import importlib.metadata
import io
import json
import logging
import os
import re
import subprocess
import sys
import threading

import pytest
from conftest import Client, problem
from helpers import ROOT, Served, call
from openapi_spec_validator import validate
from webob import Request

import usersvc
from usersvc import USER, Mount, make_app
from usersvc.features.auth import Tokens, load_tokens
from usersvc.problems import Problem
from usersvc.request import Request as ServerRequest
from usersvc.serving.ops import MAX_WAITING_LINES, AccessLog, loggable_target
from usersvc.storage import StoreUnavailable

READER, WRITER = "reader-token-0123456789", "writer-token-9876543210"
TOKENS = {READER: "read", WRITER: "write"}
ADA = {"name": "Ada Lovelace", "email": "ada@example.org"}


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def secured(store):
    return Client(make_app(store, tokens=TOKENS))


# -- tokens through the app --------------------------------------------------

@pytest.mark.parametrize("method, path", [("GET", "/users"), ("POST", "/users"), ("GET", "/"),
                                          ("GET", "/openapi.json"), ("OPTIONS", "/users"),
                                          ("GET", "/nowhere"), ("DELETE", "/users/1")])
def test_without_a_token_every_path_is_401_with_a_bearer_challenge(secured, method, path):
    response = secured.request(method, path, json_body=ADA if method == "POST" else None)
    body = problem(response, 401)
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="usersvc"'
    assert "token" in body["detail"]
    assert secured.get("/users", headers=bearer(READER)).json == []


@pytest.mark.parametrize("authorization", ["Basic dXNlcjpwYXNz", "Bearer", "Token " + WRITER, ""])
def test_other_schemes_and_no_credentials_are_401_without_an_error_code(secured, authorization):
    response = secured.get("/users", headers={"Authorization": authorization})
    problem(response, 401)
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="usersvc"'


def test_an_unknown_token_is_401_invalid_token_and_never_echoed(secured):
    response = secured.get("/users", headers=bearer("not-a-known-token-at-all"))
    problem(response, 401)
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="usersvc", error="invalid_token"'
    assert b"not-a-known-token" not in response.body


@pytest.mark.parametrize("token",
                         ["a,b", "tok en", "ä-token-0123456789", "x" * 10 + "@" + "y" * 10])
def test_a_malformed_token_is_400_invalid_request(secured, token):
    response = secured.get("/users", headers={"Authorization": f"Bearer {token}"})
    if response.status_code == 401:     # a space ends the credentials: no token at all
        assert token == "tok en"
        return
    problem(response, 400)
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="usersvc", error="invalid_request"'


def test_a_read_token_reads_and_a_write_token_writes(secured):
    created = secured.post("/users", json_body=ADA, headers=bearer(WRITER))
    assert created.status_code == 201
    assert secured.get("/users/1", headers=bearer(READER)).json["name"] == "Ada Lovelace"
    assert secured.request("HEAD", "/users/1", headers=bearer(READER)).status_code == 200
    assert secured.request("OPTIONS", "/users/1", headers=bearer(READER)).status_code == 204
    assert secured.put("/users/1", json_body=ADA, headers=bearer(WRITER)).status_code == 200
    assert secured.delete("/users/1", headers=bearer(WRITER)).status_code == 204


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_read_token_on_a_write_is_403_insufficient_scope_and_changes_nothing(secured, method):
    secured.post("/users", json_body=ADA, headers=bearer(WRITER))
    path = "/users" if method == "POST" else "/users/1"
    response = secured.request(method, path, json_body={"name": "X", "email": "x@example.org"},
                               headers=bearer(READER))
    problem(response, 403)
    assert response.headers["WWW-Authenticate"] == \
        'Bearer realm="usersvc", error="insufficient_scope", scope="write"'
    assert secured.get("/users", headers=bearer(READER)).json == [{"id": 1, **ADA}]


def test_the_token_is_checked_before_the_body_is_read(store):
    app = make_app(store, tokens=TOKENS, max_body_size=10)
    response = Client(app).post("/users", body=b"x" * 100, content_type="application/json")
    problem(response, 401)          # not 413: an unknown client learns nothing more


def test_healthz_needs_no_token(secured):
    assert secured.get("/healthz").json == {"status": "ok", "version": usersvc.__version__}


def test_tokens_are_compared_with_every_known_token_in_constant_time(monkeypatch):
    tokens = Tokens({f"token-number-{i:04d}-abcdef": "read" for i in range(5)})
    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append(1) or real(a, b))
    for token in ["token-number-0000-abcdef", "token-number-0004-abcdef", "unknown-token-abcdefgh"]:
        calls.clear()
        with contextlib.suppress(Problem):     # the unknown one is refused, after all five
            tokens.check(ServerRequest({"HTTP_AUTHORIZATION": f"Bearer {token}",
                                        "REQUEST_METHOD": "GET"}))
        assert len(calls) == 5      # the first, the last and none alike: every digest


@pytest.mark.parametrize("tokens, message", [
    ({}, "no tokens"), ({"short": "read"}, "16 or more"), ({"x" * 20: "admin"}, "read or write"),
    ({"has space in it 0123": "read"}, "16 or more"),
])
def test_bad_token_sets_are_refused(tokens, message):
    with pytest.raises(ValueError, match=message):
        Tokens(tokens)


def test_a_tokens_file_takes_comments_and_names_the_bad_line_not_the_token(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# who may do what\n{READER} read\n\n{WRITER}   write  # the deploy job\n")
    tokens = load_tokens(path)
    tokens.check(ServerRequest({"HTTP_AUTHORIZATION": f"Bearer {WRITER}",
                                "REQUEST_METHOD": "POST"}))
    with pytest.raises(Problem) as refused:
        tokens.check(ServerRequest({"HTTP_AUTHORIZATION": f"Bearer {READER}",
                                    "REQUEST_METHOD": "POST"}))
    assert refused.value.status == 403
    path.write_text(f"{READER} read\nsupersecret-but-short admin\n")
    with pytest.raises(ValueError) as info:
        load_tokens(path)
    assert "line 2" in str(info.value) and "supersecret" not in str(info.value)


def test_the_openapi_document_declares_the_scheme_when_tokens_are_on(secured, client):
    document = secured.get("/openapi.json", headers=bearer(READER)).json
    validate(document)
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": document["components"]["securitySchemes"]
        ["bearer"]["description"]}
    assert document["security"] == [{"bearer": []}]
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert "403" in document["paths"]["/users"]["post"]["responses"]
    assert "securitySchemes" not in client.get("/openapi.json").json["components"]


# -- /healthz ------------------------------------------------------------------

def test_healthz_is_200_when_the_store_answers(client):
    response = client.get("/healthz")
    # The release serving, from the package's metadata (what --version prints).
    version = importlib.metadata.version("usersvc")
    assert response.json == {"status": "ok", "version": version}
    assert response.headers["Cache-Control"] == "no-store"
    xml = client.get("/healthz", headers={"Accept": "application/xml"})
    assert xml.body == f"<health><status>ok</status><version>{version}</version></health>".encode()


class DownStore:
    """The users' store, whose every call fails, as one whose server is gone."""

    schema = USER

    def __init__(self, error):
        self.error = error

    def __getattr__(self, name):
        if name == "schemas":       # one collection's records, not a whole store
            raise AttributeError(name)

        def fail(*args, **kwargs):
            raise self.error
        return fail


@pytest.mark.parametrize("error", [StoreUnavailable("gone"), OSError("disk"), RuntimeError("bug")])
def test_healthz_is_503_when_the_store_does_not_answer(error, caplog):
    response = Client(make_app(DownStore(error))).get("/healthz")
    problem(response, 503)
    assert response.headers["Retry-After"] == "1"
    assert response.headers["Cache-Control"] == "no-store"
    assert "does not answer" in caplog.text


# -- the access log and request ids ------------------------------------------

def logged(app, path, **kw):
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("test.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        # Called as a server would: iterate the body, then close it.
        response = Request.blank(path, **kw).get_response(AccessLog(app, logger))
        body = b"".join(response.app_iter)
        response.app_iter.close()
        assert len(body) == int(response.headers.get("Content-Length", len(body)))
    finally:
        logger.removeHandler(handler)
    return response, [r.getMessage() for r in records]


def test_one_line_per_request_with_method_path_status_bytes_duration_and_id(app):
    response, lines = logged(app, "/users?limit=5", headers={"X-Request-ID": "req-42"})
    assert response.headers["X-Request-ID"] == "req-42"
    method, target, status, size, duration, rid = lines[0].split(" ")
    assert len(lines) == 1
    assert (method, target, status, size, rid) == ("GET", "/users?limit=5", "200", "2", "req-42")
    assert duration.endswith("ms") and float(duration[:-2]) >= 0


@pytest.mark.parametrize("given", ["", "a" * 65, "bad id", "x\u00e9", "<script>", "a\tb"])
def test_an_insane_request_id_is_replaced_by_a_new_one(app, given):
    response, lines = logged(app, "/users", headers={"X-Request-ID": given})
    rid = response.headers["X-Request-ID"]
    assert rid != given and len(rid) == 32 and lines[0].endswith(rid)


def test_request_ids_are_new_for_each_request(app):
    ids = {logged(app, "/users")[0].headers["X-Request-ID"] for _ in range(5)}
    assert len(ids) == 5


def test_a_forked_process_draws_request_ids_of_its_own(app):
    """Workers forked after --preload share the app: not its ids."""
    logged_app = AccessLog(app)
    first = Request.blank("/users").get_response(logged_app).headers["X-Request-ID"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:        # the child: one id, to the parent
        os.write(write, Request.blank("/users").get_response(logged_app)
                 .headers["X-Request-ID"].encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    parent = Request.blank("/users").get_response(logged_app).headers["X-Request-ID"]
    assert child[:16] != first[:16] and parent[:16] == first[:16] and len(child) == 32


def test_request_ids_come_with_the_access_log_and_only_with_it(app):
    """As the README says: behind the log, every answer carries the log's
    id, once (a Mount's own 404 too); without it, none, so that a host's
    own request ids are never doubled."""
    response, lines = logged(app, "/users", headers={"X-Request-ID": "logged-1"})
    assert response.headers.getall("X-Request-ID") == ["logged-1"] and lines[0].endswith("logged-1")
    for path in ("/users/999", "/nowhere", "/healthz"):
        assert len(logged(app, path)[0].headers.getall("X-Request-ID")) == 1
    assert len(logged(Mount("/v1", app), "/elsewhere")[0].headers.getall("X-Request-ID")) == 1
    assert "X-Request-ID" not in Request.blank("/users").get_response(app).headers


def test_the_log_never_holds_an_email_or_a_token(app):
    _, lines = logged(app, "/users?email=ada%40example.org&limit=5&access_token=secret123",
                      headers={"Authorization": f"Bearer {WRITER}"})
    assert lines[0].split(" ")[1] == "/users?email=***&limit=5&access_token=***"
    _, lines = logged(app, "/users", method="POST", body=json.dumps(ADA).encode(),
                      content_type="application/json",
                      headers={"Authorization": f"Bearer {WRITER}"})
    assert "ada@" not in lines[0] and WRITER not in lines[0]


def test_a_stream_gets_the_lines_in_order_in_the_servers_format_and_all_of_them_on_close(app):
    stream = io.StringIO()
    threads_before = _log_threads()
    # A long delay: the lines wait for close(), which serve.py calls on its way out.
    logged_app = AccessLog(app, stream=stream, delay=3600)
    for i in range(3):
        response = Request.blank(f"/users?limit={i + 1}",
                                 headers={"X-Request-ID": f"r{i}"}).get_response(logged_app)
        assert response.status_code == 200
        b"".join(response.app_iter)         # as a server does: send the body,
        response.app_iter.close()           # then close it
    logged_app.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(" ")[-1] for line in lines] == ["r0", "r1", "r2"]
    assert _log_threads() == threads_before                  # its writer thread has ended
    Request.blank("/users?limit=9",
                  headers={"X-Request-ID": "r9"}).get_response(logged_app).app_iter.close()
    assert stream.getvalue().splitlines()[-1].endswith(" r9")      # after close: written at once
    for i, line in enumerate(lines):
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO usersvc.access: "
                            rf"GET /users\?limit={i + 1} 200 2 \d+\.\dms r{i}", line), line


def test_lines_that_pile_up_are_written_by_the_requests_themselves(app):
    stream = io.StringIO()
    logged_app = AccessLog(app, stream=stream, delay=3600)
    environ = Request.blank("/healthz").environ
    for _ in range(MAX_WAITING_LINES):
        body = logged_app(dict(environ), lambda status, headers, exc_info=None: None)
        body.close()
    assert len(stream.getvalue().splitlines()) == MAX_WAITING_LINES     # before any close()
    logged_app.close()


def _log_threads():
    return sum(t.name == "usersvc-access-log" for t in threading.enumerate())


@pytest.mark.parametrize("path, query, expected", [
    ("/users/\n200 OK", "", "/users/%0A200%20OK"),
    ("/users", "email=a%40b&EMAIL=c", "/users?email=***&EMAIL=***"),
    ("/users", "limit=1\r\ny", "/users?limit=1%0D%0Ay"),
    ("/books", "q=Dune&sort=-title&isbn=0441&cursor=eyJ&wait=3",
     "/books?q=***&sort=-title&isbn=***&cursor=***&wait=3"),
    ("/\xff", "", "/%FF"),
])
def test_log_lines_cannot_be_forged_or_broken(path, query, expected):
    assert loggable_target(ServerRequest({"PATH_INFO": path, "QUERY_STRING": query})) == expected


# -- the standalone server ------------------------------------------------------

def test_serve_py_with_tokens_over_http_and_a_log_without_secrets(tmp_path):
    (tmp_path / "tokens").write_text(f"{READER} read\n{WRITER} write\n")
    served = Served("--storage", "sqlite:///users.db", "--tokens-file", "tokens", cwd=tmp_path)
    try:
        status, headers, _ = call(served.address, "GET", "/users")
        assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="usersvc"'
        assert call(served.address, "POST", "/users", ADA, bearer(READER))[0] == 403
        status, headers, _ = call(served.address, "POST", "/users", ADA,
                                  {**bearer(WRITER), "X-Request-ID": "deploy-7"})
        assert status == 201 and headers["X-Request-ID"] == "deploy-7"
        assert call(served.address, "GET", "/users?email=ada@example.org", None,
                    bearer(READER))[0] == 200
        assert call(served.address, "GET", "/healthz")[0] == 200
    finally:
        assert served.stop() == 0
    log = served.log()
    assert "POST /users 201 " in log and " deploy-7" in log
    assert "GET /users?email=*** 200 " in log
    for secret in (READER, WRITER, "ada@example.org", "ada%40example.org"):
        assert secret not in log


def test_serve_py_refuses_a_bad_tokens_file_naming_the_line(tmp_path):
    (tmp_path / "tokens").write_text(f"{READER} read\nsecret-on-line-two-0123 superuser\n")
    result = subprocess.run([sys.executable, str(ROOT / "serve.py"), "--tokens-file", "tokens",
                             "--storage", "memory://"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2
    assert "line 2" in result.stderr and "secret-on-line-two" not in result.stderr


def test_serve_py_warns_when_it_listens_beyond_loopback_without_tokens(tmp_path):
    process = subprocess.Popen([sys.executable, str(ROOT / "serve.py"), "--host", "0.0.0.0",
                                "--port", "0", "--storage", "memory://"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("usersvc serving http://0.0.0.0:")
    finally:
        process.terminate()
        _, err = process.communicate(timeout=15)
    assert "without --tokens-file: anyone who can reach this address" in err


def test_serve_py_on_loopback_does_not_warn(tmp_path):
    served = Served("--storage", "memory://", cwd=tmp_path)
    assert served.stop() == 0
    assert "without --tokens-file" not in served.log()
