"""Metrics summed over every process of a server (gunicorn's workers,
uWSGI's processes), counted in files in a directory they share
(``USERSVC_METRICS_DIR``; docs/deploying.md, "Metrics from every worker").

Each process counts into files of its own there (``files``). A
scrape reads every process's files and adds them up: counters and
histograms over every process that ever ran, gauges over the processes
alive; and reports
them through ``metrics.Collector``, as ``serve.py``'s metrics are, so the
names, labels and buckets are the same. Process metrics (``process_*``,
``python_*``) are each process's own, and so not here.

``serve_from_any`` serves the sum from whichever process holds the port
first; the others try again each second, so that when it exits another
takes the port over.
"""
from __future__ import annotations

import errno
import logging
import os
import socket
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from time import perf_counter
from typing import Any

from prometheus_client import CollectorRegistry

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
from .files import Counts, Reader, files_in, fold_ended
from .prometheus import METHODS, Measured, serve
from .tally import Totals, totals

log = logging.getLogger("usersvc")

REQUESTS = "http_server_request_duration_seconds"
OPERATIONS = "usersvc_store_operation_duration_seconds"
COMMITS, WRITES = "usersvc_sqlite_commit_duration_seconds", "usersvc_sqlite_commit_writes"
#: A histogram's numbers: its buckets', one past them, the sum (``tally.new_counts``).
_REQUEST_SIZE, _OPERATION_SIZE = len(REQUEST_BUCKETS) + 2, len(OPERATION_BUCKETS) + 2
_FIRST_REQUEST, _FIRST_OPERATION = REQUEST_BUCKETS[0], OPERATION_BUCKETS[0]
WAITING, LIMIT = "usersvc_feed_waiting_requests", "usersvc_feed_waiting_requests_limit"
STREAMS = "usersvc_feed_streams"
DELIVERIES = "usersvc_webhook_deliveries"
#: Each thread's one number for active requests: the method it serves now
#: (0: none), in its own series, so a start and an end each write it once.
SERVING = "serving"
_CODES = {method: code for code, method in enumerate(sorted(METHODS) + ["_OTHER"], 1)}
_METHOD_OF = {code: method for method, code in _CODES.items()}


