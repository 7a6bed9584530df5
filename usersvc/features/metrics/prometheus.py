"""Metrics for Prometheus, named as OpenTelemetry's HTTP semantic
conventions name them (docs/deploying.md, "Metrics for Prometheus", lists them).
``make_app(..., metrics=True)`` plugs a ``Metrics`` into the app, whose
``registry`` is its own: request durations by method, route (the template
after the application's root; empty for no route) and status, active
requests, store operations by collection and operation, SQLite commits,
PostgreSQL pools, requests waiting for changes, build info, and
``prometheus_client``'s process metrics. No label holds anything a client
sent but a standard method. Counts are kept in tallies (``tally``), without
a lock, and handed over at a scrape (``families.Collector``).
Needs the ``metrics`` extra.
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from time import perf_counter
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    make_wsgi_app,
)
from waitress.server import create_server

from ...request import Request, Response
from ...storage.protocol import CommitsObservable
from .families import (
    COMMIT_BUCKETS,
    GROUP_BUCKETS,
    OPERATION_BUCKETS,
    POOL_GAUGES,
    REQUEST_BUCKETS,
    Collector,
)
from .tally import PerThread, Tally, Totals, fold_counts, new_counts, totals

#: The methods OpenTelemetry names as they are (RFC 9110's, and PATCH);
#: any other is ``_OTHER``, so that no client can make a label of its own.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
                     "PATCH"})

#: A store's calls, and the operation each is counted as.
OPERATIONS = {"get": "get", "list": "list", "position_and_list": "list", "count": "count",
              "create": "create", "update": "update", "delete": "delete",
              "changes": "changes"}


class Metrics:
    """One app's metrics: ``registry`` for a scraper, ``begin`` and
    ``end`` for each request, ``measured`` for its collections (see the
    module's text)."""

    def __init__(self, version: str, collections: list[Any], waiting: Any) -> None:
        self._parts = PerThread(_Thread, _Thread.fold)
        self._threads = self._parts.local               # .mine: this thread's _Thread
        #: Each SQLite commit (its seconds, its writes) of the stores that
        #: tell them (``observe_commits``); ``None`` until one does.
        self._commits: tuple[Tally, Tally] | None = None
        self._observed: list[Any] = []
        # app.records, filled as it adds them; the waiting places.
        self._collections, self._waiting = collections, waiting
        self._plugged: dict[str, Any] = {}              # app.plugged, once plugged in
        self.registry = CollectorRegistry()
        self.registry.register(Collector(self, version))
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=self.registry)

    def plug(self, app: Any) -> Metrics:
        """Count each of ``app``'s requests (the last to see its answer) and
        its collections' operations; handed out as what the feature plugged in
        (``app.plugged["metrics"]``)."""
        app.starters.append(self.begin)
        app.finishers.append(self.end)
        app.records_wrappers.append(self.measured)
        self._plugged = app.plugged
        return self

    def serve(self, host: str, port: int) -> Any:
        """Serve ``registry`` at ``http://host:port/metrics`` (``serve``), so
        that a server finds how in ``app.plugged["metrics"]``, importing no
        feature: the server, started (``effective_port``, ``close()``);
        ``OSError`` for an address it cannot listen on."""
        return serve(self.registry, host, port)

    def begin(self, req: Request) -> None:
        """A request begins: it is active until ``end``, and its time starts."""
        mine = self._threads.mine
        mine.method = req.method if req.method in METHODS else "_OTHER"
        mine.started = perf_counter()

    def end(self, req: Request, response: Response) -> None:
        """The request has its response: counted by its method, route
        (``req.route``, once one took it) and status, with its time."""
        mine = self._threads.mine
        elapsed = perf_counter() - mine.started
        route = req.route       # with the application's root (a --prefix), as OpenTelemetry asks
        labels = (mine.method, route and req.script_name + route, response.status)
        mine.method = ""
        counts = mine.requests.get(labels)
        if counts is None:
            counts = mine.requests[labels] = new_counts(REQUEST_BUCKETS)
        # Nearly every request falls in the first bucket: one comparison.
        counts[0 if elapsed <= REQUEST_BUCKETS[0] else bisect_left(REQUEST_BUCKETS, elapsed)] += 1
        counts[-1] += elapsed

    def requests(self) -> dict[Any, Totals]:
        """Every request so far: {(method, route, status): totals}."""
        return self._parts.read(lambda parts: totals([p.requests for p in parts],
                                                     REQUEST_BUCKETS))

    def operations(self) -> dict[Any, Totals]:
        """Every store operation so far: {(collection, operation): totals}."""
        return self._parts.read(lambda parts: totals([p.operations for p in parts],
                                                     OPERATION_BUCKETS))

    def active(self) -> dict[str, int]:
        """Requests being served now, by method: one at most a thread."""
        methods = self._parts.read(lambda parts: [p.method for p in parts])
        return Counter(method for method in methods if method)

    def now(self) -> Metrics:
        """What ``Collector`` reads at a scrape: these counts, as they are."""
        return self

    def waiting(self) -> tuple[int, int, int]:
        """Requests waiting for changes now, how many may, and the streams among them."""
        return self._waiting.now, self._waiting.most, self._waiting.streams

    def commits(self) -> tuple[dict[Any, Totals], dict[Any, Totals]] | None:
        """SQLite's commits (their seconds, their writes), once a store tells them."""
        return self._commits and (self._commits[0].totals(), self._commits[1].totals())

    def webhooks(self) -> tuple[dict[str, float], dict[str, int] | None] | None:
        """The webhooks' attempts by outcome (as their sender counts them)
        and each subscription's lag; ``None``: no webhooks feature."""
        found = self._plugged.get("webhooks")
        if found is None:
            return None
        from .webhooks import lags
        return dict(found.sender.outcomes), lags(found)

    def pools(self) -> dict[str, int]:
        """``POOL_GAUGES``, over the PostgreSQL stores' pools (none: none)."""
        storages = {id(s): s for s in (getattr(r, "storage", None) for r in self._collections)
                    if s is not None}.values()
        pools = [s.pool_use() for s in storages if hasattr(s, "pool_use")]
        return {name: sum(getattr(p, field) for p in pools)
                for name, field in POOL_GAUGES.items()} if pools else {}

    def _operation(self, labels: tuple[str, str], elapsed: float) -> None:
        """A store's call of ``labels`` (collection, operation) took ``elapsed`` s."""
        operations = self._threads.mine.operations
        counts = operations.get(labels)
        if counts is None:
            counts = operations[labels] = new_counts(OPERATION_BUCKETS)
        counts[0 if elapsed <= OPERATION_BUCKETS[0] else
               bisect_left(OPERATION_BUCKETS, elapsed)] += 1
        counts[-1] += elapsed

    def measured(self, collection: str, records: Any) -> Any:
        """``records`` with each call of ``OPERATIONS`` timed (and its
        store's commits counted, once a store, if it tells them: a store's
        capability, ``CommitsObservable``)."""
        storage = getattr(records, "storage", None)
        if (isinstance(storage, CommitsObservable)
                and not any(s is storage for s in self._observed)):
            self._observed.append(storage)
            durations, writes = self._commits or (Tally(COMMIT_BUCKETS), Tally(GROUP_BUCKETS))

            def committed(seconds: float, count: int) -> None:
                durations.observe((), seconds)
                writes.observe((), count)
            if storage.observe_commits(committed):
                self._commits = durations, writes
        return Measured(collection, records, self._operation)


