"""Fixtures: every store the project has, an app over each, and a client.

A new store joins every contract and API test by adding one entry to
``STORES``.

The PostgreSQL store runs against the server named by
``USERSVC_TEST_POSTGRES_URL`` (e.g. ``postgresql://127.0.0.1:5432/test``),
each test in a schema of its own that is dropped afterwards. Without that
variable the suites run on the other stores, the header says so, and the
PostgreSQL-only tests are skipped, saying why; with
``USERSVC_TEST_POSTGRES_REQUIRED=1`` (as ``.ci/run`` sets) they fail instead.
"""
from __future__ import annotations

import contextlib
import json
import os
import uuid
import wsgiref.validate
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from helpers import serve, stop
from httplint import HttpRequestLinter, HttpResponseLinter, levels
from webob import Request, Response

from usersvc import DEFAULT_FEATURES, fast, make_app
from usersvc.storage import open_store

POSTGRES_URL = os.environ.get("USERSVC_TEST_POSTGRES_URL", "")
POSTGRES_REQUIRED = os.environ.get("USERSVC_TEST_POSTGRES_REQUIRED") == "1"

STORES = [
    pytest.param("memory://", id="memory"),
    pytest.param("sqlite://", id="sqlite-memory"),
    pytest.param("sqlite:///{tmp}/users.db", id="sqlite-file"),
]
if POSTGRES_URL or POSTGRES_REQUIRED:
    STORES.append(pytest.param("{postgres}", id="postgres"))
#: For tests of what is judged before any store is asked (negotiation,
#: request bodies, the formats): the memory store, and the SQLite file a
#: server keeps by default (a module's own ``store_url`` takes these).
BEFORE_THE_STORE = [STORES[0], STORES[2]]


def judged_before_the_store(request, tmp_path) -> str:
    """A module's own ``store_url``, for what is judged before any store is
    asked: ``store_url = pytest.fixture(params=BEFORE_THE_STORE,
    name="store_url")(judged_before_the_store)``."""
    return request.param.format(tmp=tmp_path)


def pytest_report_header(config):
    if POSTGRES_URL:
        return f"PostgreSQL store: tested on {POSTGRES_URL}"
    return ("PostgreSQL store: not tested (set USERSVC_TEST_POSTGRES_URL, "
            "e.g. postgresql://127.0.0.1:5432/test)")


@pytest.fixture(params=STORES)
def store_url(request, tmp_path) -> str:
    if request.param == "{postgres}":
        return request.getfixturevalue("postgres_url")
    return request.param.format(tmp=tmp_path)


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[str, int]]:
    """usersvc on SQLite under waitress (8 threads) on a free port, in this
    process; yields (host, port)."""
    app = make_app(f"sqlite:///{tmp_path}/users.db")
    httpd = serve(app, threads=8)
    yield "127.0.0.1", httpd.effective_port
    stop(httpd)
    app.close()


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[Any]:
    """One connection to the test server for a worker's whole run, that
    makes and drops the tests' schemas (a connection is a server process:
    one a test cost a fork each)."""
    if not POSTGRES_URL:
        unavailable("USERSVC_TEST_POSTGRES_URL is not set "
                    "(e.g. postgresql://127.0.0.1:5432/test)")
    try:
        import psycopg
    except ImportError:
        unavailable("psycopg is not installed: pip install -e '.[test,postgres]'")
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True)
    except psycopg.OperationalError as e:
        unavailable(f"cannot reach {POSTGRES_URL}: {e}")
    with admin:
        yield admin


@pytest.fixture
def postgres_url(postgres_admin) -> Iterator[str]:
    """A store URL for an empty schema of its own on the test server."""
    schema = f"usersvc_test_{uuid.uuid4().hex[:12]}"
    postgres_admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(POSTGRES_URL, schema)
    finally:
        postgres_admin.execute(f"DROP SCHEMA {schema} CASCADE")


def with_search_path(url: str, schema: str) -> str:
    """``url`` with libpq's ``options`` set so that tables go to ``schema``."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@contextlib.contextmanager
def schema_of_its_own(prefix: str) -> Iterator[str]:
    """A PostgreSQL schema made for a fixture and dropped after it: the
    test server's URL with its tables going there."""
    if not POSTGRES_URL:
        unavailable("USERSVC_TEST_POSTGRES_URL is not set")
    import psycopg
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield with_search_path(POSTGRES_URL, schema)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def unavailable(reason: str) -> None:
    if POSTGRES_REQUIRED:
        pytest.fail(f"PostgreSQL tests are required here, but {reason}")
    pytest.skip(f"PostgreSQL tests: {reason}")


def opened(store_url, collections=None):
    """The store a URL names, open for a fixture's life (holding
    ``collections``; ``None``: the users), closed after."""
    storage = open_store(store_url) if collections is None else open_store(store_url, collections)
    yield storage
    storage.close()


@pytest.fixture
def storage(store_url, speedups):
    """The store a URL names, holding the users, on the build asked for
    (``speedups``: the fast paths in place, or the plain definitions)."""
    fast.install(speedups)
    yield from opened(store_url)


@pytest.fixture
def store(storage):
    """Its users."""
    return storage["users"]


#: The apps a test marked ``core`` (the seed's contract) runs on: the full
#: app, make_app's defaults, and the plain core, no feature plugged in and
#: every fast path left for its plain definition (``usersvc.fast``).
SERVED = [pytest.param(DEFAULT_FEATURES, True, id="full"), pytest.param((), False, id="plain")]


