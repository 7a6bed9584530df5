"""Tallies: observations counted into buckets by their labels, the counts
a Prometheus histogram reports, kept without a lock.

A ``Tally`` is written by the threads that serve requests (and by the
SQLite writer's thread) and read by whoever exposes it
(``usersvc.metrics``, at a scrape). Each thread counts into a dict of its
own, so no two threads ever write the same list and an observation takes
no lock: ``prometheus_client``'s own histogram takes two per observation,
and costs several times as much (docs/decisions.md, "Metrics"). A read
adds the threads' counts together; one made while a thread observes may
miss that observation's sum for a moment, as ``prometheus_client``'s may,
but never counts one twice, and no count ever goes down (the dicts of
threads that have ended are kept, and their counts with them).

This module depends on nothing, so that stores count what they do whether
or not ``prometheus_client`` is installed.
"""
from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Hashable, Sequence
from itertools import accumulate
from typing import NamedTuple


class Totals(NamedTuple):
    """One label set's observations: ``buckets[i]`` is how many were at
    most ``bounds[i]`` (cumulative, as Prometheus reports them; the last is
    every observation, ``le="+Inf"``), and ``sum`` their sum."""

    buckets: list[int]
    sum: float

    @property
    def count(self) -> int:
        return self.buckets[-1]


class Tally:
    """Observations by label set (a tuple), in buckets of upper ``bounds``.

    Each thread's counts are a dict: {label set: [how many fell in each
    bucket, the last past every bound..., their sum]} (``new``)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        if not bounds or list(bounds) != sorted(set(bounds)):
            raise ValueError(f"bucket bounds must increase: {bounds}")
        self.bounds = tuple(float(b) for b in bounds)
        self._every: list[dict[Hashable, list[float]]] = []     # each thread's, once
        self._threads = _PerThread(self._every)

    def new(self) -> list[float]:
        """Counts for a label set not seen before: none in each bucket, sum 0."""
        return new_counts(self.bounds)

    def observe(self, labels: Hashable, value: float) -> None:
        mine = self._threads.counts
        counts = mine.get(labels)
        if counts is None:
            counts = mine[labels] = self.new()
        counts[bisect_left(self.bounds, value)] += 1     # the first bound >= value: le is inclusive
        counts[-1] += value

    def totals(self) -> dict[Hashable, Totals]:
        """Every label set's observations so far, all threads together."""
        return totals(list(self._every), self.bounds)


def new_counts(bounds: Sequence[float]) -> list[float]:
    """A label set's counts, none yet: one per bucket, one past every
    bound, and the sum."""
    return [0] * (len(bounds) + 1) + [0.0]


def totals(threads: list[dict[Hashable, list[float]]],
           bounds: Sequence[float]) -> dict[Hashable, Totals]:
    """Several threads' counts (as ``Tally`` keeps them), added together.
    Each is copied in one step (``list()`` of a dict or a list lets no
    other thread in), while the threads count on."""
    merged: dict[Hashable, list[float]] = {}
    for mine in threads:
        for labels, counts in list(mine.items()):
            into = merged.setdefault(labels, new_counts(bounds))
            for i, n in enumerate(list(counts)):
                into[i] += n
    return {labels: Totals(list(accumulate(counts[:-1])), counts[-1])
            for labels, counts in merged.items()}


class _PerThread(threading.local):
    """A dict of counts for each thread, made at its first observation and
    added to ``every``, where the readers find it."""

    def __init__(self, every: list[dict[Hashable, list[float]]]) -> None:
        self.counts: dict[Hashable, list[float]] = {}
        every.append(self.counts)       # list.append: safe from any thread
