"""Tallies: observations counted into buckets by their labels, the counts a
Prometheus histogram reports, kept without a lock.

Each thread counts into a dict of its own, so an observation takes no
lock (``prometheus_client``'s histogram takes two, and costs several times
as much: docs/decisions.md, "Metrics"). A read adds the threads' counts
together; it may miss an observation's sum for a moment, never counts one
twice, and no count goes down (ended threads' counts are kept:
``PerThread``). This module depends on nothing.
"""
from __future__ import annotations

import threading
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from itertools import accumulate
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")
R = TypeVar("R")
K = TypeVar("K", bound=Hashable)


class Totals(NamedTuple):
    """One label set's observations: ``buckets[i]`` is how many were at
    most ``bounds[i]`` (cumulative, as Prometheus reports them; the last is
    every observation, ``le="+Inf"``, their count), and ``sum`` their sum.
    (Whole numbers, as floats where read from files: ``shared``.)"""

    buckets: list[float]
    sum: float


class Tally:
    """Observations by label set (a tuple), in buckets of upper ``bounds``.

    Each thread's counts are a dict: {label set: [how many fell in each
    bucket, the last past every bound..., their sum]} (``new_counts``)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        if not bounds or list(bounds) != sorted(set(bounds)):
            raise ValueError(f"bucket bounds must increase: {bounds}")
        self.bounds = tuple(float(b) for b in bounds)
        self._parts: PerThread[dict[Hashable, list[float]]] = PerThread(dict, fold_counts)

    def observe(self, labels: Hashable, value: float) -> None:
        mine = self._parts.local.mine
        counts = mine.get(labels)
        if counts is None:
            counts = mine[labels] = new_counts(self.bounds)
        counts[bisect_left(self.bounds, value)] += 1     # the first bound >= value: le is inclusive
        counts[-1] += value

    def parts(self) -> list[dict[Hashable, list[float]]]:
        """Each thread's counts (those of ended threads as one), for ``totals``."""
        return self._parts.read(list)

    def totals(self) -> dict[Hashable, Totals]:
        """Every label set's observations so far, all threads together."""
        return totals(self.parts(), self.bounds)


class PerThread(Generic[T]):
    """Each thread's part of some counts, written by that thread alone:
    ``local.mine``, made by ``make()`` at the thread's first use of it.

    ``read(reader)`` hands ``reader`` every part: one for each thread
    still running, and one into which ``fold(into, part)`` has added the
    parts of the threads that have ended, so that a server that starts a
    thread for every request keeps a part for each thread it runs, not
    one for each request it has served. Folding happens under the lock
    the readers hold, so no read counts a part twice or misses one."""

    def __init__(self, make: Callable[[], T], fold: Callable[[T, T], None]) -> None:
        self._make, self._fold = make, fold
        self._lock = threading.Lock()
        self._running: list[T] = []
        self._ended = make()
        self._ending: deque[T] = deque()       # appended to from any thread, at any time
        self.local = _Local(self)

    def read(self, reader: Callable[[list[T]], R]) -> R:
        with self._lock:
            self._fold_ended()
            return reader([self._ended, *self._running])

    def _start(self) -> T:
        mine = self._make()
        with self._lock:
            self._fold_ended()
            self._running.append(mine)
        # When the thread is gone its part is final: folded at the next
        # read or start (deque.append is all a finalizer may safely do).
        weakref.finalize(threading.current_thread(), self._ending.append, mine)
        return mine

    def _fold_ended(self) -> None:
        while self._ending:
            part = self._ending.popleft()
            self._running.remove(part)
            self._fold(self._ended, part)


class _Local(threading.local, Generic[T]):
    def __init__(self, parts: PerThread[T]) -> None:     # in each thread, at its first use
        self.mine = parts._start()


def new_counts(bounds: Sequence[float]) -> list[float]:
    """A label set's counts, none yet: one per bucket, one past every
    bound, and the sum."""
    return [0] * (len(bounds) + 1) + [0.0]


def fold_counts(into: dict[K, list[float]], part: dict[K, list[float]]) -> None:
    """Add one thread's counts (as ``Tally`` keeps them) to ``into``."""
    for labels, counts in part.items():
        mine = into.get(labels)
        if mine is None:
            into[labels] = list(counts)
        else:
            for i, n in enumerate(counts):
                mine[i] += n


def totals(parts: list[dict[K, list[float]]], bounds: Sequence[float]) -> dict[K, Totals]:
    """Several threads' counts (as ``Tally`` keeps them), added together.
    Each is copied in one step (``list()`` of a dict or a list lets no
    other thread in), while the threads count on."""
    merged: dict[K, list[float]] = {}
    for part in parts:
        for labels, counts in list(part.items()):
            fold_counts(merged, {labels: list(counts)})
    return {labels: Totals(list(accumulate(counts[:-1])), counts[-1])
            for labels, counts in merged.items()}
