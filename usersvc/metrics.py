"""Metrics for Prometheus, named as OpenTelemetry's HTTP semantic
conventions name them (docs/deploying.md, "Metrics for Prometheus", lists them).
``make_app(..., metrics=True)`` plugs a ``Metrics`` into the app, whose
``registry`` is its own: request durations by method, route (the template
after the application's root; empty for no route) and status, active
requests, store operations by collection and operation, SQLite commits,
PostgreSQL pools, requests waiting for changes, build info, and
``prometheus_client``'s process metrics. No label holds anything a client
sent but a standard method. Counts are kept in tallies (``tally``), without
a lock, and handed over at a scrape (``_Collector``). Needs the ``metrics``
extra.
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from time import perf_counter
from typing import Any

import waitress
from prometheus_client import (CollectorRegistry, GCCollector, PlatformCollector,
                               ProcessCollector, make_wsgi_app)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, InfoMetricFamily

from .request import Request, Response
from .tally import PerThread, Tally, Totals, fold_counts, new_counts, totals

#: Request durations: OpenTelemetry's advised buckets, with five below its
#: first (5 ms), where nearly every request of this service falls.
REQUEST_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                   0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)
#: Store operations: from 10 µs (a record from memory) to 10 s (a store
#: waiting for a lock).
OPERATION_BUCKETS = (0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                     0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
#: What a SQLite commit takes, BEGIN to the end of COMMIT (the sync): 0.1 ms to 10 s.
COMMIT_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                  0.25, 0.5, 1, 2.5, 5, 10)
#: How many writes a SQLite commit takes together.
GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

#: The methods OpenTelemetry names as they are (RFC 9110's, and PATCH);
#: any other is ``_OTHER``, so that no client can make a label of its own.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE",
                     "PATCH"})

#: A store's calls, and the operation each is counted as.
OPERATIONS = {"get": "get", "list": "list", "position_and_list": "list", "count": "count",
              "create": "create", "update": "update", "delete": "delete",
              "changes": "changes"}

HTTP_LABELS = ["http_request_method", "http_route", "http_response_status_code"]

#: What each metric is, said alike by ``Metrics`` and ``SharedMetrics``.
HELP = {
    "usersvc_build": "The usersvc release serving.",
    "http_server_request_duration_seconds": "Duration of HTTP server requests.",
    "http_server_active_requests": "Number of active HTTP server requests.",
    "usersvc_store_operation_duration_seconds": "Duration of the store's operations, "
                                                "by collection.",
    "usersvc_feed_waiting_requests": "Requests waiting for changes (GET .../changes?wait=N).",
    "usersvc_feed_waiting_requests_limit": "Requests that may wait for changes at once; "
                                           "past it, 503.",
    "usersvc_sqlite_commit_duration_seconds": "Duration of the SQLite writer's transactions, "
                                              "BEGIN to the end of COMMIT; its count is the "
                                              "commits.",
    "usersvc_sqlite_commit_writes": "Writes committed together by one SQLite commit.",
    "usersvc_postgres_pool_connections": "PostgreSQL connections the pool holds.",
    "usersvc_postgres_pool_connections_in_use": "PostgreSQL connections lent out now.",
    "usersvc_postgres_pool_connections_max": "The most PostgreSQL connections the pool "
                                             "may hold.",
    "usersvc_postgres_pool_requests_waiting": "Requests waiting for a PostgreSQL connection.",
}
#: The pool's gauges: each name, and the field of ``pool_use()`` it shows.
POOL_GAUGES = {"usersvc_postgres_pool_connections": "size",
               "usersvc_postgres_pool_connections_in_use": "in_use",
               "usersvc_postgres_pool_connections_max": "max",
               "usersvc_postgres_pool_requests_waiting": "waiting"}


def new(version: str, stores: list[Any], waiting: Any, directory: str | None) -> Any:
    """The metrics for an app: counted in this process (``Metrics``), or,
    given a ``directory``, in files there that every process of a server
    adds to (``metrics_shared.SharedMetrics``)."""
    if directory is not None:
        from .metrics_shared import SharedMetrics
        return SharedMetrics(version, stores, waiting, directory)
    return Metrics(version, stores, waiting)


class Metrics:
    """One app's metrics: ``registry`` for a scraper, ``begin`` and
    ``end`` for each request, ``measured`` for its stores (see the
    module's text)."""

    def __init__(self, version: str, stores: list[Any], waiting: Any) -> None:
        self._parts = PerThread(_Thread, _Thread.fold)
        self._threads = self._parts.local               # .mine: this thread's _Thread
        #: Each SQLite commit (its seconds, its writes) of the stores that
        #: tell them (``observe_commits``); ``None`` until one does.
        self._commits: tuple[Tally, Tally] | None = None
        self._observed: list[Any] = []
        self._stores, self._waiting = stores, waiting   # the app's, as it adds collections
        self.registry = CollectorRegistry()
        self.registry.register(Collector(self, version))
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=self.registry)

    def plug(self, app: Any) -> Metrics:
        """Count each of ``app``'s requests (the last to see its answer) and
        its stores' operations."""
        app.metrics = self
        app.starters.append(self.begin)
        app.finishers.append(self.end)
        app.store_wrappers.append(self.measured)
        return self

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
        mine.method = None
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
        return Counter(method for method in methods if method is not None)

    def now(self) -> Metrics:
        """What ``Collector`` reads at a scrape: these counts, as they are."""
        return self

    def waiting(self) -> tuple[int, int]:
        """Requests waiting for changes now, and how many may."""
        return self._waiting.now, self._waiting.most

    def commits(self) -> tuple[dict[Any, Totals], dict[Any, Totals]] | None:
        """SQLite's commits (their seconds, their writes), once a store tells them."""
        return self._commits and (self._commits[0].totals(), self._commits[1].totals())

    def pools(self) -> dict[str, int]:
        """``POOL_GAUGES``, over the PostgreSQL stores' pools (none: none)."""
        storages = {id(s): s for s in (getattr(r, "storage", None) for r in self._stores)
                    if s is not None}.values()
        pools = [s.pool_use() for s in storages if hasattr(s, "pool_use")]
        return {name: sum(getattr(p, field) for p in pools)
                for name, field in POOL_GAUGES.items()} if pools else {}

    def measured(self, collection: str, records: Any) -> Any:
        """``records`` with each call of ``OPERATIONS`` timed (and its
        store's commits counted, once a store, if it tells them)."""
        storage = getattr(records, "storage", None)
        if hasattr(storage, "observe_commits") and not any(s is storage for s in self._observed):
            self._observed.append(storage)
            durations, writes = self._commits or (Tally(COMMIT_BUCKETS), Tally(GROUP_BUCKETS))
            if storage.observe_commits(lambda seconds, count: (durations.observe((), seconds),
                                                               writes.observe((), count))):
                self._commits = durations, writes
        return Measured(records, lambda call, name: _timed(call, (collection, name),
                                                           self._threads))


