"""usersvc: a resource-oriented HTTP service that manages users.

    from usersvc import make_app
    app = make_app(storage="sqlite:///users.db")   # a plain WSGI callable

Map of the package (docs/architecture.md follows a request through it):

- ``app``: the WSGI callable, Request in, Response out; errors become
  problem documents here, and only here;
- ``request``: ``Request`` and ``Response``, the only code that reads the
  WSGI environ;
- ``routing``: paths to resources, 404, 405 and ``Allow``;
- ``resources``: ``Collection`` and ``Item``, HTTP in terms of a schema and
  a store;
- ``representation``: bytes on the wire (negotiation, request bodies, JSON,
  XML, kept encodings and ETags);
- ``validation``: ``Schema`` and the field rules;
- ``problems``: RFC 9457 problems and the one table from domain error to status;
- ``listing``: what a page of a collection asks for (sort, filters, ``q``,
  the cursor) and the link to the next;
- ``storage``: the store protocol and its errors; ``memory``, ``sqlite``
  (``sqlite_writer``, ``sqlite_schema``), ``postgres`` (``postgres_schema``),
  and ``sql``, the queries the two SQL stores share;
- ``openapi``: ``GET /`` and ``GET /openapi.json`` (``document``, made of ``parts``);
- ``cross_origin``: writes from other sites' pages refused, and CORS;
- ``auth``: optional bearer tokens; ``ops``: request ids and the access log;
- ``server``: the standalone waitress server (``serve.py``); ``cli``: the
  ``usersvc`` command; ``transfer``: ``usersvc copy``, users from one
  store to another.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .app import DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_WAITING, App, Mount
from .auth import Tokens
from .storage import UserStore, open_store
from .validation import USER

__all__ = ["make_app", "App", "Mount", "UserStore", "open_store",
           "DEFAULT_STORAGE", "DEFAULT_MAX_BODY_SIZE"]

DEFAULT_STORAGE = "sqlite:///users.db"


def make_app(storage: str | UserStore = DEFAULT_STORAGE, *,
             max_body_size: int = DEFAULT_MAX_BODY_SIZE,
             tokens: Mapping[str, str] | Tokens | None = None,
             cors_origins: Iterable[str] = (),
             max_waiting: int = DEFAULT_MAX_WAITING) -> App:
    """A WSGI app serving ``/users`` from ``storage``: a store object, or a
    URL (``memory://``, ``sqlite:///users.db``, ``postgresql://...``) for a store
    the app opens, and closes with ``app.close()``. Apps share nothing.

    ``tokens`` turns on bearer tokens: ``{token: "read" | "write"}`` (see
    ``usersvc.auth``); without it anyone who reaches the app may use it.
    ``cors_origins``: the origins (``https://app.example``; ``*``: any)
    whose pages may call the app (CORS; see ``usersvc.cross_origin``).
    Writes from pages of other origins are refused either way.
    ``max_waiting``: how many requests may wait for changes at once
    (``GET /users/changes?wait=N``); keep it at most half the server's
    worker threads (waitress's default is 4)."""
    if tokens is not None and not isinstance(tokens, Tokens):
        tokens = Tokens(tokens)
    app = App(max_body_size=max_body_size, tokens=tokens, cors_origins=cors_origins,
              max_waiting=max_waiting)
    if isinstance(storage, str):
        store: Any = open_store(storage)
        app.on_close(store.close)
    else:
        store = storage
    app.add_collection(USER, store)
    return app
