"""docs/api.md, "Pages of other sites" (usersvc/app.py's protection, usersvc/features/cors.py): the
cross-origin protection's every branch (the core's: on the plain core too),
the writes a page can send without a preflight, the origins allowed to write
through ``app.allowed_origins``, CORS for them, and nosniff on every answer.

The requests carry the headers a browser sends for each kind of request
(Fetch Metadata, Origin); that Chromium really sends them so is for the
browser tests (docs/api.md says what is tested where).
"""
from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from books import BOOKS
from conftest import Client, problem, snapshot

from usersvc import USER, make_app

ROOT_DIR = Path(__file__).resolve().parent.parent
ADA = json.dumps({"name": "Ada Lovelace", "email": "ada@example.org"})
SITE = "http://127.0.0.1:8080"          # the service's own origin (Host: 127.0.0.1:8080)
OTHER = "https://evil.example"
FRONT = "https://app.example"           # an origin CORS allows below


def send(client, method, path="/users", *, body=ADA, content_type="application/json", **headers):
    headers = {"Host": "127.0.0.1:8080", **{k.replace("_", "-"): v for k, v in headers.items()}}
    return client.request(method, path, body=body, content_type=content_type, headers=headers)


@pytest.fixture
def cors_client():
    app = make_app("memory://", cors_origins=[FRONT])
    yield Client(app)
    app.close()


# -- the rule, branch by branch ----------------------------------------------

@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
@pytest.mark.parametrize("site", ["cross-site", "same-site"])
@pytest.mark.parametrize("method, path", [("POST", "/users"), ("PUT", "/users/1"),
                                          ("PATCH", "/users/1"), ("DELETE", "/users/1")])
def test_a_write_from_another_site_is_403_and_changes_nothing(client, site, method, path):
    client.create()
    before = snapshot(client)
    body = problem(send(client, method, path, Sec_Fetch_Site=site, Origin=OTHER), 403)
    assert "another site" in body["detail"]
    assert snapshot(client) == before


def test_the_403_names_no_collection_of_its_own(store_url):
    app = make_app(store_url, collections=(USER, BOOKS))
    try:
        library = Client(app)
        body = problem(
            send(library, "POST", "/books", Sec_Fetch_Site="cross-site", Origin=OTHER), 403)
        assert body["detail"] == ("A page of another site cannot make changes here "
                                  "(cross-origin request refused).")
    finally:
        app.close()


@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_a_write_from_the_same_origin_or_the_user_passes(client, site):
    assert send(client, "POST", Sec_Fetch_Site=site, Origin=SITE).status_code == 201


@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
def test_without_fetch_metadata_an_origin_of_another_host_is_403(client):
    problem(send(client, "POST", Origin=OTHER), 403)
    problem(send(client, "POST", Origin="http://127.0.0.1:9999"), 403)     # another port
    assert snapshot(client) == []


@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
@pytest.mark.parametrize("origin, host", [(SITE, "127.0.0.1:8080"),
                                          ("http://example.org", "example.org:80"),
                                          ("https://EXAMPLE.org:443", "example.org")])
def test_without_fetch_metadata_an_origin_of_this_host_passes(client, origin, host):
    response = client.request("POST", "/users", body=ADA, content_type="application/json",
                              headers={"Host": host, "Origin": origin})
    assert response.status_code == 201


@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
def test_a_request_with_neither_header_passes(client):
    assert send(client, "POST").status_code == 201           # curl, another server


@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
def test_reads_from_another_site_are_not_refused(client):
    client.create()
    for method in ("GET", "HEAD", "OPTIONS"):
        response = send(client, method, "/users/1", body=None, content_type=None,
                        Sec_Fetch_Site="cross-site", Origin=OTHER)
        assert response.status_code in (200, 204), method


def test_an_allowed_origin_may_write(cors_client):
    assert send(cors_client, "POST", Sec_Fetch_Site="cross-site", Origin=FRONT).status_code == 201


class Partner:
    """A feature of one's own that lets one origin's pages write, without CORS."""

    name = "partner"

    def plug(self, app, storage, plugged):
        app.allowed_origins.add(FRONT)


def test_the_origins_allowed_to_write_come_through_one_hook(storage):
    """The protection is the core's and knows no CORS setting: the plain
    core refuses a cross-site write, and lets through the origins a feature
    adds to ``app.allowed_origins``: CORS's, or one of yours."""
    def post(features, email, **settings):
        client = Client(make_app(storage, features=features, **settings))
        body = json.dumps({"name": "Ada Lovelace", "email": email})
        return send(client, "POST", body=body, Sec_Fetch_Site="cross-site", Origin=FRONT)

    problem(post((), "plain@example.org"), 403)
    assert post(("cors",), "cors@example.org", cors_origins=[FRONT]).status_code == 201
    partnered = post((Partner(),), "partner@example.org")
    assert partnered.status_code == 201
    assert "Access-Control-Allow-Origin" not in partnered.headers     # (no CORS plugged in)
    assert [user["email"] for user in snapshot(Client(make_app(storage, features=())))] == [
        "cors@example.org", "partner@example.org"]


def test_the_check_comes_before_the_body_is_read():
    class Unreadable(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise AssertionError("the body was read")

    app = make_app("memory://")
    status = []
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/users", "HTTP_HOST": "127.0.0.1:8080",
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "50",
               "HTTP_SEC_FETCH_SITE": "cross-site", "HTTP_ORIGIN": OTHER,
               "wsgi.input": Unreadable(), "wsgi.url_scheme": "http",
               "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8080"}
    b"".join(app(environ, lambda s, h, e=None: status.append(s)))
    assert status == ["403 Forbidden"]


