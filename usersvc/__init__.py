"""usersvc: a resource-oriented HTTP service that manages users, and any
collection declared the same way.

    from usersvc import make_app
    app = make_app(storage="sqlite:///users.db")   # a plain WSGI callable

    from usersvc import Schema, USER, text, integer
    BOOKS = Schema("book", "books", {"title": text(200), "year": integer(0, 9999)},
                   optional=("year",), sorts=("title",))
    app = make_app("sqlite:///library.db", collections=(USER, BOOKS))

The package's map is the README's "Layout"; docs/architecture.md follows
a request through it, and draws the core and what plugs into it.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .app import App
from .features import pages
from .features.auth import Tokens
from .features.batch import Batch
from .features.cors import CORS
from .features.health import HEALTH_PATH, HealthCheck
from .features.idempotency import Idempotency
from .features.mount import Mount
from .features.openapi import OPENAPI_PATH, OpenAPIDocument, ServiceRoot
from .fields import email, text
from .kinds import boolean, choice, date, datetime, integer, number, ref, url
from .problems import Problem
from .release import VERSION as __version__, install_hint
from .settings import (DEFAULT_IDEMPOTENCY_TTL, DEFAULT_MAX_BODY_SIZE, DEFAULT_MAX_WAITING,
                       DEFAULT_STREAM_SECONDS,
                       DEFAULT_MAX_BATCH, DEFAULT_STORAGE, Settings)
from .storage import RecordStore, Storage, open_store
from .storage.protocol import Atomic
from .validation import Schema, USER

__all__ = ["__version__", "make_app", "App", "Mount", "Schema", "USER", "text", "email", "integer",
           "boolean", "number", "date", "datetime", "choice", "url", "ref",
           "RecordStore", "Storage", "Settings", "open_store", "DEFAULT_STORAGE",
           "DEFAULT_MAX_BODY_SIZE"]


def make_app(storage: str | Storage | RecordStore = DEFAULT_STORAGE, *,
             collections: Iterable[Schema] | None = None,
             max_body_size: int = DEFAULT_MAX_BODY_SIZE,
             tokens: Mapping[str, str] | Tokens | None = None,
             cors_origins: Iterable[str] = (),
             max_waiting: int = DEFAULT_MAX_WAITING,
             stream_seconds: int = DEFAULT_STREAM_SECONDS,
             idempotency_ttl: int = DEFAULT_IDEMPOTENCY_TTL, max_batch: int = DEFAULT_MAX_BATCH,
             metrics: bool = False) -> App:
    """A WSGI app serving each of ``collections`` (default: ``USER`` alone)
    at ``/<plural>``, from ``storage``: a URL (``memory://``,
    ``sqlite:///users.db``, ``postgresql://...``) for a store the app opens
    and closes with ``app.close()``; a store from ``open_store`` (whose
    collections it serves, unless told which); or one collection's records
    (a ``RecordStore``, served alone). Apps share nothing.

    ``tokens`` turns on bearer tokens: ``{token: "read" | "write"}`` (see
    ``usersvc.features.auth``); without it anyone who reaches the app may use it.
    ``cors_origins``: the origins (``https://app.example``; ``*``: any)
    whose pages may call the app (CORS; see ``usersvc.features.cors``).
    Writes from pages of other origins are refused either way.
    ``max_waiting``: how many requests may wait for changes at once
    (``GET /users/changes?wait=N``, and each stream of them, ``Accept:
    text/event-stream``); keep it at most half the server's worker threads
    (waitress's default is 4). ``stream_seconds``: how long a stream lasts
    before its client is told to come back (default 300). ``idempotency_ttl``: how many
    seconds the answer to a POST or PATCH sent with an ``Idempotency-Key``
    is kept for its retries (default a day; see ``usersvc.features.idempotency``).
    ``max_batch``: the most requests one ``POST /batch`` may hold (a store
    of usersvc's makes them together or not at all; see ``usersvc.features.batch``).
    ``metrics``: count requests and store operations for Prometheus, in
    ``app.metrics.registry`` (needs the ``metrics`` extra; see
    ``usersvc.features.metrics.prometheus``). A value it cannot use is a ``ValueError``
    (``usersvc.settings.SettingError``) that names it."""
    settings = Settings(storage, max_body_size=max_body_size, tokens=tokens,
                        cors_origins=cors_origins, max_waiting=max_waiting,
                        stream_seconds=stream_seconds, idempotency_ttl=idempotency_ttl, max_batch=max_batch, metrics=metrics)
    return build_app(settings, collections)


def build_app(settings: Settings, collections: Iterable[Schema] | None = None) -> App:
    """The app ``settings`` describe, serving ``collections`` (``None``:
    ``settings.collections``, else users) from ``settings.storage`` (a
    server's ``prefix`` and access log are the server's to add around it)."""
    storage = settings.storage
    if collections is None:
        collections = settings.collections
    app = App(settings)
    pages.plug(app)         # HTML for people, and the files the pages load
    # The service's own paths: its root, its description, its health.
    app.router.add("/", ServiceRoot(app.schemas, app.offers))
    description = OpenAPIDocument(app.schemas, secured=settings.tokens is not None,
                                  feeds=app.feeds, idempotency_ttl=settings.idempotency_ttl)
    app.router.add(OPENAPI_PATH, description)
    app.router.add(HEALTH_PATH, HealthCheck(app.stores))
    app.open_paths.add(HEALTH_PATH)
    # The features the settings ask for, in the order a request meets them
    # (each plugs into the core where it offers: ``app``'s module text).
    if settings.cors_origins:
        CORS(settings.cors_origins).plug(app)
    if settings.tokens is not None:
        settings.tokens.plug(app)
    owner = (lambda req: "") if settings.tokens is None else settings.tokens.owner
    keys = Idempotency(settings.idempotency_ttl, owner,
                       lambda req, error: app.problem_response(req, Problem.from_error(error)))
    keys.plug(app)
    if settings.metrics:
        metrics = _metrics(settings.metrics_dir)
        metrics(__version__, app.stores, app.waiting).plug(app)     # the last to see an answer
    if isinstance(storage, str):
        store: Any = open_store(storage, (USER,) if collections is None else collections)
        app.on_close(store.close)
    elif not isinstance(storage, Storage):     # one collection's records
        app.add_collection(storage.schema, storage)
        return app
    else:
        store = storage
    if isinstance(store, Atomic):        # several writes at once: POST /batch
        Batch(app, store, settings.max_batch, keys).plug(app)
        description.max_batch = settings.max_batch
    for schema in store.schemas if collections is None else collections:
        app.add_collection(schema, store[schema.plural])
    return app


def _metrics(directory: str | None) -> Any:
    """The app's metrics, to be made: ``prometheus.Metrics``, or, counted in
    files in ``directory`` with the other processes of a server,
    ``shared.SharedMetrics``; or a one-line ``ImportError`` that
    says how to install what they need."""
    try:
        if directory is None:
            from .features.metrics.prometheus import Metrics
            return Metrics
        from .features.metrics.shared import SharedMetrics
    except ImportError as e:
        raise ImportError(f"metrics need prometheus_client: {install_hint('metrics')} "
                          f"({e})") from None
    return lambda version, stores, waiting: SharedMetrics(version, stores, waiting, directory)
