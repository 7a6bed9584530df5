"""Metrics summed over every process of a server (gunicorn's workers,
uWSGI's processes), counted in files in a directory they share
(``USERSVC_METRICS_DIR``; docs/deploying.md, "Metrics from every worker").

Each process counts into two files of its own there: ``usersvc-PID.counts``,
an array of numbers mapped into memory, and ``usersvc-PID.series``, a line
for each series the process has counted (its metric, its labels, and where
its numbers are in the array), written before its first count. A count is
an addition or two to the array under one lock: no system call, and the
pages are the kernel's, kept when the process dies, killed or not. A scrape
reads every process's files and adds them up: counters and histograms over
every process that ever ran, gauges over the processes alive; and reports
them through ``metrics.Collector``, as ``serve.py``'s metrics are, so the
names, labels and buckets are the same. Process metrics (``process_*``,
``python_*``) are each process's own, and so not here.

``serve_from_any`` serves the sum from whichever process holds the port
first; the others try again each second, so that when it exits another
takes the port over.
"""
from __future__ import annotations

import errno
import glob
import json
import logging
import mmap
import os
import re
import socket
import threading
import weakref
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from prometheus_client import CollectorRegistry

from .metrics import (COMMIT_BUCKETS, GROUP_BUCKETS, METHODS, OPERATION_BUCKETS,
                      POOL_GAUGES, REQUEST_BUCKETS, Collector, Measured, serve)
from .request import Request, Response
from .tally import Totals, totals

log = logging.getLogger("usersvc")

#: The numbers one process may hold: 8 MiB of address space, of which only
#: the pages written take memory or disk. A histogram's series takes 21.
SLOTS = 1 << 20

REQUESTS, OPERATIONS = "http_server_request_duration_seconds", "usersvc_store_operation_duration_seconds"
COMMITS, WRITES = "usersvc_sqlite_commit_duration_seconds", "usersvc_sqlite_commit_writes"
ACTIVE, WAITING, LIMIT = ("http_server_active_requests", "usersvc_feed_waiting_requests",
                          "usersvc_feed_waiting_requests_limit")


class Counts:
    """This process's numbers, in ``directory``, each thread counting into
    series of its own (so a count takes no lock; a scrape adds the threads'
    series up as it adds the processes'). A thread that ends leaves its
    series to the next thread to start, which counts on in them.
    ``here()`` makes the process's files, before its first count (a
    process forked from another starts files of its own)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()       # for new series, and the files
        self.pid = 0                        # whose files these are (0: none yet)
        self._full = False
        self._left: deque[tuple[int, dict[Any, int]]] = deque()  # of threads that ended: (pid, series)
        self._local = _Thread(self)

    def here(self) -> None:
        if self.pid != os.getpid():
            with self._lock:
                if self.pid != os.getpid():        # (another thread may have, meanwhile)
                    self._start()

    def observe(self, metric: str, labels: tuple[Any, ...], bounds: Sequence[float],
                value: float) -> None:
        """One observation of a histogram: the count of its bucket, and
        the sum (laid out as ``tally.new_counts``)."""
        at = self._at(metric, labels, len(bounds) + 2)
        if at is not None:
            numbers = self._numbers
            numbers[at + (0 if value <= bounds[0] else bisect_left(bounds, value))] += 1
            numbers[at + len(bounds) + 1] += value

    def add(self, metric: str, labels: tuple[Any, ...], amount: float) -> None:
        """A gauge's change (a scrape adds every thread's)."""
        at = self._at(metric, labels, 1)
        if at is not None:
            self._numbers[at] += amount

    def set(self, metric: str, labels: tuple[Any, ...], value: float) -> None:
        """A gauge's value, for a gauge that one thread of a process sets."""
        at = self._at(metric, labels, 1)
        if at is not None:
            self._numbers[at] = value

    def _at(self, metric: str, labels: tuple[Any, ...], size: int) -> int | None:
        """Where this thread's numbers of the series begin; a new series
        is named in the series file before it is counted."""
        local = self._local
        if local.pid != self.pid:          # the thread's first count in this process
            self._take(local)
        at = local.mine.get((metric, labels))
        if at is None:
            with self._lock:
                if self._used + size > SLOTS:
                    if not self._full:
                        self._full = True
                        log.error("metrics: %d numbers counted in this process, as many as "
                                  "it may hold; new series are not counted", SLOTS)
                    return None
                at = local.mine[(metric, labels)] = self._used
                self._used += size
                os.write(self._series, (json.dumps([at, size, metric, labels]) + "\n").encode())
        return at

    def _take(self, local: _Thread) -> None:
        """The series of a thread that ended, or new ones, for this thread."""
        self.here()
        local.mine = {}
        while self._left:
            pid, mine = self._left.popleft()
            if pid == self.pid:            # (not a parent's, left in its own files)
                local.mine = mine
                break
        local.pid = self.pid
        weakref.finalize(threading.current_thread(), self._left.append, (local.pid, local.mine))

    def _start(self) -> None:
        path = os.path.join(self.directory, f"usersvc-{os.getpid()}")
        with open(path + ".counts", "w+b") as file:
            file.truncate(SLOTS * 8)
            self._numbers = memoryview(mmap.mmap(file.fileno(), SLOTS * 8)).cast("d")
        self._series = os.open(path + ".series", os.O_WRONLY | os.O_CREAT | os.O_TRUNC |
                               os.O_APPEND, 0o644)
        self._used = 0
        self.pid = os.getpid()