class SharedMetrics:
    """One app's metrics, counted in ``directory`` with every other
    process's that counts there: ``registry`` (all of them, added up), and
    ``begin``, ``end`` and ``measured`` as ``prometheus.Metrics`` has them."""

    def __init__(self, version: str, collections: list[Any], waiting: Any, directory: str) -> None:
        self.directory = directory
        self.counts = Counts(directory)
        self.registry = CollectorRegistry()
        self.registry.register(Collector(self, version))
        self._waiting = waiting
        waiting.watchers.append(self._waited)
        self._pid = 0       # the process of the last request (a worker's first: not this)
        self._pools: list[Any] = []         # the stores with a PostgreSQL pool
        self._commits = False               # whether a store tells its commits
        self._reader = Reader(directory)
        self._reading = threading.Lock()    # (the reader's files: one scrape at a time)
        self._plugged: dict[str, Any] = {}  # app.plugged, once plugged in

    def _waited(self, n: int, stream: bool) -> None:
        """A request (a stream) began or ended waiting for changes."""
        part = self.counts.part()
        self.counts.add(part, WAITING, (), n)
        if stream:
            self.counts.add(part, STREAMS, (), n)

    def plug(self, app: Any) -> SharedMetrics:
        """As ``Metrics.plug`` (a starter, a finisher and a store wrapper);
        the files it reads are closed with the app."""
        app.starters.append(self.begin)
        app.finishers.append(self.end)
        app.records_wrappers.append(self.measured)
        app.on_close(self._reader.close)
        app.feed_hooks.append(self._feed_added)
        self._plugged = app.plugged
        return self

    def _feed_added(self, changes: Any) -> None:
        """A feed added: every feature is plugged in by then (collections
        are added after), the webhooks feature too, which plugs in after
        this one. Its sender tells each attempt's outcome from then on."""
        webhooks = self._plugged.get("webhooks")
        if webhooks is not None and self._delivered not in webhooks.sender.watchers:
            webhooks.sender.watchers.append(self._delivered)

    def _delivered(self, outcome: str) -> None:
        """An attempt to deliver a webhook came to ``outcome`` (told from
        this process's sender's threads), counted in this process's files."""
        self.counts.add(self.counts.part(), DELIVERIES, (outcome,), 1)

    def serve(self, host: str, port: int) -> None:
        """Serve ``registry`` at ``http://host:port/metrics`` from whichever
        process of the server holds the port (``serve_from_any``): a WSGI
        server's workers find how in ``app.plugged["metrics"]``, importing
        no feature. No server to close: the one that serves is any
        worker's, and stops with it."""
        serve_from_any(self.registry, host, port)

    def begin(self, req: Request) -> None:
        counts = self.counts
        part = counts.part()
        code = _CODES.get(req.method)
        part.method = req.method if code else "_OTHER"
        if part.serving < 0:
            part.serving = counts.at(part, SERVING, (part.number,), 1)
        counts.numbers[part.serving] = code or _CODES["_OTHER"]     # (0: none)
        part.started = perf_counter()

    def end(self, req: Request, response: Response) -> None:
        counts = self.counts
        part = counts.part()
        elapsed = perf_counter() - part.started
        numbers = counts.numbers
        numbers[part.serving] = 0
        route = req.route       # with the application's root (a --prefix), as OpenTelemetry asks
        labels = (part.method, route and req.script_name + route, response.status)
        at = part.requests.get(labels)
        if at is None:
            at = part.requests[labels] = counts.at(part, REQUESTS, labels, _REQUEST_SIZE)
        # Nearly every request falls in the first bucket: one comparison.
        numbers[at + (0 if elapsed <= _FIRST_REQUEST else
                      bisect_left(REQUEST_BUCKETS, elapsed))] += 1
        numbers[at + _REQUEST_SIZE - 1] += elapsed
        if self._pid != counts.pid:     # this process's first request: its own gauges
            self._pid = counts.pid
            counts.set(part, LIMIT, (), self._waiting.most)
            if self._pools:
                threading.Thread(target=self._tell_pools, name="usersvc-metrics-pools",
                                 daemon=True).start()

    def measured(self, collection: str, records: Any) -> Any:
        """``records`` with each operation timed, and its store's commits
        or pool counted."""
        storage = getattr(records, "storage", None)
        if isinstance(storage, CommitsObservable) and not self._commits:
            self._commits = storage.observe_commits(self._committed)
        if hasattr(storage, "pool_use") and not any(s is storage for s in self._pools):
            self._pools.append(storage)
        return Measured(collection, records, self._operation)

    def _operation(self, labels: tuple[str, str], elapsed: float) -> None:
        """A store's call of ``labels`` (collection, operation) took ``elapsed`` s."""
        counts = self.counts
        part = counts.part()
        at = part.operations.get(labels)
        if at is None:
            at = part.operations[labels] = counts.at(part, OPERATIONS, labels, _OPERATION_SIZE)
        numbers = counts.numbers
        numbers[at + (0 if elapsed <= _FIRST_OPERATION else
                      bisect_left(OPERATION_BUCKETS, elapsed))] += 1
        numbers[at + _OPERATION_SIZE - 1] += elapsed

    def _committed(self, seconds: float, writes: int) -> None:
        """A SQLite commit (told from the store's writer thread)."""
        part = self.counts.part()
        self.counts.observe(part, COMMITS, (), COMMIT_BUCKETS, seconds)
        self.counts.observe(part, WRITES, (), GROUP_BUCKETS, writes)

    def _tell_pools(self) -> None:
        """What this process's pools hold, each second (only the process
        can ask them; a scrape reads what it last told)."""
        while True:
            part = self.counts.part()
            uses = [storage.pool_use() for storage in self._pools]
            for name, field in POOL_GAUGES.items():
                self.counts.set(part, name, (), sum(getattr(use, field) for use in uses))
            threading.Event().wait(1.0)

    def now(self) -> Scraped:
        """Every process's counts, as they are (``metrics.Collector``)."""
        with self._reading:
            files = files_in(self.directory)
            alive = {pid for pid, _ in files if _alive(pid)}
            if len(alive) < len(files):         # some have ended: folded first
                fold_ended(self._reader, _alive)     # (asked again: one may have started since)
                files = files_in(self.directory)
            return Scraped(self._reader.read(files), alive, self._commits,
                           self._plugged.get("webhooks"))