def pytest_generate_tests(metafunc):
    """A test marked ``core`` that takes the ``app`` (or ``client``) runs on
    every app of ``SERVED``; any other, and one marked ``feature`` (of
    what a feature serves), on the full app alone."""
    marked = metafunc.definition.get_closest_marker
    if "features" in metafunc.fixturenames and marked("core") and not marked("feature"):
        metafunc.parametrize("features, speedups", SERVED)
    elif ("storage" in metafunc.fixturenames and "speedups" in metafunc.fixturenames
          and "app" not in metafunc.fixturenames
          and getattr(metafunc.module, "speedups", None) is None):
        # A store's own test: on both builds (SQLite's writes are the
        # writer thread's on the fast one: ``usersvc.fast.sqlite``).
        metafunc.parametrize("speedups", [True, False], ids=["fast", "plain"])


@pytest.fixture
def features():
    """The features of the ``app`` fixture's app (``SERVED``)."""
    return DEFAULT_FEATURES


@pytest.fixture
def speedups():
    """Whether the ``app`` fixture's app has its fast paths (``SERVED``)."""
    return True


@pytest.fixture
def app(storage, features, speedups):
    return make_app(storage, features=features, speedups=speedups)


@pytest.fixture
def client(app) -> Client:
    return Client(app)


class Client:
    """Requests through the WSGI app, checked by ``wsgiref.validate`` on the
    way in and out, as a WSGI server would call it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.checked = wsgiref.validate.validator(app)

    def request(self, method: str, path: str, *, json_body: Any = None,
                body: bytes | str | None = None, content_type: str | None = None,
                headers: dict[str, str] | None = None) -> Response:
        req = Request.blank(path, method=method)
        req.environ["wsgi.multithread"] = True      # as waitress says (Request.blank: False)
        if json_body is not None:
            body = json.dumps(json_body)
            content_type = content_type or "application/json"
        if body is not None:
            req.body = body.encode() if isinstance(body, str) else body
        if content_type is not None:
            req.content_type = content_type
        for name, value in (headers or {}).items():
            req.headers[name] = value
        return self.send(req)

    def send(self, req: Request) -> Response:
        """A request as built, through the validator and httplint."""
        response = req.get_response(self.checked)
        _ = response.body  # read it whole: closes the app's iterator, as the validator wants
        notes = lint(req, response)
        assert not notes, f"httplint on {req.method} {req.path_qs} -> {response.status}: {notes}"
        return response

    def get(self, path: str, **kw: Any) -> Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Response:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> Response:
        return self.request("PUT", path, **kw)

    def patch(self, path: str, **kw: Any) -> Response:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw: Any) -> Response:
        return self.request("DELETE", path, **kw)

    def create(self, name: str = "Ada Lovelace", email: str = "ada@example.org") -> dict:
        """Create a user and return its JSON, failing the test if it cannot."""
        response = self.post("/users", json_body={"name": name, "email": email})
        assert response.status_code == 201, response.text
        return response.json


# httplint notes at warning level or above that say nothing wrong about the
# app, each with its reason.
LINT_EXEMPT: dict[str, str] = {
    "DATE_CLOCKLESS": "Date is the server's to add (RFC 9110 §6.6.1: the origin server "
                      "with a clock); waitress adds it to every response, a WSGI app does not.",
    "NO_DATE_304": "The same: waitress adds Date to a 304 too "
                   "(test_server.py lints real responses with no exemption).",
    "STATUS_BAD_REQUEST": "httplint notes every 400 as a warning; the tests that get one "
                          "sent a malformed request on purpose, and 400 is the right answer.",
}


def lint(req: Request, response: Response) -> list[str]:
    """httplint's notes at warning level or above on this exchange through
    the app, as ``"NAME: summary"``, less the exempt ones."""
    target = quote(req.environ["PATH_INFO"].encode("latin-1"), safe="/;%")
    query = req.environ.get("QUERY_STRING")
    target += "?" + query if query else ""
    return lint_exchange(req.method, target, list(req.headers.items()), response.status,
                         response.headerlist, response.body, exempt=LINT_EXEMPT)


def lint_exchange(method: str, target: str, request_headers: list[tuple[str, str]],
                  status: str, headers: list[tuple[str, str]], body: bytes,
                  exempt: dict[str, str] | None = None) -> list[str]:
    """httplint on one request and its response, as they were sent."""
    request = HttpRequestLinter()
    request.process_request_topline(method.encode(), b"http://localhost" + target.encode(),
                                    b"HTTP/1.1")
    request.process_headers([(k.encode("latin-1"), v.encode("latin-1"))
                             for k, v in request_headers])
    request.finish_content(True)
    linter = HttpResponseLinter()
    linter.request = request
    linter.is_head_response = method == "HEAD"
    code, _, phrase = status.partition(" ")
    linter.process_response_topline(b"HTTP/1.1", code.encode(), phrase.encode())
    linter.process_headers([(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers])
    linter.feed_content(b"" if method == "HEAD" else body)
    linter.finish_content(True)
    return [f"{type(note).__name__}: {note._get_summary()}" for note in linter.notes
            if note.level in (levels.WARN, levels.BAD)
            and type(note).__name__ not in (exempt or {})]


def problem(response: Response, status: int) -> dict:
    """Assert that a response is a JSON problem document of this status."""
    assert response.status_code == status, response.text
    assert response.content_type == "application/problem+json"
    assert response.headers["Vary"].startswith("Accept")   # and ", Origin" with CORS on
    body = response.json
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["title"] and body["detail"]
    return body


def snapshot(client: Client) -> list[dict]:
    """Every user, for asserting that a failed request changed nothing."""
    return client.get("/users?limit=1000").json
