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

import sys
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from .app import App
from .fields import email, text
from .hooks import DEFAULT_FEATURES, Feature, name_of, resolved
from .schema import USER, Schema
from .settings import (
    DEFAULT_IDEMPOTENCY_TTL,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_WAITING,
    DEFAULT_STORAGE,
    DEFAULT_STREAM_SECONDS,
    Settings,
)
from .storage import RecordStore, Storage, open_store

if TYPE_CHECKING:    # (what ``__getattr__`` gives, as a checker sees it: imported when asked)
    from .kinds import boolean, choice, date, datetime, number, ref, url
    from .kinds.integers import integer
    from .release import VERSION as __version__
    from .serving.mount import Mount

__all__ = ["__version__", "make_app", "App", "Mount", "Schema", "USER", "text", "email", "integer",
           "boolean", "number", "date", "datetime", "choice", "url", "ref",
           "RecordStore", "Storage", "Settings", "open_store", "DEFAULT_STORAGE",
           "DEFAULT_MAX_BODY_SIZE", "DEFAULT_FEATURES", "Feature"]

#: Names importable from here, each imported only when asked for (``import
#: usersvc`` loads no feature, and no kind but users'): the kinds of
#: ``usersvc.kinds``, the features' modules' names, ``Mount``, and
#: ``__version__`` (read from the package's metadata; serving needs it not).
_LAZY = {**dict.fromkeys(("number", "boolean", "choice", "date", "datetime", "url", "ref"),
                         ".kinds"), "integer": ".kinds.integers",
         "__version__": ".release", "Mount": ".serving.mount",
         "Tokens": "auth", "Batch": "batch", "CORS": "cors",
         "HEALTH_PATH": "health", "HealthCheck": "health",
         "Idempotency": "idempotency", "OPENAPI_PATH": "openapi",
         "OpenAPIDocument": "openapi", "ServiceRoot": "openapi", "pages": "pages"}


def __getattr__(name: str) -> Any:
    """``usersvc.integer``, ``usersvc.Mount``, ``usersvc.Tokens``...: from their module."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'usersvc' has no attribute {name!r}")
    import importlib
    found = importlib.import_module(module if module.startswith(".") else f".features.{module}",
                                    __name__)
    if name == "__version__":
        return found.VERSION
    return found if name == module else getattr(found, name)


def make_app(storage: str | Storage | RecordStore = DEFAULT_STORAGE, *,
             collections: Iterable[Schema] | None = None,
             max_body_size: int = DEFAULT_MAX_BODY_SIZE,
             tokens: Mapping[str, str] | PurePath | None = None,
             cors_origins: Iterable[str] = (),
             max_waiting: int = DEFAULT_MAX_WAITING,
             stream_seconds: int = DEFAULT_STREAM_SECONDS,
             idempotency_ttl: int = DEFAULT_IDEMPOTENCY_TTL, max_batch: int = DEFAULT_MAX_BATCH,
             metrics: bool = False,
             features: Iterable[str | Feature] = DEFAULT_FEATURES,
             speedups: bool = True, **own: Any) -> App:
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
    text/event-stream``; the waiting feature's); each holds one of the
    server's threads while it waits, so give the server that many threads
    beside those the other requests need (serve.py does: ``--max-waiting``).
    ``stream_seconds``: how long a stream lasts before its client is told to
    come back (default 300). ``idempotency_ttl``: how many seconds the answer
    to a POST or PATCH sent with an ``Idempotency-Key`` is kept for its
    retries (default a day; see ``usersvc.features.idempotency``).
    ``max_batch``: the most requests one ``POST /batch`` may hold (a store
    of usersvc's makes them together or not at all; see ``usersvc.features.batch``).
    ``metrics``: count requests and store operations for Prometheus, in
    ``app.plugged["metrics"].registry`` (needs the ``metrics`` extra; see
    ``usersvc.features.metrics.prometheus``).
    ``features``: what plugs into the core (``usersvc.hooks``): by name, or
    ``Feature`` objects; ``DEFAULT_FEATURES + (mine,)`` adds one, ``()``
    serves the plain core. A value it cannot use, or a setting of a feature
    left out, is a ``ValueError`` (``usersvc.settings.SettingError``) that names it.
    ``speedups=False``: every plain definition, no fast path (``usersvc.fast``:
    what a reader learns from; the process's, as the last app built asks).
    ``own``: a feature's settings of its own, by name (the webhooks
    feature's ``webhooks_allow_private``, ``webhooks_retries``,
    ``webhooks_timeout``: ``usersvc.features.webhooks.options``)."""
    given = features if isinstance(features, str) else tuple(features)    # (a text: names)
    settings = Settings(storage, max_body_size=max_body_size, tokens=tokens,
                        max_waiting=max_waiting, stream_seconds=stream_seconds,
                        idempotency_ttl=idempotency_ttl, max_batch=max_batch, metrics=metrics,
                        speedups=speedups, own=own,
                        # (read as the settings are made: a frozenset, a tuple of features)
                        cors_origins=cors_origins, features=given)  # type: ignore[arg-type]
    return build_app(settings, collections)


def build_app(settings: Settings, collections: Iterable[Schema] | None = None) -> App:
    """The app ``settings`` describe, serving ``collections`` (``None``:
    ``settings.collections``, else users) from ``settings.storage``, with
    ``settings.features`` plugged in, in their order, before the first
    collection is added (``usersvc.hooks``). A server's ``prefix`` and
    access log are the server's to add around it."""
    storage = settings.storage
    if collections is None:
        collections = settings.collections
    speedups = settings.speedups or "usersvc.fast" in sys.modules     # (else plain, as imported)
    if speedups:
        from . import fast
        fast.install(settings.speedups)
    app = App(settings)
    if isinstance(storage, str):
        storage = open_store(storage, (USER,) if collections is None else collections)
        app.on_close(storage.close)
    served = storage if isinstance(storage, Storage) else None    # else one collection's records
    try:
        plugged = app.plugged
        for feature in resolved(settings.features):
            plugged[name_of(feature)] = feature.plug(app, served, plugged)
        if speedups:
            fast.install(settings.speedups)     # (the features' own, their modules loaded now)
    except BaseException:
        app.close()
        raise
    if served is None:
        app.add_collection(storage.schema, storage)
    else:
        for schema in served.schemas if collections is None else collections:
            app.add_collection(schema, served[schema.plural])
    return app
