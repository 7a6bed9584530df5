"""The apps usersvc is measured against, each serving the same four
operations on the same kind of in-memory store:

    GET /users/{id}     POST /users     PUT /users/{id}     GET /users?limit=N

- ``bare``: a hand-written WSGI function, the floor: no framework, little
  checking (the JSON must be an object with string name and email).
- ``falcon``: a Falcon 4 app, written as Falcon's docs suggest.
- ``webob``: a straightforward WebOb app (``Request``/``Response``,
  ``json_body``).
- ``fixed``: waitress's ceiling over HTTP: a fixed body, no work at all.

None of them negotiates formats, sends ETags, checks preconditions or
validates e-mail syntax; usersvc does all of that, and is measured anyway.
"""
from __future__ import annotations

import itertools
import json
import threading
from typing import Any

from sortedcontainers import SortedList


class PeerStore:
    """A dict of users, ids in order for pages, e-mails unique: one lock."""

    def __init__(self, n: int = 0) -> None:
        self.lock = threading.Lock()
        self.users: dict[int, dict[str, Any]] = {}
        self.ids = SortedList()
        self.emails: set[str] = set()
        self.next_id = itertools.count(1)
        for i in range(n):
            self.create(f"User {i}", f"user{i}@example.org")

    def create(self, name: str, email: str) -> dict[str, Any] | None:
        with self.lock:
            if email.casefold() in self.emails:
                return None
            user = {"id": next(self.next_id), "name": name, "email": email}
            self.users[user["id"]] = user
            self.ids.add(user["id"])
            self.emails.add(email.casefold())
            return user

    def get(self, user_id: int) -> dict[str, Any] | None:
        with self.lock:
            return self.users.get(user_id)

    def replace(self, user_id: int, name: str, email: str) -> dict[str, Any] | None:
        with self.lock:
            old = self.users.get(user_id)
            if old is None:
                return None
            self.emails.discard(old["email"].casefold())
            self.emails.add(email.casefold())
            user = self.users[user_id] = {"id": user_id, "name": name, "email": email}
            return user

    def page(self, after: int, limit: int) -> list[dict[str, Any]]:
        with self.lock:
            ids = self.ids.irange(minimum=after, inclusive=(False, True))
            return [self.users[i] for i in itertools.islice(ids, limit)]


def _fields(doc: Any) -> tuple[str, str] | None:
    if isinstance(doc, dict) and isinstance(doc.get("name"), str) \
            and isinstance(doc.get("email"), str):
        return doc["name"], doc["email"]
    return None


# -- bare WSGI ------------------------------------------------------------------

def bare_app(store: PeerStore):
    def app(environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]

        def answer(status, body, extra=()):
            start_response(status, [("Content-Type", "application/json"),
                                    ("Content-Length", str(len(body))), *extra])
            return [body]

        if path == "/users":
            if method == "GET":
                query = dict(p.partition("=")[::2]
                             for p in environ.get("QUERY_STRING", "").split("&") if p)
                users = store.page(int(query.get("after", 0)), int(query.get("limit", 100)))
                return answer("200 OK", json.dumps(users).encode())
            if method == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                fields = _fields(json.loads(environ["wsgi.input"].read(length)))
                user = store.create(*fields) if fields else None
                if user is None:
                    return answer("409 Conflict", b'{"error":"conflict"}')
                return answer("201 Created", json.dumps(user).encode(),
                              [("Location", f"/users/{user['id']}")])
        elif path.startswith("/users/") and path[7:].isdigit():
            user_id = int(path[7:])
            if method == "GET":
                user = store.get(user_id)
                if user is None:
                    return answer("404 Not Found", b'{"error":"not found"}')
                return answer("200 OK", json.dumps(user).encode())
            if method == "PUT":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                fields = _fields(json.loads(environ["wsgi.input"].read(length)))
                user = store.replace(user_id, *fields) if fields else None
                if user is None:
                    return answer("404 Not Found", b'{"error":"not found"}')
                return answer("200 OK", json.dumps(user).encode())
        return answer("404 Not Found", b'{"error":"not found"}')
    return app


# -- Falcon -------------------------------------------------------------------------

def falcon_app(store: PeerStore):
    import falcon

    class Users:
        def on_get(self, req, resp):
            after = req.get_param_as_int("after", default=0)
            limit = req.get_param_as_int("limit", default=100)
            resp.media = store.page(after, limit)

        def on_post(self, req, resp):
            fields = _fields(req.get_media())
            if fields is None:
                raise falcon.HTTPBadRequest()
            user = store.create(*fields)
            if user is None:
                raise falcon.HTTPConflict()
            resp.status = falcon.HTTP_201
            resp.location = f"/users/{user['id']}"
            resp.media = user

    class User:
        def on_get(self, req, resp, user_id):
            user = store.get(user_id)
            if user is None:
                raise falcon.HTTPNotFound()
            resp.media = user

        def on_put(self, req, resp, user_id):
            fields = _fields(req.get_media())
            if fields is None:
                raise falcon.HTTPBadRequest()
            user = store.replace(user_id, *fields)
            if user is None:
                raise falcon.HTTPNotFound()
            resp.media = user

    app = falcon.App()
    app.add_route("/users", Users())
    app.add_route("/users/{user_id:int}", User())
    return app


# -- WebOb ----------------------------------------------------------------------

def webob_app(store: PeerStore):
    from webob import Request, Response

    def app(environ, start_response):
        req = Request(environ)
        if req.path_info == "/users":
            if req.method == "GET":
                after = int(req.GET.get("after", 0))
                limit = int(req.GET.get("limit", 100))
                resp = Response(json_body=store.page(after, limit))
            else:
                fields = _fields(req.json_body)
                user = store.create(*fields) if fields else None
                if user is None:
                    resp = Response(status=409, json_body={"error": "conflict"})
                else:
                    resp = Response(status=201, json_body=user)
                    resp.location = f"/users/{user['id']}"
        else:
            user_id = int(req.path_info.rsplit("/", 1)[1])
            if req.method == "GET":
                user = store.get(user_id)
            else:
                fields = _fields(req.json_body)
                user = store.replace(user_id, *fields) if fields else None
            resp = Response(json_body=user) if user else Response(status=404, json_body={})
        return resp(environ, start_response)
    return app


# -- waitress's ceiling -------------------------------------------------------------

def fixed_app(body: bytes, status: str = "200 OK", extra: list | None = None):
    """No work at all: the same body every time (with ``extra`` headers)."""
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
               *(extra or [])]

    def app(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response(status, headers)
        return [body]
    return app


def falcon_factory():
    """The Falcon peer over 1,000 users, for granian (``peers:falcon_factory``, ``--factory``)."""
    return falcon_app(PeerStore(1000))