class _Thread:
    """One thread's part of an app's metrics, written by that thread alone
    (so, without a lock; ``tally`` says why that is safe to read): the
    method of the request it serves now and when it began, and its counts
    of requests and of store operations, as a ``tally.Tally`` keeps them."""

    __slots__ = ("method", "started", "requests", "operations")

    def __init__(self) -> None:
        self.method: str | None = None
        self.started = 0.0
        self.requests: dict[tuple[str, str, int], list[float]] = {}
        self.operations: dict[tuple[str, str], list[float]] = {}

    @staticmethod
    def fold(into: _Thread, ended: _Thread) -> None:
        """Add the counts of a thread that has ended to ``into``."""
        fold_counts(into.requests, ended.requests)
        fold_counts(into.operations, ended.operations)


class Measured:
    """A collection's records, each call of ``OPERATIONS`` made by
    ``timed(call, operation)``: every other attribute is the records' own,
    and one they lack is lacking here too."""

    def __init__(self, records: Any, timed: Callable[[Callable[..., Any], str], Any]) -> None:
        self._records = records
        self._timed = timed

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._records, name)
        operation = OPERATIONS.get(name)
        if operation is None:
            return found            # (not kept: writes_failing, say, changes)
        timed = self._timed(found, operation)
        setattr(self, name, timed)  # found here from now on, without __getattr__
        return timed


