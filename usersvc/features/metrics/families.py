"""What a scrape of usersvc's metrics says: each metric's name, help,
labels and buckets, and ``Collector``, which turns what a source counted
(``prometheus.Metrics``, or ``shared.SharedMetrics``'s files) into
``prometheus_client``'s metric families, alike for both.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, InfoMetricFamily

from .tally import Totals

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

HTTP_LABELS = ["http_request_method", "http_route", "http_response_status_code"]

#: What each metric is, said alike by ``Metrics`` and ``SharedMetrics``.
HELP = {
    "usersvc_build": "The usersvc release serving.",
    "http_server_request_duration_seconds": "Duration of HTTP server requests.",
    "http_server_active_requests": "Number of active HTTP server requests.",
    "usersvc_store_operation_duration_seconds": "Duration of the store's operations, "
                                                "by collection.",
    "usersvc_feed_waiting_requests": "Requests waiting for changes (GET .../changes?wait=N), "
                                     "streams of them included.",
    "usersvc_feed_waiting_requests_limit": "Requests that may wait for changes at once; "
                                           "past it, 503 (a stream: retry later).",
    "usersvc_feed_streams": "Streams of changes open (Accept: text/event-stream), each "
                            "holding one of the waiting requests' places.",
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
                                "usersvc_feed_waiting_requests_limit", "usersvc_feed_streams"),
                               source.waiting(), strict=True):
            yield GaugeMetricFamily(name, HELP[name], value=value)
        for found, name, bounds in zip(source.commits() or (), (
                "usersvc_sqlite_commit_duration_seconds", "usersvc_sqlite_commit_writes"),
                (COMMIT_BUCKETS, GROUP_BUCKETS), strict=False):    # (no commits: none)
            yield _histogram(name, [], bounds, found, lambda: [])
        for name, value in source.pools().items():
            yield GaugeMetricFamily(name, HELP[name], value=value)
        yield from webhook_families(source.webhooks())


def webhook_families(found: Any) -> Iterator[Any]:
    """The webhooks' families (``webhooks.families_of``, imported only when
    an app has the webhooks feature: ``found`` is not ``None``)."""
    if found is not None:
        from .webhooks import families_of
        yield from families_of(found)


def _histogram(name: str, labels: list[str], bounds: tuple[float, ...],
               totals: dict[Any, Totals],
               label_values: Callable[..., list[str]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, HELP[name], labels=labels)
    les = [repr(float(b)) for b in bounds] + ["+Inf"]     # 0.005, 1.0: as Prometheus writes them
    if not labels and not totals:       # one series, there from the start: zeros
        totals = {(): Totals([0] * len(les), 0.0)}
    for key, found in sorted(totals.items(), key=lambda kv: str(kv[0])):
        # (not strict: a scrape answers even where a file's series has other buckets)
        family.add_metric(label_values(*key), list(zip(les, found.buckets, strict=False)),
                          found.sum)
    return family
