"""Requests waiting for changes (long-polls, streams), woken when their
collection's store announces a commit.

Each feed has a ``Watch``: the requests waiting for its position to pass
theirs, who read the position (the store's ``position()``) as they start
and when woken, never in between, so an idle waiter costs nothing. One
app's watches are its ``Watches``, which listen to the store's commits
(``storage.protocol.CommitsAnnounced``: one callback for every commit, of
this process or another) and wake the watch of the collection each names:
one listener per app, however many wait. They listen from the first
request that waits, so an app whose requests never wait starts no look
for other processes' commits (SQLite's polling thread, PostgreSQL's
listening connection). A ``Nudge`` ends one wait early (a stream asked to
write at once, ``slots.Slots``).

A store that announces nothing (an embedder's own, without the
capability) is still waited on: its waiting requests read the position
every ``POLL_SECONDS`` (a change is seen that much later, at most).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ...storage.protocol import CommitsAnnounced

#: Seconds between two reads of the position by a request waiting on a
#: store that announces no commits: how late it sees a change, at most.
POLL_SECONDS = 1.0


class Watch:
    """Requests waiting for a feed's position to pass theirs: woken by
    ``notify`` (a commit announced), or, ``every`` so many seconds, to read
    the position again (a store that announces none)."""

    def __init__(self, position: Callable[[], int], every: float | None = None) -> None:
        self._position = position
        self._every = every
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._notified = 0          # how many times notify was called
        self._waiting = 0           # how many calls wait now
        self._closed = False

    def notify(self) -> None:
        """A change was committed (here, or announced): wake the waiters,
        if any wait (the condition's lock, taken as itself)."""
        with self._lock:
            self._notified += 1
            if self._waiting:
                self._changed.notify_all()

    def wait(self, after: int, timeout: float, nudge: Nudge | None = None) -> bool:
        """Until the position is past ``after``, ``timeout`` passes,
        ``nudge`` is set, or the watch closes; whether it is still open.
        (A notify while the position is read counts.)"""
        deadline = time.monotonic() + timeout
        if nudge is not None:
            nudge.watch = self
        with self._changed:
            seen = self._notified
        while not (self._closed or nudge and nudge.is_set) and self._position() <= after:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            with self._changed:
                if self._notified == seen and not self._closed:
                    self._waiting += 1
                    try:
                        self._changed.wait(left if self._every is None else
                                           min(left, self._every))
                    finally:
                        self._waiting -= 1
                seen = self._notified
        return not self._closed

    def close(self) -> None:
        """Every wait answered now, and every later one at once."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()


class Nudge:
    """Ends one ``Watch.wait`` early once ``set``, until ``clear``: a stream
    asked to write at once (``slots.Slots``)."""

    is_set = False
    watch: Watch | None = None          # the one it waits on, once it waits

    def set(self) -> None:
        self.is_set = True
        if self.watch is not None:
            self.watch.notify()         # (the others woken look again, and wait on)

    def clear(self) -> None:
        self.is_set = False


class Watches:
    """One app's ``Watch`` of each feed, woken by the store's announcements
    (``CommitsAnnounced``), listened to from the first request that waits
    (``listen``) until the store closes (it says so: every watch closed,
    nothing more will come) or the app does (``stop``). ``storage``: the
    store the app's collections come from (``None``: one collection's
    records, served alone, which announce for their store if it does)."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage
        self._announcing: Any = None        # the store that announces, if it does
        self._watches: dict[str, Watch] = {}
        self._lock = threading.Lock()
        self._listening = False             # (once true, never false again)
        self._stop: Callable[[], None] | None = None

    def add(self, plural: str, records: Any) -> Watch:
        """The watch of a collection's feed, as the app adds it (``records``
        as served: their ``position``, read by its waiters)."""
        store = records if self._storage is None else self._storage
        announces = isinstance(store, CommitsAnnounced)
        if announces:
            self._announcing = store
        watch = self._watches[plural] = Watch(records.position,
                                              None if announces else POLL_SECONDS)
        return watch

    def listen(self) -> None:
        """The store's commits listened to from now on (asked at each wait:
        the first listens, once for the app)."""
        if self._listening or self._announcing is None:
            return
        with self._lock:
            if not self._listening:
                self._listening = True
                self._stop = self._announcing.announce_commits(self._told)

    def _told(self, plural: str | None) -> None:
        """A commit changed ``plural`` (``None``: the store closed)."""
        if plural is None:
            self.close()
            return
        watch = self._watches.get(plural)
        if watch is not None:           # (a collection of the store this app does not serve)
            watch.notify()

    def close(self) -> None:
        """Every request waiting answered now, and every later one at once
        (the server stops, or the store closed)."""
        for watch in list(self._watches.values()):
            watch.close()

    def stop(self) -> None:
        """``close``, and the store no longer listened to (the app closes)."""
        self.close()
        with self._lock:
            self._listening, stop, self._stop = True, self._stop, None
        if stop is not None:
            stop()


__all__ = ["Nudge", "POLL_SECONDS", "Watch", "Watches"]