def _timed(call: Callable[..., Any], labels: tuple[str, str],
           threads: Any) -> Callable[..., Any]:
    first = OPERATION_BUCKETS[0]

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            elapsed = perf_counter() - started
            operations = threads.mine.operations
            counts = operations.get(labels)
            if counts is None:
                counts = operations[labels] = new_counts(OPERATION_BUCKETS)
            counts[0 if elapsed <= first else bisect_left(OPERATION_BUCKETS, elapsed)] += 1
            counts[-1] += elapsed
    return timed


class Collector:
    """What ``source.now()`` tells at a scrape (``Metrics``, or
    ``SharedMetrics``: the same methods), as ``prometheus_client`` metric
    families."""

    def __init__(self, source: Any, version: str) -> None:
        self.source = source
        self.version = version

    def collect(self) -> Iterator[Any]:
        info = InfoMetricFamily("usersvc_build", HELP["usersvc_build"])
        info.add_metric([], {"version": self.version})
        yield info
        source = self.source.now()
        requests = source.requests()
        yield _histogram("http_server_request_duration_seconds", HTTP_LABELS,
                         REQUEST_BUCKETS, requests,
                         lambda method, route, status: [method, route, str(status)])
        active = GaugeMetricFamily("http_server_active_requests",
                                   HELP["http_server_active_requests"],
                                   labels=["http_request_method"])
        now = source.active()
        for method in sorted({method for method, _, _ in requests} | set(now)):
            active.add_metric([method], now.get(method, 0))     # 0 once a method has been seen
        yield active
        yield _histogram("usersvc_store_operation_duration_seconds",
                         ["collection", "operation"], OPERATION_BUCKETS,
                         source.operations(),
                         lambda collection, operation: [collection, operation])
        for name, value in zip(("usersvc_feed_waiting_requests",
                                "usersvc_feed_waiting_requests_limit"), source.waiting()):
            yield GaugeMetricFamily(name, HELP[name], value=value)
        for found, name, bounds in zip(source.commits() or (), (
                "usersvc_sqlite_commit_duration_seconds", "usersvc_sqlite_commit_writes"),
                (COMMIT_BUCKETS, GROUP_BUCKETS)):
            yield _histogram(name, [], bounds, found, lambda: [])
        for name, value in source.pools().items():
            yield GaugeMetricFamily(name, HELP[name], value=value)


def _histogram(name: str, labels: list[str], bounds: tuple[float, ...],
               totals: dict[Any, Totals],
               label_values: Callable[..., list[str]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, HELP[name], labels=labels)
    les = [repr(float(b)) for b in bounds] + ["+Inf"]     # 0.005, 1.0: as Prometheus's clients write them
    if not labels and not totals:       # one series, there from the start: zeros
        totals = {(): Totals([0] * len(les), 0.0)}
    for key, found in sorted(totals.items(), key=lambda kv: str(kv[0])):
        family.add_metric(label_values(*key), list(zip(les, found.buckets)), found.sum)
    return family


def serve(registry: CollectorRegistry, host: str, port: int,
          sockets: list[Any] | None = None) -> Any:
    """Serve ``GET /metrics`` from ``registry`` at ``host:port`` (or on
    ``sockets``, listening already), from a thread of its own, under
    waitress (one thread: a scrape is rare and quick); any other path is a
    404. The server, started: its ``effective_port``, and ``close()``.
    Raises ``OSError`` for an address it cannot listen on."""
    exposition = make_wsgi_app(registry)

    def metrics(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") == "/metrics":
            return exposition(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"Metrics are at /metrics.\n"]

    where = {"sockets": sockets} if sockets else {"host": host, "port": port}
    server = waitress.create_server(metrics, **where, threads=1,
                                    ident="usersvc-metrics", channel_timeout=30,
                                    connection_limit=20)
    threading.Thread(target=server.run, name="usersvc-metrics", daemon=True).start()
    return server
