"""The files a process counts its metrics in (``shared``'s), and
reading every process's back: ``usersvc-PID.counts``, an array of numbers
mapped into memory, and ``usersvc-PID.series``, a line for each series
(its metric, its labels, and where its numbers are in the array), written
before its first count. A count is an addition in memory: no lock, no
system call, and the pages are the kernel's, kept when the process dies,
killed or not. This module depends on nothing of usersvc's.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import glob
import json
import logging
import mmap
import os
import re
import threading
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("usersvc")

#: The numbers one process may hold: 8 MiB of address space, of which only
#: the pages written take memory or disk. A histogram's series takes 21.
SLOTS = 1 << 20
#: The first numbers, which no series names: where a process counts what
#: it has no room left for.
UNREAD = 64
#: A process's series file's name (another there, ``usersvc-x.series``, is none of ours).
_SERIES = re.compile(r"usersvc-(\d+)\.series$")


class Counts:
    """This process's numbers, in ``directory``. Each thread counts into
    series of its own, its ``Part`` (so a count takes no lock; a scrape
    adds the threads' series up as it adds the processes'), and a thread
    that ends leaves its part to the next thread to start, which counts on
    in it. A process makes its files at its first count; one forked from
    another, files of its own."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._lock = threading.Lock()       # for new series, and the files
        self.pid = 0                        # whose files these are (0: none yet)
        self._full = False
        self._left: deque[Part] = deque()   # the parts of threads that ended
        self._threads = _Threads()
        os.register_at_fork(after_in_child=functools.partial(_forked, weakref.ref(self)))

    def part(self) -> Part:
        """This thread's part, in this process's files."""
        part = self._threads.part
        if part.pid != self.pid or not self.pid:   # its first count here
            part = self._threads.part = self._take()
        return part

    def observe(self, part: Part, metric: str, labels: tuple[Any, ...],
                bounds: Sequence[float], value: float) -> None:
        """One observation of a histogram: the count of its bucket, and
        the sum (laid out as ``tally.new_counts``)."""
        at = self.at(part, metric, labels, len(bounds) + 2)
        numbers = self.numbers
        numbers[at + (0 if value <= bounds[0] else bisect_left(bounds, value))] += 1
        numbers[at + len(bounds) + 1] += value

    def add(self, part: Part, metric: str, labels: tuple[Any, ...], amount: float) -> None:
        """A gauge's change (a scrape adds every thread's)."""
        self.numbers[self.at(part, metric, labels, 1)] += amount

    def set(self, part: Part, metric: str, labels: tuple[Any, ...], value: float) -> None:
        """A gauge's value, for a gauge that one thread of a process sets."""
        self.numbers[self.at(part, metric, labels, 1)] = value

    def at(self, part: Part, metric: str, labels: tuple[Any, ...], size: int) -> int:
        """Where the part's ``size`` numbers of the series begin in
        ``numbers``; a new series is named in the series file before it is
        counted. Past ``SLOTS``, a place no scrape reads."""
        at = part.at.get((metric, labels))
        if at is not None:
            return at
        with self._lock:
            if self._used + size > SLOTS:
                if not self._full:
                    self._full = True
                    log.error("metrics: %d numbers counted in this process, as many as it may "
                              "hold; new series are not counted", SLOTS)
                return 0
            at = part.at[(metric, labels)] = self._used
            self._used += size
            os.write(self._series, (json.dumps([at, size, metric, labels]) + "\n").encode())
            return at

    def _take(self) -> Part:
        """A part for this thread: one a thread that ended left, or new."""
        with self._lock:
            if not self.pid:
                self._start()
            if self._left:
                part = self._left.popleft()
            else:
                part = Part(self.pid, self._made)
                self._made += 1
        weakref.finalize(threading.current_thread(), self._left.append, part)
        return part

    def _start(self) -> None:
        pid = os.getpid()
        path = os.path.join(self.directory, f"usersvc-{pid}")
        with open(path + ".counts", "w+b") as file:
            file.truncate(SLOTS * 8)
            self.numbers = memoryview(mmap.mmap(file.fileno(), SLOTS * 8)).cast("d")
        self._series = os.open(path + ".series", os.O_WRONLY | os.O_CREAT | os.O_TRUNC |
                               os.O_APPEND, 0o644)
        self._used = UNREAD
        self._made = 0
        self.pid = pid


def _forked(counts: weakref.ref[Counts]) -> None:
    """In a forked process: files of its own at its first count (the
    parent's parts, and lock, are the parent's)."""
    found = counts()
    if found is not None:
        found.pid = 0
        found._lock = threading.Lock()
        found._left.clear()


class Part:
    """One thread's series in the files of process ``pid``: {(metric,
    labels): where its numbers begin}; and the request it serves (its
    method and when it began, ``SharedMetrics``')."""

    __slots__ = ("pid", "number", "at", "method", "started", "serving", "requests",
                 "operations")

    def __init__(self, pid: int, number: int = 0) -> None:
        self.pid = pid
        self.number = number                # the process's parts: 0, 1, 2...
        self.at: dict[tuple[str, tuple[Any, ...]], int] = {}
        self.method = ""
        self.started = 0.0
        self.serving = -1                   # where it says what it serves (-1: not yet)
        # Found in ``at`` once, then here, by labels alone (the hot paths).
        self.requests: dict[tuple[str, str, int], int] = {}
        self.operations: dict[tuple[str, str], int] = {}