class _Thread(threading.local):
    """A thread's series: {(metric, labels): where its numbers begin}, in
    the files of process ``pid``."""

    def __init__(self, counts: Counts) -> None:
        self.pid = -1       # none yet
        self.mine: dict[Any, int] = {}


def read(directory: str) -> list[tuple[int, dict[tuple[str, tuple[Any, ...]], list[float]]]]:
    """Every process's series in ``directory``, and their numbers, its
    threads' added up: ``[(pid, {(metric, labels): numbers})]``."""
    found = []
    for path in glob.glob(os.path.join(directory, "usersvc-*.series")):
        pid = int(re.search(r"usersvc-(\d+)\.series$", path).group(1))
        try:
            with open(path, "rb") as file:
                lines = file.read().split(b"\n")[:-1]       # the last may be half written
            series = [json.loads(line) for line in lines]
            end = max((at + size for at, size, _, _ in series), default=0)
            numbers = array("d")
            with open(path[:-len(".series")] + ".counts", "rb") as file:
                numbers.frombytes(file.read(end * 8))
        except FileNotFoundError:
            continue
        summed: dict[tuple[str, tuple[Any, ...]], list[float]] = {}
        for at, size, metric, labels in series:     # each thread's, added up
            part = numbers[at:at + size].tolist()
            earlier = summed.setdefault((metric, tuple(labels)), part)
            if earlier is not part:
                summed[(metric, tuple(labels))] = [a + b for a, b in zip(earlier, part)]
        found.append((pid, summed))
    return found


