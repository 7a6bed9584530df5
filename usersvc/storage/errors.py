"""What a store answers with when it does not answer with records: its
errors, and the precondition a write is held to. A request that meets
a store meets these (a 404, 409, 412, 422 or 503: ``problems`` maps each
to its status), whichever store it is; what each method of a store
raises is said in ``protocol``.

    StoreError
     +-- NotFound          no record with that id        (HTTP 404; also one out of range)
     +-- Conflict          a unique field is taken       (HTTP 409)
          +-- Referred     a record that refs name, deleted (``served.Checked``)
     +-- StaleVersion      a ``Precondition`` does not hold  (HTTP 412)
     +-- Contradiction     the call contradicts what the store keeps (HTTP 422;
          |                a feature may raise its own)
          +-- NotCurrent   a timestamp sent that is not the record's (``served.Checked``)
          +-- Dangling     a ref that names no record (``served.Checked``)
     +-- StoreUnavailable  busy or down; try again later (HTTP 503)
          +-- WritesFailing  a full disk, an I/O error, a read-only database
                             (HTTP 503; ``WriteHealth`` says when it starts and ends)
    SchemaMismatch         a stored collection the schema cannot open as it is (``stored``)
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..fields import MAX_INTEGER
from ..schema import Schema, pointer

_log = logging.getLogger("usersvc.storage")

#: The largest id any store can hold: SQLite's (and PostgreSQL's) 64-bit integer.
MAX_ID = MAX_INTEGER


class StoreError(Exception):
    """Base of the errors a store raises; ``str()`` is a sentence for people,
    ``errors`` the fields at fault, as ``(JSON Pointer, detail)`` pairs."""

    errors: Sequence[tuple[str, str]] = ()


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
        self.errors = [(pointer(field), "is already taken")] if field else []

    @classmethod
    def taken(cls, schema: Schema, field: str, value: Any) -> Conflict:
        noun = schema.fields[field].noun or field
        return cls(f"The {noun} {value} belongs to another {schema.name}.", field)


class Referred(Conflict):
    """A record that others refer to cannot be deleted (409)."""

    def __init__(self, schema: Schema, record_id: int, referrer: Schema, field: str) -> None:
        super().__init__(f"The {schema.name} {record_id} is the {field} of one or more "
                         f"{referrer.plural}: change or delete them first.")


class StaleVersion(StoreError):
    """The record exists, but its version does not satisfy the precondition."""

    def __init__(self, record_id: int):
        super().__init__(f"The precondition failed: record {record_id} has changed or does "
                         "not match.")
        self.record_id = record_id


class Contradiction(StoreError):
    """The call contradicts what the store keeps (a feature may raise its
    own: ``Problem.from_error`` answers any with a 422)."""


class NotCurrent(Contradiction):
    """A write sent a timestamp other than the record's (422, at the field)."""

    def __init__(self, field: str) -> None:
        super().__init__(f"The {field} time is set by the service: send its current value, "
                         "or leave it out.")
        self.errors = [(pointer(field), "is set by the service: send its current value "
                                        "or leave it out")]


class Dangling(Contradiction):
    """A ``ref`` names a record that does not exist (422, at the field)."""

    def __init__(self, target: Schema, field: str, record_id: int) -> None:
        super().__init__(f"There is no {target.name} {record_id}.")
        self.errors = [(pointer(field), f"there is no {target.name} {record_id}")]


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
        """A write was committed after writes failed (a store asks
        ``failing`` first: one attribute read a write while all is well)."""
        with self._lock:
            if self.failing is not None:
                _log.warning("writes work again: %s", self.name)
                self.failing = None


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
        return self.none_match is not None and version not in self.none_match