class _Threads(threading.local):
    def __init__(self) -> None:         # in each thread, at its first use
        self.part = Part(-1)            # none yet


def read(directory: str) -> list[tuple[int, dict[tuple[str, tuple[Any, ...]], list[float]]]]:
    """Every process's series in ``directory``, and their numbers, its
    threads' added up: ``[(pid, {(metric, labels): numbers})]``; those
    of the processes ``fold_ended`` has folded, as one of pid 0."""
    reader = Reader(directory)
    try:
        return reader.read()
    finally:
        reader.close()


class Reader:
    """Reads ``directory`` again at each ``read()``, with the files it has
    read before kept open: a process's series file read only as it grows,
    its numbers from a mapping, so that a scrape makes few system calls
    (each one lets a busy worker's threads take the interpreter back)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._open: dict[int, _Opened] = {}

    def read(self, files: list[tuple[int, str]] | None = None
             ) -> list[tuple[int, dict[tuple[str, tuple[Any, ...]], list[float]]]]:
        """As ``read``, of ``files`` (``_files``'s; found here if not given)."""
        ended = _ended(self.directory)
        found = [(0, {(metric, tuple(labels)): numbers
                      for metric, labels, numbers in ended["series"]})] if ended["series"] else []
        files = files_in(self.directory) if files is None else files
        for gone in set(self._open) - {pid for pid, _ in files}:
            self._open.pop(gone).close()
        for pid, path in files:
            if pid in ended["pids"]:
                continue
            try:
                opened = self._open.get(pid) or self._open.setdefault(pid, _Opened(path))
                found.append((pid, opened.read()))
            except (FileNotFoundError, ValueError):     # (folded meanwhile; or not yet sized)
                self._open.pop(pid, None)
        return found

    def close(self) -> None:
        while self._open:
            self._open.popitem()[1].close()


class _Opened:
    """One process's files, open."""

    def __init__(self, path: str) -> None:
        self.series: list[Any] = []
        with open(path[:-len(".series")] + ".counts", "rb") as file:
            self._numbers = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        self._view = memoryview(self._numbers).cast("d")
        try:
            self._lines = open(path, "rb")     # noqa: SIM115 (kept open: ``close``)
        except OSError:
            self._view.release()
            self._numbers.close()
            raise
        self._rest = b""

    def read(self) -> dict[tuple[str, tuple[Any, ...]], list[float]]:
        *lines, self._rest = (self._rest + self._lines.read()).split(b"\n")
        self.series += [json.loads(line) for line in lines]     # (the rest: half written)
        view = self._view
        return _summed((metric, labels, view[at:at + size].tolist())
                       for at, size, metric, labels in self.series)

    def close(self) -> None:
        self._lines.close()
        self._view.release()
        self._numbers.close()


def fold_ended(reader: Reader, alive: Callable[[int], bool]) -> None:
    """Add the numbers of the processes that have ended into one file,
    ``usersvc-ended.json``, and remove theirs: a server that replaces its
    workers often keeps a pair of files for each living one and one for all
    the others. (Their gauges go too: a scrape counts none of pid 0's.)
    One process folds at a time; one that stops halfway leaves the files
    it folded listed, and the next removes them. (``reader``: the files,
    read as the scrape reads them.)"""
    directory = reader.directory
    with open(os.path.join(directory, "usersvc-ended.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ended = _ended(directory)
        dead = [(pid, path) for pid, path in files_in(directory)
                if pid not in ended["pids"] and not alive(pid)]
        if dead:
            found = dict(reader.read())
            series = [(metric, labels, numbers) for pid, _ in [(0, "")] + dead
                      for (metric, labels), numbers in found.get(pid, {}).items()]
            ended = {"pids": ended["pids"] + [pid for pid, _ in dead],
                     "series": [[m, k, n] for (m, k), n in _summed(series).items()]}
            _write_ended(directory, ended)
        if ended["pids"]:
            for pid in ended["pids"]:
                for suffix in (".series", ".counts"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(directory, f"usersvc-{pid}{suffix}"))
            _write_ended(directory, {"pids": [], "series": ended["series"]})


def _summed(series: Any) -> dict[tuple[str, tuple[Any, ...]], list[float]]:
    """``(metric, labels, numbers)`` added up by metric and labels."""
    summed: dict[tuple[str, tuple[Any, ...]], list[float]] = {}
    for metric, labels, numbers in series:
        key = (metric, tuple(labels))
        earlier = summed.get(key)
        summed[key] = numbers if earlier is None else [
            a + b for a, b in zip(earlier, numbers, strict=False)]
    return summed


def files_in(directory: str) -> list[tuple[int, str]]:
    """Each process's series file: ``[(pid, path)]``."""
    return [(int(found.group(1)), path)
            for path in glob.glob(os.path.join(directory, "usersvc-*.series"))
            if (found := _SERIES.search(path))]


def _ended(directory: str) -> dict[str, Any]:
    try:
        with open(os.path.join(directory, "usersvc-ended.json")) as file:
            ended: dict[str, Any] = json.load(file)     # (ours: ``_write_ended``'s)
            return ended
    except FileNotFoundError:
        return {"pids": [], "series": []}


def _write_ended(directory: str, ended: dict[str, Any]) -> None:
    """Replaced whole, so that a reader finds the old or the new."""
    path = os.path.join(directory, "usersvc-ended.json")
    with open(path + ".new", "w") as file:
        json.dump(ended, file)
    os.replace(path + ".new", path)
