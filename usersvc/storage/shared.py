"""What every store shares at run time: ``Listeners`` (of its commits:
``protocol.CommitsAnnounced``), ``WriteHealth``, ``checked_id``; its
promises and errors are ``protocol``'s."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..fields import MAX_INTEGER
from ..schema import Schema
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


class Listeners:
    """The listeners of a store's commits (``protocol.CommitsAnnounced``):
    ``add`` one, ``announce`` a collection's commit to every one, ``close``.
    ``listeners`` is a tuple, replaced whole when one is added or removed,
    so that a write reads it without a lock: with none (the plain core),
    announcing costs a write a call that finds no one to tell (less than
    waking waiters cost every write before: bench/instructions.py)."""

    def __init__(self) -> None:
        self.listeners: tuple[Callable[[str | None], None], ...] = ()
        self.closed = False
        self._lock = threading.Lock()

    def add(self, listener: Callable[[str | None], None]) -> Callable[[], None]:
        """``listener`` told from now on, until the ``stop()`` returned is
        called; told ``None`` at once if the store is closed already."""
        with self._lock:
            if not self.closed:
                self.listeners += (listener,)
                return lambda: self._remove(listener)
        _tell(listener, None)
        return lambda: None

    def _remove(self, listener: Callable[[str | None], None]) -> None:
        with self._lock:
            self.listeners = tuple(told for told in self.listeners if told is not listener)

    def announce(self, plural: str) -> None:
        """A commit changed the collection ``plural``: every listener told."""
        for listener in self.listeners:
            _tell(listener, plural)

    def close(self) -> None:
        """The store closes: every listener told ``None``, once, and forgotten."""
        with self._lock:
            self.closed, told, self.listeners = True, self.listeners, ()
        for listener in told:
            _tell(listener, None)


def _tell(listener: Callable[[str | None], None], plural: str | None) -> None:
    """``listener(plural)``; what it raises logged, so that the others are
    told all the same and the write that announced it is not undone."""
    try:
        listener(plural)
    except Exception:
        _log.exception("a listener of commits failed, told of %s",
                       plural if plural is not None else "the store's close")