class SharedMetrics:
    """One app's metrics, counted in ``directory`` with every other
    process's that counts there: ``registry`` (all of them, added up), and
    ``begin``, ``end`` and ``measured`` as ``metrics.Metrics`` has them."""

    def __init__(self, version: str, stores: list[Any], waiting: Any, directory: str) -> None:
        self.directory = directory
        self.counts = Counts(directory)
        self.registry = CollectorRegistry()
        self.registry.register(Collector(self, version))
        self._waiting = waiting
        waiting.watchers.append(lambda n: self.counts.add(WAITING, (), n))
        self._local = threading.local()
        self._pid = 0       # the process of the last request (a worker's first: not this)
        self._pools: list[Any] = []         # the stores with a PostgreSQL pool
        self._commits = False               # whether a store tells its commits

    def plug(self, app: Any) -> SharedMetrics:
        """As ``metrics.Metrics.plug``."""
        app.metrics = self
        app.starters.append(self.begin)
        app.finishers.append(self.end)
        app.store_wrappers.append(self.measured)
        return self

    def begin(self, req: Request) -> None:
        method = req.method if req.method in METHODS else "_OTHER"
        self.counts.here()          # (every count of a process follows its first request's start)
        self.counts.add(ACTIVE, (method,), 1)
        self._local.method, self._local.started = method, perf_counter()

    def end(self, req: Request, response: Response) -> None:
        elapsed = perf_counter() - self._local.started
        method = self._local.method
        self.counts.add(ACTIVE, (method,), -1)
        route = req.route       # with the application's root (a --prefix), as OpenTelemetry asks
        self.counts.observe(REQUESTS, (method, route and req.script_name + route, response.status),
                            REQUEST_BUCKETS, elapsed)
        if self._pid != self.counts.pid:    # this process's first request: its own gauges
            self._pid = self.counts.pid
            self.counts.set(LIMIT, (), self._waiting.most)
            if self._pools:
                threading.Thread(target=self._tell_pools, name="usersvc-metrics-pools",
                                 daemon=True).start()

    def measured(self, collection: str, records: Any) -> Any:
        """``records`` with each operation timed, and its store's commits
        or pool counted."""
        storage = getattr(records, "storage", None)
        if hasattr(storage, "observe_commits") and not self._commits:
            self._commits = storage.observe_commits(lambda seconds, writes: (
                self.counts.observe(COMMITS, (), COMMIT_BUCKETS, seconds),
                self.counts.observe(WRITES, (), GROUP_BUCKETS, writes)))
        if hasattr(storage, "pool_use") and not any(s is storage for s in self._pools):
            self._pools.append(storage)
        return Measured(records, lambda call, operation: self._timed(call, (collection,
                                                                            operation)))

    def _timed(self, call: Callable[..., Any], labels: tuple[str, str]) -> Callable[..., Any]:
        counts = self.counts

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                counts.observe(OPERATIONS, labels, OPERATION_BUCKETS, perf_counter() - started)
        return timed

    def _tell_pools(self) -> None:
        """What this process's pools hold, each second (only the process
        can ask them; a scrape reads what it last told)."""
        while True:
            uses = [storage.pool_use() for storage in self._pools]
            for name, field in POOL_GAUGES.items():
                self.counts.set(name, (), sum(getattr(use, field) for use in uses))
            threading.Event().wait(1.0)

    def now(self) -> Scraped:
        """Every process's counts, as they are (``metrics.Collector``)."""
        return Scraped(read(self.directory), self._commits)


class Scraped:
    """What every process in the directory has counted, added up, with the
    methods ``metrics.Collector`` asks: histograms over every process,
    gauges over those alive."""

    def __init__(self, found: list[tuple[int, dict[tuple[str, tuple[Any, ...]], list[float]]]],
                 commits: bool) -> None:
        self._found = found
        self._commits = commits      # whether the stores have SQLite's commits to tell

    def requests(self) -> dict[Any, Totals]:
        return self._histogram(REQUESTS, REQUEST_BUCKETS)

    def operations(self) -> dict[Any, Totals]:
        return self._histogram(OPERATIONS, OPERATION_BUCKETS)

    def active(self) -> dict[str, int]:
        return {labels[0]: int(n) for labels, n in self._gauge(ACTIVE).items()}

    def waiting(self) -> tuple[int, int]:
        return (int(self._gauge(WAITING).get((), 0)), int(self._gauge(LIMIT).get((), 0)))

    def commits(self) -> tuple[dict[Any, Totals], dict[Any, Totals]] | None:
        if not self._commits:
            return None
        return self._histogram(COMMITS, COMMIT_BUCKETS), self._histogram(WRITES, GROUP_BUCKETS)

    def pools(self) -> dict[str, int]:
        return {name: int(found[()]) for name in POOL_GAUGES
                if () in (found := self._gauge(name))}

    def _histogram(self, metric: str, bounds: Sequence[float]) -> dict[Any, Totals]:
        return totals([{labels: numbers for (name, labels), numbers in series.items()
                        if name == metric} for _, series in self._found], bounds)

    def _gauge(self, metric: str) -> dict[tuple[Any, ...], float]:
        summed: dict[tuple[Any, ...], float] = {}
        for pid, series in self._found:
            if _alive(pid):
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
        import uwsgi  # type: ignore[import-not-found]   # only inside uWSGI
    except ImportError:
        start()
        os.register_at_fork(after_in_child=start)
        return
    if uwsgi.worker_id() > 0:       # a worker (--lazy-apps)
        start()
        return
    earlier = getattr(uwsgi, "post_fork_hook", None)
    uwsgi.post_fork_hook = lambda: (earlier and earlier(), start())


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