class Scraped:
    """What every process in the directory has counted, added up, with the
    methods ``metrics.Collector`` asks: histograms over every process,
    gauges over those alive."""

    def __init__(self, found: list[tuple[int, dict[tuple[str, tuple[Any, ...]], list[float]]]],
                 alive: set[int], commits: bool, webhooks: Any = None) -> None:
        self._found = found
        self._alive = alive          # the processes running (0, those folded, is not)
        self._commits = commits      # whether the stores have SQLite's commits to tell
        self._webhooks = webhooks    # the webhooks feature, if plugged in

    def requests(self) -> dict[Any, Totals]:
        return self._histogram(REQUESTS, REQUEST_BUCKETS)

    def operations(self) -> dict[Any, Totals]:
        return self._histogram(OPERATIONS, OPERATION_BUCKETS)

    def active(self) -> dict[str, int]:
        """What the living processes' threads serve now, by method."""
        return Counter(_METHOD_OF[int(numbers[0])] for pid, series in self._found
                       if pid in self._alive
                       for (name, _), numbers in series.items() if name == SERVING and numbers[0])

    def waiting(self) -> tuple[int, int, int]:
        return (int(self._gauge(WAITING).get((), 0)), int(self._gauge(LIMIT).get((), 0)),
                int(self._gauge(STREAMS).get((), 0)))

    def commits(self) -> tuple[dict[Any, Totals], dict[Any, Totals]] | None:
        if not self._commits:
            return None
        return self._histogram(COMMITS, COMMIT_BUCKETS), self._histogram(WRITES, GROUP_BUCKETS)

    def pools(self) -> dict[str, int]:
        return {name: int(found[()]) for name in POOL_GAUGES
                if () in (found := self._gauge(name))}

    def webhooks(self) -> tuple[dict[str, float], dict[str, int] | None] | None:
        """The webhooks' attempts by outcome, over every process that ever
        ran (a counter, as the histograms); each subscription's lag, read
        from the store by this process (the same whichever process asks:
        not added up)."""
        if self._webhooks is None:
            return None
        from .webhooks import lags
        outcomes = dict.fromkeys(self._webhooks.sender.outcomes, 0.0)   # (each, 0 at first)
        for _, series in self._found:
            for (name, labels), numbers in series.items():
                if name == DELIVERIES:
                    outcomes[labels[0]] = outcomes.get(labels[0], 0.0) + numbers[0]
        return outcomes, lags(self._webhooks)

    def _histogram(self, metric: str, bounds: Sequence[float]) -> dict[Any, Totals]:
        return totals([{labels: numbers for (name, labels), numbers in series.items()
                        if name == metric} for _, series in self._found], bounds)

    def _gauge(self, metric: str) -> dict[tuple[Any, ...], float]:
        summed: dict[tuple[Any, ...], float] = {}
        for pid, series in self._found:
            if pid in self._alive:
                for (name, labels), numbers in series.items():
                    if name == metric:
                        summed[labels] = summed.get(labels, 0) + numbers[0]
        return summed


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: not gone, nor a zombie its server has not yet
    reaped (Linux says which in ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except OSError:     # no /proc here
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # another user's: alive
        return True
    return True


def serve_from_any(registry: CollectorRegistry, host: str, port: int) -> None:
    """Serve ``registry`` at ``http://host:port/metrics`` from this process,
    or, while another process holds the port, try again each second; and
    so in each worker forked from this one (after ``--preload``). uWSGI's
    master, whose ``fork`` leaves no thread of Python running safely,
    starts none of its own: its workers do."""
    def claim() -> None:
        while True:
            try:
                listening = _listening(host, port)
            except OSError as e:
                log.error("cannot serve metrics on %s port %d: %s", host, port,
                          e.strerror or e)
                return
            if listening is not None:
                serve(registry, host, port, sockets=[listening])
                return
            threading.Event().wait(1.0)

    def start() -> None:
        threading.Thread(target=claim, name="usersvc-metrics-claim", daemon=True).start()

    try:
        import uwsgi  # (only inside uWSGI; its types: types-uWSGI)
    except ImportError:
        start()
        os.register_at_fork(after_in_child=start)
        return
    if uwsgi.worker_id() > 0:       # a worker (--lazy-apps)
        start()
        return
    earlier = getattr(uwsgi, "post_fork_hook", None)

    def forked() -> None:
        if earlier:
            earlier()
        start()
    uwsgi.post_fork_hook = forked


def _listening(host: str, port: int) -> socket.socket | None:
    """A socket listening on the address, or ``None`` while another holds it."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(20)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            return None
        raise
    return sock