# -- what a page can send without asking first ---------------------------------

@pytest.mark.core       # the core's: on the plain core too (conftest.SERVED)
@pytest.mark.parametrize("way, content_type, body", [
    ("fetch no-cors, a Blob without a type", None, ADA),
    ("fetch no-cors, text/plain", "text/plain;charset=UTF-8", ADA),
    ("sendBeacon, a Blob without a type", None, ADA),
    ("an HTML form", "application/x-www-form-urlencoded", "name=Ada&email=ada%40example.org"),
    ("an HTML form, multipart", "multipart/form-data; boundary=x", "--x--"),
])
def test_every_write_a_page_can_send_without_a_preflight_creates_nothing(
        client, way, content_type, body):
    problem(send(client, "POST", body=body, content_type=content_type,
                 Sec_Fetch_Site="cross-site", Origin=OTHER), 403)
    # ... and from a client that says nothing of its origin, those types are 415s.
    problem(send(client, "POST", body=body, content_type=content_type), 415)
    assert snapshot(client) == []


# -- CORS -------------------------------------------------------------------------

def test_an_allowed_origin_reads_every_answer_with_the_headers_it_needs(cors_client):
    created = send(cors_client, "POST", Origin=FRONT)
    for response in (created, send(cors_client, "GET", "/users/1", body=None, content_type=None,
                                   Origin=FRONT),
                     send(cors_client, "GET", "/users/9", body=None, content_type=None,
                          Origin=FRONT)):
        assert response.headers["Access-Control-Allow-Origin"] == FRONT
        exposed = response.headers["Access-Control-Expose-Headers"]
        assert {"ETag", "Location", "Link", "Retry-After", "X-Total-Count"} <= set(
            exposed.split(", "))
        assert "Origin" in response.headers["Vary"] and "Accept" in response.headers["Vary"]
        assert "Access-Control-Allow-Credentials" not in response.headers


def test_another_origin_gets_no_cors_headers_but_the_same_vary(cors_client):
    response = send(cors_client, "GET", "/users", body=None, content_type=None, Origin=OTHER)
    assert not [h for h in response.headers if h.startswith("Access-Control-")]
    assert response.headers["Vary"] == "Accept, Prefer, Origin"


def test_without_cors_nothing_changes(client):
    response = send(client, "GET", "/users", body=None, content_type=None, Origin=FRONT)
    assert not [h for h in response.headers if h.startswith("Access-Control-")]
    assert "Origin" not in response.headers["Vary"]


def preflight(client, path, origin, method="PUT"):
    return client.request("OPTIONS", path, headers={
        "Host": "127.0.0.1:8080", "Origin": origin, "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type, if-match"})


def test_a_preflight_names_the_methods_headers_and_how_long_to_keep_them(cors_client):
    response = preflight(cors_client, "/users/1", FRONT)
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == FRONT
    assert response.headers["Access-Control-Allow-Methods"] == \
        "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
    allowed = set(response.headers["Access-Control-Allow-Headers"].split(", "))
    assert {"Content-Type", "If-Match", "If-None-Match", "Authorization", "Prefer",
            "Idempotency-Key", "Last-Event-ID"} <= allowed
    assert response.headers["Access-Control-Max-Age"] == "7200"


def test_a_preflight_is_answered_before_any_token_is_asked_for():
    app = make_app("memory://", cors_origins=[FRONT], tokens={"w" * 20: "write"})
    client = Client(app)
    response = preflight(client, "/users", FRONT, "POST")
    assert response.status_code == 204 and response.headers["Access-Control-Allow-Origin"] == FRONT
    problem(client.get("/users"), 401)                        # the real request still needs one


def test_a_preflight_from_another_origin_gets_no_permission(cors_client):
    response = preflight(cors_client, "/users/1", OTHER)
    assert response.status_code == 204
    assert not [h for h in response.headers if h.startswith("Access-Control-")]


def test_a_preflight_for_no_resource_is_404(cors_client):
    problem(preflight(cors_client, "/nothing", FRONT), 404)


def test_any_origin_is_allowed_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="usersvc"):
        client = Client(make_app("memory://", cors_origins=["*"]))
    assert "every origin" in caplog.text
    response = send(client, "POST", Sec_Fetch_Site="cross-site", Origin=OTHER)
    assert response.status_code == 201 and response.headers["Access-Control-Allow-Origin"] == OTHER


@pytest.mark.parametrize("origin", ["app.example", "https://app.example/path", "ftp://x", ""])
def test_a_malformed_origin_is_refused_at_start(origin, tmp_path):
    with pytest.raises(ValueError):
        make_app("memory://", cors_origins=[origin])
    result = subprocess.run([sys.executable, str(ROOT_DIR / "serve.py"), "--storage", "memory://",
                             "--cors-origin", origin], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stderr.startswith(
        "usersvc: --cors-origin cannot be used: not an origin")
    assert len(result.stderr.splitlines()) == 1


# -- nosniff ------------------------------------------------------------------------

def test_every_answer_says_nosniff(client):
    client.create()
    etag = client.get("/users/1").headers["ETag"]
    for response in (client.get("/"), client.get("/users/1"), client.get("/nothing"),
                     client.get("/users/1", headers={"If-None-Match": etag}),
                     client.request("OPTIONS", "/users"), client.delete("/users/1")):
        assert response.headers["X-Content-Type-Options"] == "nosniff", response.status