class _Thread:
    """One thread's part of an app's metrics, written by that thread alone
    (so, without a lock; ``tally`` says why that is safe to read): the
    method of the request it serves now and when it began, and its counts
    of requests and of store operations, as a ``tally.Tally`` keeps them."""

    __slots__ = ("method", "started", "requests", "operations")

    def __init__(self) -> None:
        self.method = ""        # ("": serving none)
        self.started = 0.0
        self.requests: dict[tuple[str, str, int], list[float]] = {}
        self.operations: dict[tuple[str, str], list[float]] = {}

    @staticmethod
    def fold(into: _Thread, ended: _Thread) -> None:
        """Add the counts of a thread that has ended to ``into``."""
        fold_counts(into.requests, ended.requests)
        fold_counts(into.operations, ended.operations)


class Measured:
    """A collection's records, each call of ``OPERATIONS`` timed and told
    to ``observe((collection, operation), seconds)``: every other attribute
    is the records' own, and one they lack is lacking here too."""

    def __init__(self, collection: str, records: Any,
                 observe: Callable[[tuple[str, str], float], None]) -> None:
        self._collection = collection
        self._records = records
        self._observe = observe

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._records, name)
        operation = OPERATIONS.get(name)
        if operation is None:
            return found            # (not kept: writes_failing, say, changes)
        labels, observe = (self._collection, operation), self._observe

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = perf_counter()
            try:
                return found(*args, **kwargs)
            finally:
                observe(labels, perf_counter() - started)
        setattr(self, name, timed)  # found here from now on, without __getattr__
        return timed


def serve(registry: CollectorRegistry, host: str, port: int,
          sockets: list[Any] | None = None) -> Any:
    """Serve ``GET /metrics`` from ``registry`` at ``host:port`` (or on
    ``sockets``, listening already), from a thread of its own, under
    waitress (one thread: a scrape is rare and quick); any other path is a
    404. The server (waitress's), started: its ``effective_port``, its
    ``task_dispatcher`` (shut down before ``close()``: a scrape's end pulls
    the trigger ``close`` closes). ``OSError`` for an address it cannot listen on."""
    exposition = make_wsgi_app(registry)

    def metrics(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") == "/metrics":
            return exposition(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"Metrics are at /metrics.\n"]

    where = {"sockets": sockets} if sockets else {"host": host, "port": port}
    server = create_server(metrics, **where, threads=1, ident="usersvc-metrics",
                           channel_timeout=30, connection_limit=20)
    threading.Thread(target=server.run, name="usersvc-metrics", daemon=True).start()
    return server
