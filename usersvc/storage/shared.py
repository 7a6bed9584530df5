"""What every store shares at run time: ``Watch`` (requests waiting for
changes), ``WriteHealth``, ``checked_id``; its promises and
errors are ``protocol``'s."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..fields import MAX_INTEGER
from ..validation import Schema
from .protocol import NotFound, WritesFailing


_log = logging.getLogger("usersvc.storage")

#: The largest id any store can hold: SQLite's (and PostgreSQL's) 64-bit integer.
MAX_ID = MAX_INTEGER


class WriteHealth:
    """Whether a store's writes are failing (``WritesFailing``), for
    ``/healthz``; logged once when it starts (ERROR, the cause) and ends."""

    def __init__(self, name: str) -> None:
        self.name = name                    # the file or database, for the log
        self.failing: str | None = None     # the reason, while it lasts
        self._lock = threading.Lock()

    def failed(self, reason: str, cause: str) -> WritesFailing:
        """The error to raise for a write that failed for ``cause``."""
        with self._lock:
            if self.failing is None:
                _log.error("writes are failing: %s: %s", cause, self.name)
            self.failing = reason
        return WritesFailing(reason)

    def worked(self) -> None:
        """A write was committed."""
        if self.failing is not None:        # one attribute read a write while all is well
            with self._lock:
                if self.failing is not None:
                    _log.warning("writes work again: %s", self.name)
                    self.failing = None


def checked_id(schema: Schema, record_id: int) -> int:
    """``record_id`` if a store can hold it (1 to ``MAX_ID``), else ``NotFound``:
    every store asks first, so no id is out of range for one and absent from another."""
    if not 0 < record_id <= MAX_ID:
        raise NotFound(schema, record_id)
    return record_id


class Watch:
    """Requests waiting for the store's position to pass theirs."""

    def __init__(self, position: Callable[[], int]) -> None:
        self._position = position
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._notified = 0          # how many times notify was called
        self._waiting = 0           # how many calls wait now
        self._closed = False

    def notify(self) -> None:
        """A change was committed (here, or announced): wake the waiters.
        (PERF: a plain lock, taken as itself rather than through the
        condition's Python methods, and no wake-up when no one waits.)"""
        with self._lock:
            self._notified += 1
            if self._waiting:
                self._changed.notify_all()

    def wait(self, after: int, timeout: float, nudge: Nudge | None = None) -> bool:
        """Until the store's position is past ``after``, ``timeout`` passes,
        ``nudge`` is set, or the store closes; whether it is still open.
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
                        self._changed.wait(left)
                    finally:
                        self._waiting -= 1
                seen = self._notified
        return not self._closed

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()


class Nudge:
    """Ends one ``Watch.wait`` early once ``set``, until ``clear``: a stream
    asked to write at once (``features.waiting.slots.Waiting``)."""

    is_set = False
    watch: Watch | None = None          # the one it waits on, once it waits

    def set(self) -> None:
        self.is_set = True
        if self.watch is not None:
            self.watch.notify()         # (the others woken look again, and wait on)

    def clear(self) -> None:
        self.is_set = False
