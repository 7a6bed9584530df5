"""What every store shares at run time: the errors a store raises,
``Precondition``, ``Watch`` (requests waiting for changes), ``WriteHealth``
and ``checked_id``. What a store promises is ``protocol``'s (``RecordStore``,
``Storage``); opening one is ``opening``'s (``open_store``).

Errors::

    StoreError
     +-- NotFound          no record with that id        (HTTP 404)
     +-- Conflict          a unique field is taken       (HTTP 409)
     +-- StaleVersion      a precondition does not hold  (HTTP 412)
     +-- Contradiction     the call contradicts what the store keeps (HTTP 422)
          +-- KeyReused    an idempotency key, another request (``keys``)
     +-- StoreUnavailable  busy or down; try again later (HTTP 503)
          +-- WritesFailing  a full disk, an I/O error, a read-only database (HTTP 503)
    SchemaMismatch         a stored collection the schema cannot open as it is
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..validation import Schema, pointer

_log = logging.getLogger("usersvc.storage")

__all__ = ["MAX_ID", "Conflict", "Contradiction", "NotFound", "Position", "Precondition",
           "RecordStore", "SchemaMismatch", "SchemaTooNew", "StaleVersion", "Storage", "StoreError",
           "StoreUnavailable", "Watch", "WriteHealth", "WritesFailing", "check_fresh_ids",
           "checked_id", "open_store", "position", "redact"]

#: The largest id any store can hold: SQLite's (and PostgreSQL's) 64-bit integer.
MAX_ID = 2**63 - 1


class StoreError(Exception):
    """Base of the errors a store raises; ``str()`` is a sentence for people,
    ``errors`` the fields at fault, as ``(JSON Pointer, detail)`` pairs."""

    @property
    def errors(self) -> list[tuple[str, str]]:
        return []


class NotFound(StoreError):
    """There is no record with that id (never was, or was deleted)."""

    def __init__(self, schema: Schema, record_id: int):
        super().__init__(f"There is no {schema.name} with id {record_id}.")
        self.record_id = record_id


class Conflict(StoreError):
    """A unique field's value already belongs to another record (``field``:
    which; empty when it cannot be told, as in a restore)."""

    def __init__(self, detail: str, field: str = ""):
        super().__init__(detail)
        self.field = field

    @classmethod
    def taken(cls, schema: Schema, field: str, value: Any) -> Conflict:
        noun = schema.fields[field].noun or field
        return cls(f"The {noun} {value} belongs to another {schema.name}.", field)

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(pointer(self.field), "is already taken")] if self.field else []


class StaleVersion(StoreError):
    """The record exists, but its version does not satisfy the precondition."""

    def __init__(self, record_id: int):
        super().__init__(
            f"The precondition failed: record {record_id} has changed or does not match."
        )
        self.record_id = record_id


class Contradiction(StoreError):
    """The call contradicts what the store keeps (``keys.KeyReused``)."""


class StoreUnavailable(StoreError):
    """No answer now (a lock held too long, a lost connection); nothing was
    changed, and the call may work later."""


class WritesFailing(StoreUnavailable):
    """A cause outside the store stops its writes until it is put right (a
    full disk, an I/O error, a read-only database); reads work, nothing was
    changed, and writes work again once the cause is gone."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"The store cannot write now: {reason}. Nothing was changed; "
                         "try again later.")
        self.reason = reason


class WriteHealth:
    """Whether a store's writes are failing (``WritesFailing``), for
    ``/healthz``; the log says so once when an episode starts, at ERROR,
    with its cause in one line, and once when a write works again."""

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


@dataclass(frozen=True, slots=True)
class Precondition:
    """``If-Match`` / ``If-None-Match``, reduced to the versions they name.

    ``match`` is the set of versions a write may replace (``None``: any);
    ``none_match`` the set it may not (``None``: every version, as ``*`` says).
    """

    match: frozenset[int] | None = None
    none_match: frozenset[int] | None = frozenset()

    def allows(self, version: int) -> bool:
        if self.match is not None and version not in self.match:
            return False
        if self.none_match is None or version in self.none_match:
            return False
        return True


class Watch:
    """Requests waiting for the store's position to pass theirs."""

    def __init__(self, position: Callable[[], int], interval: float | None = None) -> None:
        self._position = position
        self._interval = interval
        self._changed = threading.Condition(threading.Lock())
        self._notified = 0          # how many times notify was called
        self._waiting = 0           # how many calls wait now
        self._closed = False

    def notify(self) -> None:
        """A change was committed (here, or announced): wake the waiters.
        (PERF: a plain lock, no wake-up when no one waits: 0.2 µs, not 0.5.)"""
        with self._changed:
            self._notified += 1
            if self._waiting:
                self._changed.notify_all()

    def wait(self, after: int, timeout: float) -> None:
        """Until the store's position is past ``after``, ``timeout`` passes,
        or the store closes. (A notify while the position is read counts.)"""
        deadline = time.monotonic() + timeout
        with self._changed:
            seen = self._notified
        while not self._closed and self._position() <= after:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._changed:
                if self._notified == seen and not self._closed:
                    self._waiting += 1
                    try:
                        self._changed.wait(left if self._interval is None
                                           else min(left, self._interval))
                    finally:
                        self._waiting -= 1
                seen = self._notified

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()


# What a store promises, and opening one: start-up's, not a request's.
from .protocol import Position, RecordStore, Storage, position  # noqa: E402
from .opening import (SchemaMismatch, SchemaTooNew, check_fresh_ids, open_store,  # noqa: E402
                      redact)
